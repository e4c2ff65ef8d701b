"""Finding a Python environment and reading what is installed in it.

The environment's interpreter is asked only for its install scheme
(``sysconfig`` paths, prefix, version) with a stdlib-only snippet, so an
environment without pip captures like any other.  Installed distributions
are read from their ``*.dist-info`` directories in ``purelib`` and
``platlib``: METADATA, RECORD, INSTALLER, REQUESTED and ``direct_url.json``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path, PurePosixPath

from preimage.interface.errors import InvalidTargetError, TerminalConnectorError

_PROBE = """
import json, sys, sysconfig
paths = sysconfig.get_paths()
print(json.dumps({
    "prefix": sys.prefix,
    "implementation": sys.implementation.name,
    "version": "%d.%d.%d" % sys.version_info[:3],
    "paths": {k: paths[k] for k in ("purelib", "platlib", "scripts", "data", "include")
              if k in paths},
}))
"""


def canonical_name(name: str) -> str:
    """PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def is_bytecode(record_path: str) -> bool:
    """Whether a RECORD path is a bytecode cache (regenerated, never captured)."""
    parts = PurePosixPath(record_path).parts
    return record_path.endswith((".pyc", ".pyo")) and "__pycache__" in parts


@dataclass(frozen=True)
class Environment:
    """A Python environment: its interpreter and install scheme."""

    interpreter: Path
    prefix: Path
    implementation: str
    version: str
    paths: dict[str, str]

    def site_dirs(self) -> list[tuple[str, Path]]:
        """``purelib`` and ``platlib`` (once when they are the same directory)."""
        out: list[tuple[str, Path]] = []
        for kind in ("purelib", "platlib"):
            path = Path(self.paths[kind])
            if all(path != p for _, p in out):
                out.append((kind, path))
        return out

    @property
    def headers_root(self) -> Path:
        """Where pip puts a distribution's headers: ``<prefix>/include/site/pythonX.Y``."""
        major_minor = ".".join(self.version.split(".")[:2])
        return self.prefix / "include" / "site" / f"python{major_minor}"


def find_interpreter(path: str, target: str) -> Path:
    """The interpreter a ``pip://`` path names: a venv/prefix directory or a python file."""
    if not path.startswith("/"):
        raise InvalidTargetError(target, "the path must be absolute: pip:///abs/path/to/venv")
    p = Path(os.path.normpath(path))
    if p.is_dir():
        for candidate in ("bin/python", "bin/python3", "Scripts/python.exe"):
            if os.access(p / candidate, os.X_OK):
                return p / candidate
        raise InvalidTargetError(
            target,
            f"{p} is not a Python environment (no bin/python in it) — name a virtualenv "
            "directory or an interpreter, e.g. pip:///srv/app/.venv",
        )
    if p.is_file() and os.access(p, os.X_OK):
        return p  # the path as given: resolving a venv's python symlink would leave the venv
    raise InvalidTargetError(target, f"{p} does not exist — name a virtualenv or an interpreter")


def probe(interpreter: Path, target: str) -> Environment:
    """Ask ``interpreter`` for its scheme; raise :class:`TerminalConnectorError` if it cannot run."""
    try:
        proc = subprocess.run(
            [str(interpreter), "-I", "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except OSError as exc:
        raise TerminalConnectorError(
            f"cannot run {interpreter}: {exc.strerror} — is the environment intact?", target=target
        ) from exc
    if proc.returncode != 0:
        raise InvalidTargetError(
            target,
            f"{interpreter} is not a working Python interpreter "
            f"({proc.stderr.strip()[-300:] or f'exit {proc.returncode}'})",
        )
    info = json.loads(proc.stdout)
    return Environment(
        interpreter=interpreter,
        prefix=Path(info["prefix"]),
        implementation=info["implementation"],
        version=info["version"],
        paths=info["paths"],
    )


@dataclass
class InstalledDist:
    """One ``*.dist-info`` directory as found on disk."""

    name: str  # normalised
    display_name: str
    version: str
    location_kind: str  # purelib | platlib
    location: Path
    dist_info: str  # directory name
    record: list[tuple[str, str, str]]  # path, hash, size — as the RECORD says
    installer: str | None = None
    requested: bool = False
    direct_url: str | None = None
    entry_points: str = ""
    files: dict[str, Path] = field(default_factory=dict)  # RECORD path → absolute path

    def absolute(self, record_path: str) -> Path:
        """Where a RECORD path lives (RECORD paths are relative to the location)."""
        return Path(os.path.normpath(self.location / record_path))


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def read_record(text: str) -> list[tuple[str, str, str]]:
    """Rows of a RECORD file (path, hash, size), padded to three fields."""
    rows = []
    for row in csv.reader(io.StringIO(text)):
        if row:
            padded = [*row, "", ""][:3]
            rows.append((padded[0], padded[1], padded[2]))
    return rows


def scan(env: Environment) -> tuple[list[InstalledDist], list[str]]:
    """Every installed distribution with a RECORD, and notes on what was left out."""
    dists: list[InstalledDist] = []
    notes: list[str] = []
    for kind, site in env.site_dirs():
        try:
            names = sorted(os.listdir(site))
        except FileNotFoundError:
            continue
        for name in names:
            path = site / name
            if name.endswith((".egg-info", ".egg-link")):
                notes.append(
                    f"{name} in {site} has no RECORD (an egg or `setup.py develop` install): "
                    "not captured, and a restore leaves it alone"
                )
                continue
            if not name.endswith(".dist-info") or not path.is_dir():
                continue
            dist = _read_dist(kind, site, path)
            if dist is None:
                notes.append(f"{name} in {site} has no METADATA or RECORD: not captured")
                continue
            dists.append(dist)
    seen: dict[str, InstalledDist] = {}
    for dist in dists:
        if dist.name in seen:
            notes.append(
                f"{dist.display_name} is installed twice ({seen[dist.name].dist_info} and "
                f"{dist.dist_info}); only the first is captured"
            )
            continue
        seen[dist.name] = dist
    return sorted(seen.values(), key=lambda d: d.name), notes


def _read_dist(kind: str, site: Path, path: Path) -> InstalledDist | None:
    meta_text = _read_text(path / "METADATA")
    record_text = _read_text(path / "RECORD")
    if meta_text is None or record_text is None:
        return None
    meta = HeaderParser().parsestr(meta_text)
    display = meta.get("Name") or path.name.split("-")[0]
    installer = _read_text(path / "INSTALLER")
    dist = InstalledDist(
        name=canonical_name(display),
        display_name=display,
        version=meta.get("Version") or "",
        location_kind=kind,
        location=site,
        dist_info=path.name,
        record=read_record(record_text),
        installer=installer.strip() if installer is not None else None,
        requested=(path / "REQUESTED").exists(),
        direct_url=_read_text(path / "direct_url.json"),
        entry_points=_read_text(path / "entry_points.txt") or "",
    )
    for rel, _, _ in dist.record:
        dist.files[rel] = dist.absolute(rel)
    return dist


def entry_point_scripts(entry_points: str) -> set[str]:
    """Names of the console and GUI scripts an installer generates from entry_points.txt."""
    names: set[str] = set()
    section = ""
    for raw in entry_points.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section in ("console_scripts", "gui_scripts") and "=" in line:
            names.add(line.split("=", 1)[0].strip())
    return names
