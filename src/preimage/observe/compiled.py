"""The compiled loop (``fastloop.c``): built on first use, loaded with ctypes, Python as fallback.

Answering a stopped syscall in Python costs ≈ 45 to 55 µs, most of it reading and
resolving the path; ``fastloop.c`` does the common answers in C — a path under
a tree already recorded, a syscall that will fail without changing anything, a
removed file linked into the store's trash — and hands every other syscall,
unchanged, to :meth:`preimage.observe.supervisor.Loop.answer`, so each first
record is still made by :mod:`.recorder`.

Building: the C source ships in the package; the first supervised call builds it
into the user cache (``CACHE/observe/fastloop-KEY.so``, keyed by the source's
hash, the ABI version and the machine), with the C compiler of the ``ziglang``
wheel (``pip install 'preimage[observe-fast]'``: no system compiler needed), or
else ``$CC``/``cc`` when one is installed.  The build goes to a temporary name
and is renamed into place, so a concurrent first use cannot load half a file.
Without a compiler, when the build fails, or with ``PREIMAGE_OBSERVE_LOOP=python``,
the Python loop runs and :func:`loop_status` says why.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from preimage.interface.cache import cache_dir

SOURCE = Path(__file__).with_name("fastloop.c")
ABI = 1                       # fl_abi() of a library this module can drive
_ENV = "PREIMAGE_OBSERVE_LOOP"   # "python": never use the compiled loop

# fl_serve's answers
TIMEOUT, PUNT, FD, HUP, INTR, ERROR = range(6)


class Result(ctypes.Structure):
    """``struct fl_result``: why fl_serve returned, and the syscall it hands over."""

    _fields_ = [("status", ctypes.c_int), ("fd", ctypes.c_int), ("err", ctypes.c_int),
                ("pad", ctypes.c_int), ("notif", ctypes.c_ubyte * 80)]


# the library of this process, by its path (loaded once; a fork inherits it)
_loaded: dict[Path, tuple[ctypes.CDLL | None, str]] = {}


def _key() -> str:
    digest = hashlib.sha256(SOURCE.read_bytes() + f"abi{ABI}".encode()).hexdigest()[:16]
    return f"{digest}-{os.uname().machine}"


def library_path() -> Path:
    """Where the built loop for this source and machine lives."""
    return cache_dir() / "observe" / f"fastloop-{_key()}.so"


def compilers() -> list[list[str]]:
    """The C compilers to try, best first: the `ziglang` wheel's, then `$CC`, then `cc`."""
    out = []
    if importlib.util.find_spec("ziglang") is not None:
        out.append([sys.executable, "-m", "ziglang", "cc"])
    for name in (os.environ.get("CC"), "cc"):
        found = shutil.which(name) if name else None
        if found:
            out.append([found])
    return out


def _build(target: Path) -> str | None:
    """Build the loop into ``target``; ``None`` when built, else why not."""
    found = compilers()
    if not found:
        return ("no C compiler to build it (pip install 'preimage[observe-fast]' brings one "
                "as a wheel)")
    target.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    for cc in found:
        fd, tmp = tempfile.mkstemp(prefix=".fastloop-", suffix=".so", dir=target.parent)
        os.close(fd)
        try:
            run = subprocess.run([*cc, "-O2", "-shared", "-fPIC", "-o", tmp, str(SOURCE)],
                                 capture_output=True, text=True, timeout=300, check=False)
            if run.returncode == 0:
                os.replace(tmp, target)
                return None
            errors.append(f"{' '.join(cc[-2:])}: {(run.stderr or run.stdout).strip()[-300:]}")
        except (OSError, subprocess.SubprocessError) as exc:
            errors.append(f"{cc[-1]}: {exc}")
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return "building it failed — " + "; ".join(errors)


def library() -> tuple[ctypes.CDLL | None, str]:
    """The loaded loop and ``"compiled"``, or ``None`` and why the Python loop runs.
    Builds it the first time (once per source version and machine)."""
    if os.environ.get(_ENV, "").lower() == "python":
        return None, f"the Python loop ({_ENV}=python)"
    try:
        path = library_path()
    except OSError as exc:
        return None, f"the Python loop (the compiled loop's source is unreadable: {exc})"
    if path in _loaded:
        return _loaded[path]
    why = None
    if not path.exists():
        try:
            why = _build(path)
        except OSError as exc:
            why = f"the cache folder is not writable ({exc})"
    if why is None:
        try:
            lib = ctypes.CDLL(str(path))
            if lib.fl_abi() != ABI:
                raise OSError(f"{path} has another interface version")
            _declare(lib)
            _loaded[path] = (lib, "compiled")
        except (OSError, AttributeError) as exc:
            _loaded[path] = (None, f"the Python loop (the compiled one did not load: {exc})")
    else:
        _loaded[path] = (None, f"the Python loop ({why})")
    return _loaded[path]


def loop_status() -> str:
    """Which loop a supervised call runs, without building it."""
    if os.environ.get(_ENV, "").lower() == "python":
        return f"Python ({_ENV}=python)"
    if not SOURCE.exists():
        return f"Python (the compiled loop's source {SOURCE.name} is not installed)"
    if library_path() in _loaded:
        lib, why = _loaded[library_path()]
        return "compiled" if lib is not None else why
    if library_path().exists():
        return f"compiled ({library_path()})"
    if compilers():
        return "compiled (built on the first supervised call)"
    return "Python (no C compiler: pip install 'preimage[observe-fast]')"


def _declare(lib: ctypes.CDLL) -> None:
    vp, cp = ctypes.c_void_p, ctypes.c_char_p
    lib.fl_new.restype = vp
    lib.fl_new.argtypes = [ctypes.c_int, cp, ctypes.POINTER(cp), ctypes.c_int,
                           ctypes.c_longlong]
    lib.fl_reset.argtypes = [vp, cp, ctypes.POINTER(cp), ctypes.c_int, ctypes.c_longlong]
    lib.fl_free.argtypes = [vp]
    lib.fl_add.argtypes = [vp, ctypes.c_int, cp]
    lib.fl_set_trash.argtypes = [vp, cp, ctypes.c_int, ctypes.c_ulonglong, ctypes.c_longlong]
    lib.fl_take_links.restype = vp
    lib.fl_take_links.argtypes = [vp, ctypes.POINTER(ctypes.c_longlong)]
    lib.fl_answered.restype = ctypes.c_longlong
    lib.fl_answered.argtypes = [vp]
    lib.fl_serve.argtypes = [vp, ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int,
                             ctypes.POINTER(Result)]
