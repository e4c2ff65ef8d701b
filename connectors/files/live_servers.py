"""Folders a running server owns: a file restore never writes into them.

A workspace snapshot can hold a server's live data — a PostgreSQL data directory, a
Dovecot Maildir, a folder with a daemon's PID file.  Writing it back under the running
server corrupts it (the server holds its files open, caches their contents, and writes
them again); that data comes back through the server (``postgresql://``, ``imap://``),
or with the server stopped.  A folder is taken as owned when it holds:

* a PID file (``postmaster.pid``, ``*.pid``) whose process is alive;
* Dovecot's Maildir files (``dovecot-uidlist``, ``dovecot.index*``, ``maildirfolder``)
  — a mail server keeps them while it serves the folder, and whether it serves it now
  cannot be told from the files, so they count whether it runs or not (unsure: protect).
"""

from __future__ import annotations

import os
from pathlib import Path

_MAILDIR_MARKERS = ("dovecot-uidlist", "dovecot.index", "dovecot.list.index", "maildirfolder")


def _pid_alive(path: Path) -> int | None:
    try:
        first = path.read_text(errors="replace").split("\n", 1)[0].strip()
    except OSError:
        return None
    if not first.isdigit() or int(first) <= 1:
        return None
    try:
        os.kill(int(first), 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return int(first)   # alive, someone else's
    return int(first)


def owner(folder: Path, names: list[str], *, any_pid: bool = True) -> str | None:
    """Why ``folder`` (holding files ``names``) belongs to a running server, or ``None``;
    ``any_pid=False`` counts ``postmaster.pid`` only among PID files."""
    for name in names:
        if name == "postmaster.pid" or (any_pid and name.endswith(".pid")):
            pid = _pid_alive(folder / name)
            if pid is not None:
                return f"{name} names process {pid}, which is running"
        if name in _MAILDIR_MARKERS or name.startswith("dovecot.index"):
            return f"it is a mail server's Maildir ({name})"
    return None


def owned_folders(root: Path, limit: int = 20, *, below: bool = True) -> list[tuple[Path, str]]:
    """The folders at or below ``root`` — and above it — that a running server owns;
    ``below=False`` looks at ``root`` itself and above only (a ``?depth=0`` restore sets
    the root's own entry and writes nothing inside it).

    Above ``root`` only a server's own data folder counts (a PostgreSQL data directory,
    a Maildir): a PID file in ``/tmp`` or ``/run`` does not make those folders a server's.
    """
    found: list[tuple[Path, str]] = []
    for above in reversed(root.parents):
        try:
            why = owner(above, os.listdir(above), any_pid=False)
        except OSError:
            continue
        if why and above != Path("/"):
            found.append((above, why))
    if not root.is_dir():
        return found
    if not below:
        try:
            why = owner(root, os.listdir(root))
        except OSError:
            why = None
        return [*found, (root, why)] if why else found
    for here, dirs, files in os.walk(root):
        why = owner(Path(here), files)
        if why:
            found.append((Path(here), why))
            dirs[:] = []   # its whole tree is the server's
        if len(found) >= limit:
            break
    return found
