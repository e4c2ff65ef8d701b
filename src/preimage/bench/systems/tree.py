"""Seeding files from a scenario's ``setup.files`` and building local wheels.

``setup.files`` is a list of entries; each names a ``path`` and one of:

* ``text`` (UTF-8) or ``size`` (that many deterministic pseudo-random bytes) — a file;
* ``dir: true`` — a directory (also made for every parent);
* ``symlink: TARGET`` — a symlink, ``TARGET`` verbatim;
* ``hardlink: PATH`` — a hard link to an entry made earlier;
* ``fifo: true`` — a named pipe;

plus optional ``mode`` (octal digits as a string, ``"600"``, ``"4755"``),
``mtime`` (ISO 8601 with up to nanoseconds, UTC when no zone is given) and
``xattrs`` (``user.*`` name → text; skipped where the filesystem refuses).
Times are applied last, after any ``setup.run`` script, so that creating the
children does not move a directory's mtime afterwards.

``setup.wheels`` lists packages ``{name, version, requires}`` built as
pure-Python wheels into ``{wheels}`` so a scenario can ``pip install
--no-index --find-links {wheels}`` with no network.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import random
import re
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from preimage.interface.errors import UsageError


class FileSpec(BaseModel):
    """One entry of ``setup.files``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    text: str | None = None
    size: int | None = None
    dir: bool = False
    symlink: str | None = None
    hardlink: str | None = None
    fifo: bool = False
    mode: str | int | None = None
    mtime: str | None = None
    xattrs: dict[str, str] = {}


def _mode(value: str | int | None) -> int | None:
    if value is None or isinstance(value, int):
        return value
    return int(value.removeprefix("0o"), 8)


_FRACTION = re.compile(r"\.(\d+)")


def mtime_ns(value: str) -> int:
    """Nanoseconds since the epoch of an ISO 8601 time (fraction up to 9 digits)."""
    text = value.strip().replace("Z", "+00:00")
    frac_ns = 0
    match = _FRACTION.search(text)
    if match:
        frac_ns = int((match.group(1) + "000000000")[:9])
        text = text[: match.start()] + text[match.end():]
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp()) * 1_000_000_000 + frac_ns


def _bytes(path: str, size: int) -> bytes:
    rng = random.Random(hashlib.sha256(path.encode()).digest())
    return rng.randbytes(size)


def make_entries(raw: list[Any]) -> list[tuple[Path, FileSpec]]:
    """Create every entry of ``setup.files``; return them for :func:`apply_times`."""
    made: list[tuple[Path, FileSpec]] = []
    for item in raw:
        try:
            spec = FileSpec.model_validate(item)
        except ValidationError as exc:
            raise UsageError(f"setup.files entry {item!r}: {exc.errors()[0]['msg']}") from exc
        path = Path(spec.path)
        if not path.is_absolute():
            raise UsageError(f"setup.files path {spec.path!r} must be absolute (use {{home}}/…)")
        path.parent.mkdir(parents=True, exist_ok=True)
        if spec.dir:
            path.mkdir(exist_ok=True)
        elif spec.symlink is not None:
            path.symlink_to(spec.symlink)
        elif spec.hardlink is not None:
            os.link(spec.hardlink, path)
        elif spec.fifo:
            os.mkfifo(path)
        elif spec.text is not None:
            path.write_text(spec.text, encoding="utf-8")
        elif spec.size is not None:
            path.write_bytes(_bytes(spec.path, spec.size))
        else:
            raise UsageError(
                f"setup.files entry {spec.path!r}: give text, size, dir, symlink, hardlink or fifo"
            )
        mode = _mode(spec.mode)
        if mode is not None and spec.symlink is None:
            os.chmod(path, mode)
        for name, value in spec.xattrs.items():
            with contextlib.suppress(OSError):
                os.setxattr(path, name, value.encode(), follow_symlinks=False)
        made.append((path, spec))
    return made


def apply_times(entries: list[tuple[Path, FileSpec]]) -> None:
    """Set the declared mtimes (and atimes, equal), deepest paths first."""
    timed = [(p, s) for p, s in entries if s.mtime]
    for path, spec in sorted(timed, key=lambda e: -len(e[0].parts)):
        assert spec.mtime is not None
        ns = mtime_ns(spec.mtime)
        os.utime(path, ns=(ns, ns), follow_symlinks=False)


# ------------------------------------------------------------------ wheels
class WheelSpec(BaseModel):
    """A pure-Python package to build as a wheel."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    version: str
    requires: list[str] = []


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(spec: WheelSpec, out: Path) -> Path:
    """Write ``<name>-<version>-py3-none-any.whl`` into ``out``."""
    module = spec.name.replace("-", "_").lower()
    dist = f"{module}-{spec.version}.dist-info"
    metadata = "Metadata-Version: 2.1\n" f"Name: {spec.name}\n" f"Version: {spec.version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in spec.requires)
    files = {
        f"{module}/__init__.py": f'__version__ = "{spec.version}"\n'.encode(),
        f"{dist}/METADATA": metadata.encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: preimage-bench\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/top_level.txt": f"{module}\n".encode(),
    }
    record = [_record_line(n, d) for n, d in files.items()] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{module}-{spec.version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    return path


def build_wheels(raw: list[Any], out: Path) -> list[Path]:
    """Build every wheel of ``setup.wheels`` into ``out``."""
    return [build_wheel(WheelSpec.model_validate(item), out) for item in raw]
