"""What ``install`` found before it wrote, so ``uninstall`` gives exactly that back.

``install`` rewrites a harness's settings file as JSON of its own formatting (and drops
the comments Gemini CLI allows), and may create the folders it lives in — where the
harness then puts files of its own (OpenCode installs its plugin package into every
config folder it reads: ``node_modules/``, ``package.json``, a lock file, and a
``.gitignore`` hiding them; Kilo Code CLI, its fork, does the same).  The first
``install`` of a file records, in preimage's config directory (never in the project), the
file's text as it was and the folders it created.  ``uninstall`` then writes the old text
back byte for byte when what remains after taking preimage's hooks out means the same,
and removes from the folders it created what the harness put there because of them —
and nothing it does not know.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = ["HARNESS_LEFTOVERS", "InstallRecord", "created_folders", "forget", "keep", "read",
           "remove_leftovers"]

# What a harness writes into a config folder of its own accord (OpenCode and Kilo Code CLI:
# their plugin package, its lock files and the .gitignore that hides them).
HARNESS_LEFTOVERS = ("node_modules", "package.json", "package-lock.json", "bun.lock",
                     "bun.lockb", "pnpm-lock.yaml", "yarn.lock", ".gitignore")
# The lines OpenCode (and Kilo Code CLI, with a few more) writes into that .gitignore: one
# with other lines is the user's.
_HARNESS_GITIGNORE = {"node_modules", "package.json", "package-lock.json", "bun.lock",
                      ".gitignore", "pnpm-lock.yaml", "yarn.lock", "agent-manager.json"}
# The plugin packages they install there.
_PLUGIN_PACKAGES = {"@opencode-ai/plugin", "@kilocode/plugin"}


@dataclass(frozen=True)
class InstallRecord:
    """A settings file before preimage's first install touched it."""

    path: Path
    before: str | None            # its text then (``None``: it did not exist)
    created: tuple[Path, ...]     # the folders that install created for it, outermost first


def _record_path(path: Path) -> Path:
    from preimage.layer.config import config_dir

    key = hashlib.sha256(str(path.absolute()).encode()).hexdigest()[:32]
    return config_dir() / "installed" / f"{key}.json"


def created_folders(path: Path) -> tuple[Path, ...]:
    """The folders above ``path`` that do not exist yet, outermost first."""
    missing: list[Path] = []
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return tuple(reversed(missing))


def keep(path: Path, before: str | None, created: tuple[Path, ...]) -> None:
    """Record ``path`` as it was before the first install (a later install keeps the first
    record).  A record that cannot be written is skipped: uninstall then re-formats."""
    record = _record_path(path)
    if record.exists():
        return
    with contextlib.suppress(OSError):
        record.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = record.with_name(f".{record.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"path": str(path.absolute()), "before": before,
                                   "created": [str(f) for f in created]}))
        os.replace(tmp, record)


def read(path: Path) -> InstallRecord | None:
    """The record of ``path``'s first install (``None`` when there is none)."""
    try:
        doc = json.loads(_record_path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("path") != str(path.absolute()):
        return None
    before = doc.get("before")
    return InstallRecord(path, before if isinstance(before, str) else None,
                         tuple(Path(f) for f in doc.get("created") or [] if isinstance(f, str)))


def forget(path: Path) -> None:
    """Drop the record of ``path`` (uninstall is done with it)."""
    _record_path(path).unlink(missing_ok=True)


def remove_leftovers(record: InstallRecord) -> list[Path]:
    """Remove, from each folder install created, what the harness put there because it
    existed (:data:`HARNESS_LEFTOVERS`, a ``package.json`` only when it names nothing but
    the harness's own package, a ``.gitignore`` only with the harness's own lines), then
    each folder left empty, innermost first.  The paths removed."""
    removed: list[Path] = []
    for folder in reversed(record.created):
        if not folder.is_dir() or folder.is_symlink():
            continue
        for name in HARNESS_LEFTOVERS:
            entry = folder / name
            if not os.path.lexists(entry) or not _harness_made(entry):
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed.append(entry)
        with contextlib.suppress(OSError):
            folder.rmdir()        # only when empty: anything else there is the user's
            removed.append(folder)
    return removed


def _harness_made(entry: Path) -> bool:
    """Whether ``entry`` is as the harness writes it (never a file the user edited)."""
    if entry.name == "package.json":
        try:
            doc = json.loads(entry.read_text())
        except (OSError, ValueError):
            return False
        deps = doc.get("dependencies") if isinstance(doc, dict) else None
        return (isinstance(doc, dict) and set(doc) <= {"dependencies", "private"}
                and isinstance(deps, dict) and set(deps) <= _PLUGIN_PACKAGES)
    if entry.name == ".gitignore":
        try:
            lines = {line.strip() for line in entry.read_text().splitlines() if line.strip()}
        except OSError:
            return False
        return lines <= _HARNESS_GITIGNORE
    return True
