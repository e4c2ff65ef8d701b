"""The times of the directories an ``rm`` moved entries out of, so that renaming the
entries back gives each directory the times it had before the ``rm``.

Renaming an entry out of a directory (and back) changes the directory's mtime and
ctime; a restore that only renamed back would leave the directory with the time of the
restore.  Before the first rename out of a directory its ``(atime, mtime)`` is noted,
and after the last its new ones, in ``parents.json`` beside the entries in the trash.
A restore that renamed every entry back sets a directory's times back to the first
pair only when its mtime is still the second — nothing else changed the directory
since the ``rm``; otherwise the later change wins and the report says so.  (The ctime
is the kernel's own and cannot be set.)
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

__all__ = ["Parents"]

FILE = "parents.json"


class Parents:
    """The times of the directories one trash backup moved entries out of."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.times: dict[str, dict[str, list[int]]] = {}

    # ------------------------------------------------------------ while moving out
    def before(self, path: str) -> None:
        """Note the times of ``path``'s directory, before the first rename out of it."""
        parent = os.path.dirname(path)
        if parent not in self.times:
            with contextlib.suppress(OSError):
                st = os.stat(parent)
                self.times[parent] = {"before": [st.st_atime_ns, st.st_mtime_ns]}

    def save(self) -> None:
        """Note each directory's times after the renames and write them beside the entries
        (a note that cannot be written only costs the directory its old mtime)."""
        for parent, doc in self.times.items():
            with contextlib.suppress(OSError):
                st = os.stat(parent)
                doc["after"] = [st.st_atime_ns, st.st_mtime_ns]
        if self.times and self.folder.is_dir():
            with contextlib.suppress(OSError):
                (self.folder / FILE).write_text(json.dumps(self.times))

    # ------------------------------------------------------------ while renaming back
    @classmethod
    def load(cls, folder: Path) -> Parents:
        """The times saved for the trash entries in ``folder`` (none when unreadable)."""
        parents = cls(folder)
        with contextlib.suppress(OSError, ValueError):
            doc = json.loads((folder / FILE).read_text())
            if isinstance(doc, dict):
                parents.times = {k: v for k, v in doc.items() if isinstance(v, dict)}
        return parents

    def untouched(self) -> list[str]:
        """The directories whose mtime is still the one the ``rm`` left (read before
        anything is renamed back)."""
        out = []
        for parent, doc in self.times.items():
            after = doc.get("after")
            with contextlib.suppress(OSError):
                if isinstance(after, list) and os.stat(parent).st_mtime_ns == after[1]:
                    out.append(parent)
        return out

    def put_back(self, untouched: list[str]) -> list[str]:
        """Give each of ``untouched`` its times from before the ``rm``; the directories
        changed since the ``rm``, whose later times are kept."""
        kept = [p for p in self.times if p not in untouched]
        for parent in untouched:
            before = self.times[parent].get("before")
            if isinstance(before, list) and len(before) == 2:
                _set_times(parent, (int(before[0]), int(before[1])))
        return kept


def _set_times(folder: str, ns: tuple[int, int]) -> None:
    """Set ``folder``'s times, never through a symlink: the directory is opened without
    following one, and only when its path still resolves to itself."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        if os.path.realpath(folder) == os.path.normpath(folder):
            os.utime(fd, ns=ns)
    except OSError:
        pass
    finally:
        os.close(fd)
