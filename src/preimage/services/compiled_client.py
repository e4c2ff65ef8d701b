"""The compiled hook client (``hook_client.c``): built by ``install``, run by the harness.

A command hook starts a process before and after every tool call.  The Python client
(:mod:`preimage.services.hook_client`) pays an interpreter's start for it; the compiled
client does the same on its fast paths — a post-call event with nothing to do, a call
the decision service answers — in a process that starts in about a millisecond, and
runs the Python client with the same payload for everything else (see the C source's
header).  ``install --user`` builds it into the user cache
(``CACHE/hook/client-KEY``, keyed by the source's hash, this installation and the
machine) with the C compiler of the ``ziglang`` wheel or ``$CC``/``cc``, and writes a
hook command that runs it when it is there and the Python client when it is not::

    [ -x CLIENT ] && exec CLIENT PREIMAGE hook HARNESS …; exec PREIMAGE hook HARNESS …

So a client deleted from the cache costs time, never protection.  Without a compiler,
when the build fails, or with ``PREIMAGE_HOOK_CLIENT=python``, the hook runs the
Python client and ``install --list`` says which client a hook runs.  A project-scope install (a file a
team commits) never names it: the path is one machine's.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from preimage.interface.cache import cache_dir
from preimage.observe.compiled import compilers
from preimage.services import wire

SOURCE = Path(__file__).with_name("hook_client.c")
_ENV = "PREIMAGE_HOOK_CLIENT"   # "python": install writes the Python client's command only


def _c_string(raw: bytes) -> str:
    """``raw`` as a C string literal (octal escapes: nothing in a path can break out)."""
    return '"' + "".join(f"\\{b:03o}" for b in raw) + '"'


def _config() -> str:
    """The build's settings: what :func:`preimage.services.wire.installation` is made of,
    known now (the interpreter, the package), and the file whose mtime completes it."""
    from preimage.services import lean_json as json

    here = os.path.dirname(os.path.dirname(os.path.realpath(wire.__file__)))
    python = os.path.realpath(sys.executable)
    lines = [
        f"#define PI_PYTHON_JSON {_c_string(json.dumps(python)[1:-1].encode())}",
        f"#define PI_PACKAGE_JSON {_c_string(json.dumps(here)[1:-1].encode())}",
        f"#define PI_STAMP_PATH {_c_string(os.fsencode(os.path.join(here, '__init__.py')))}",
    ]
    return "\n".join(lines) + "\n"


def client_path() -> Path:
    """Where the client for this source, installation and machine lives."""
    digest = hashlib.sha256(SOURCE.read_bytes() + _config().encode()).hexdigest()[:16]
    return cache_dir() / "hook" / f"client-{digest}-{os.uname().machine}"


def _build(target: Path) -> str | None:
    """Build the client into ``target``; ``None`` when built, else why not."""
    # The machine's own compiler first: it links against the system's libc at once, where
    # the ziglang wheel's builds its libc start files on first use (~50 s, measured cold).
    found = sorted(compilers(), key=lambda cc: "ziglang" in cc)
    if not found:
        return "no C compiler to build it (pip install 'preimage[observe-fast]' brings one)"
    target.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    with tempfile.TemporaryDirectory(prefix=".hook-client-", dir=target.parent) as work:
        config = Path(work) / "config.h"
        config.write_text(_config())
        built = Path(work) / "client"
        for cc in found:
            try:
                run = subprocess.run([*cc, "-O2", "-include", str(config), "-o", str(built),
                                      str(SOURCE)],
                                     capture_output=True, text=True, timeout=300, check=False)
            except (OSError, subprocess.SubprocessError) as exc:
                errors.append(f"{cc[-1]}: {exc}")
                continue
            if run.returncode == 0:
                os.chmod(built, 0o700)   # the user's own hooks run it
                os.replace(built, target)   # a concurrent install never runs half a file
                return None
            errors.append(f"{' '.join(cc[-2:])}: {(run.stderr or run.stdout).strip()[-300:]}")
    return "building it failed — " + "; ".join(errors)


def planned_client() -> Path | None:
    """The client :func:`ensure_client` would give, without building it (for ``--dry-run``)."""
    if os.environ.get(_ENV, "").lower() == "python":
        return None
    try:
        path = client_path()
    except OSError:
        return None
    return path if os.access(path, os.X_OK) or compilers() else None


def ensure_client() -> tuple[Path | None, str]:
    """The built client and ``"compiled"``, or ``None`` and why the Python client runs.
    Builds it the first time (once per source version, installation and machine)."""
    if os.environ.get(_ENV, "").lower() == "python":
        return None, f"the Python client ({_ENV}=python)"
    try:
        path = client_path()
    except OSError as exc:
        return None, f"the Python client (the compiled client's source is unreadable: {exc})"
    if os.access(path, os.X_OK):
        return path, "compiled"
    try:
        why = _build(path)
    except OSError as exc:
        why = f"the cache folder is not writable ({exc})"
    if why is not None:
        return None, f"the Python client ({why})"
    return path, "compiled"

