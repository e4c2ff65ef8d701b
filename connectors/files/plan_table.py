"""The restore plan's entries, kept in a temporary SQLite table instead of in memory.

A restore compares every captured entry with the live one at its path, decides
what to do with it, writes top-down and sets metadata bottom-up.  Held as
objects, the captured entries, the live ones and the plan's path-keyed lists
took about 1 KB an entry (a gigabyte at a million files).  Here both sides go
into one temporary database (a private file SQLite deletes when it is closed;
its page cache is SQLite's default 2 MiB): a row per entry, its capture order as
the row id, the columns a query needs (path, parent, type, hardlink lead, blob
digest, the action decided) and the rest of the entry packed with
:mod:`marshal`.  A pass reads the rows in pages of :data:`PAGE`, forward or
backward, so the plan holds a page of entries at a time whatever the tree's
size.  What a user must see (skipped entries, conflicts, removals) stays in
the plan's lists.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

from preimage.connectors.files.planned import NO_XATTRS, PlannedEntry
from preimage.interface.errors import RestoreError, UnsafePathError
from preimage.snapshot_schemas.files import FileEntry

PAGE = 2000   # rows read at once by a pass

# What the plan decided for a captured entry, in the ``act`` column.
NONE = 0        # nothing: out of scope, skipped, or kept by ``merge``
UNCHANGED = 1   # the live entry already matches
FIX = 2         # metadata set again
WRITE = 3       # (re)created, then its metadata set



@contextlib.contextmanager
def temporary_space() -> Iterator[None]:
    """Turn SQLite's "database or disk is full" while planning into an error that says
    where the plan's table lives and what to do (nothing of the target is written yet)."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "full" not in str(exc):
            raise
        where = (os.environ.get("SQLITE_TMPDIR") or os.environ.get("TMPDIR")
                 or "/var/tmp (or /tmp)")
        raise RestoreError(
            f"the restore's plan filled the temporary directory {where} (it takes about 250 "
            "bytes an entry of the tree); free space there, or set TMPDIR to a directory on "
            "a larger disk, and run the restore again; nothing was written") from exc


_SCHEMA = """
CREATE TABLE want (i INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, parent TEXT NOT NULL,
                   type TEXT NOT NULL, lead TEXT, digest TEXT, act INTEGER NOT NULL DEFAULT 0,
                   rest BLOB NOT NULL);
CREATE TABLE live (path TEXT PRIMARY KEY, type TEXT NOT NULL, inode INTEGER, digest TEXT,
                   rest BLOB NOT NULL) WITHOUT ROWID;
"""


def parent_of(rel: str) -> str:
    """The path of ``rel``'s directory (``"."`` for the root and its children)."""
    return "." if rel == "." else (rel.rpartition("/")[0] or ".")


def check_path(rel: str) -> None:
    """Raise :class:`UnsafePathError` unless ``rel`` stays inside its root."""
    if rel == ".":
        return
    if not rel or "\x00" in rel:
        raise UnsafePathError(rel, "empty or contains NUL")
    if rel.startswith("/"):
        raise UnsafePathError(rel, "absolute path in a snapshot")
    # split, not parsed: an empty part is a doubled or trailing slash, refused as well
    if any(p in ("..", ".", "") for p in rel.split("/")):
        raise UnsafePathError(rel, "'..' or '.' component in a snapshot path")


def _held(rel: str) -> str:
    """``rel`` as the table holds it: a name that is not UTF-8 (decoded with
    surrogateescape) as the Latin-1 text of its bytes, which SQLite accepts; ASCII as is."""
    return rel if rel.isascii() else rel.encode("utf-8", "surrogateescape").decode("latin-1")


def _path(held: str) -> str:
    """The path :func:`_held` made ``held`` of."""
    return held if held.isascii() else held.encode("latin-1").decode("utf-8", "surrogateescape")


def _pack(e: FileEntry) -> bytes:
    return marshal.dumps((e.size, e.link_target, e.mode, e.uid, e.gid, e.mtime_ns, e.atime_ns,
                          e.xattrs or None, e.rdev, e.extents, e.inode))


def _entry(path: str, type_: str, lead: str | None, digest: str | None,
           rest: bytes) -> PlannedEntry:
    (size, link_target, mode, uid, gid, mtime_ns, atime_ns, xattrs, rdev, extents,
     inode) = marshal.loads(rest)  # noqa: S302 — packed by this process, into its own table
    return PlannedEntry(_path(path), type_, size, digest, link_target, lead and _path(lead), mode,
                        uid, gid, mtime_ns, atime_ns, xattrs or NO_XATTRS, rdev, extents, inode)


# A row whose metadata the writes set (see apply._set_as_written): a file written from
# its own blob.
_SET_AS_WRITTEN = f"act = {WRITE} AND type = 'file' AND lead IS NULL AND digest IS NOT NULL"


class PlanTable:
    """The captured entries of one restore (capture order) and the live ones (by path).

    Closed with :meth:`close` (or as a context manager): the database goes with it.
    """

    def __init__(self) -> None:
        # "": a private database in a temporary file, removed when the connection closes
        self._db = sqlite3.connect("", isolation_level=None)
        self._db.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
                               "PRAGMA temp_store = FILE;" + _SCHEMA)
        self._db.execute("BEGIN")

    def close(self) -> None:
        """Drop the table (its temporary file with it)."""
        self._db.close()

    def __enter__(self) -> PlanTable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ filling
    def add_wanted(self, items: Iterable[FileEntry], root_type: str | None) -> None:
        """Take the snapshot's entries in capture order; raise :class:`UnsafePathError`
        unless they form a tree a restore can write: every path stays inside the root
        and appears once, the root entry has the snapshot's root type, and nothing lies
        beneath an entry that is not a directory (a symlink the restore would make, then
        write through)."""
        rows: list[tuple[int, str, str, str, str | None, str | None, bytes]] = []
        for i, e in enumerate(items):
            check_path(e.path)
            if e.hardlink_to is not None:
                check_path(e.hardlink_to)
            rows.append((i, _held(e.path), _held(parent_of(e.path)), e.type,
                         e.hardlink_to and _held(e.hardlink_to), e.digest, _pack(e)))
            if len(rows) >= PAGE:
                self._insert_wanted(rows)
        self._insert_wanted(rows)
        self._check_tree(root_type)

    def _insert_wanted(self, rows: list[tuple[int, str, str, str, str | None, str | None,
                                              bytes]]) -> None:
        try:
            self._db.executemany("INSERT INTO want (i, path, parent, type, lead, digest, rest) "
                                 "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        except sqlite3.IntegrityError:
            seen: set[str] = set()
            for row in rows:
                path = row[1]
                again = self._db.execute("SELECT 1 FROM want WHERE path = ? AND i < ?",
                                         (path, rows[0][0])).fetchone()
                if again is not None or path in seen:
                    raise UnsafePathError(_path(path), "listed twice in the snapshot") from None
                seen.add(path)
            raise
        rows.clear()

    def _check_tree(self, root_type: str | None) -> None:
        root = self._db.execute("SELECT type FROM want WHERE path = '.'").fetchone()
        if root is not None and root_type is not None and root[0] != root_type:
            raise UnsafePathError(".", f"the root entry is a {root[0]}, but the snapshot's root "
                                       f"is a {root_type}")
        # a parent the snapshot lists must be a directory; the root, when it does not list
        # it, has the snapshot's root type
        bad = self._db.execute(
            "SELECT c.path, c.parent, p.type FROM want c JOIN want p ON p.path = c.parent "
            "WHERE c.path <> '.' AND p.type <> 'dir' ORDER BY c.i LIMIT 1").fetchone()
        if root is None and root_type not in (None, "dir"):
            first = self._db.execute("SELECT path, parent, ? FROM want WHERE parent = '.' AND "
                                     "path <> '.' ORDER BY i LIMIT 1", (root_type,)).fetchone()
            if first is not None and (bad is None or self._order(first[0]) < self._order(bad[0])):
                bad = first
        if bad is not None:
            path, up, kind = bad
            raise UnsafePathError(_path(path), f"it lies beneath {_path(up)}, which the snapshot "
                                               f"makes a {kind}")

    def _order(self, path: str) -> int:
        row = self._db.execute("SELECT i FROM want WHERE path = ?", (path,)).fetchone()
        return int(row[0]) if row is not None else -1

    def add_live(self, entries: Iterable[FileEntry]) -> None:
        """Take the live tree's entries (any order)."""
        rows: list[tuple[str, str, int | None, str | None, bytes]] = []
        for e in entries:
            rows.append((_held(e.path), e.type, e.inode, e.digest, _pack(e)))
            if len(rows) >= PAGE:
                self._db.executemany("INSERT INTO live VALUES (?, ?, ?, ?, ?)", rows)
                rows.clear()
        self._db.executemany("INSERT INTO live VALUES (?, ?, ?, ?, ?)", rows)
        self._db.execute("CREATE INDEX live_inode ON live (inode) WHERE type = 'file'")

    # ------------------------------------------------------------ reading
    def pairs(self) -> Iterator[tuple[int, PlannedEntry, PlannedEntry | None]]:
        """Each captured entry in capture order, with the live entry at its path (or
        None): read a page at a time, so :meth:`set_acts` may run between pages."""
        last = -1
        while True:
            page = self._db.execute(
                "SELECT w.i, w.path, w.type, w.lead, w.digest, w.rest, l.type, l.digest, l.rest "
                "FROM want w LEFT JOIN live l ON l.path = w.path WHERE w.i > ? "
                "ORDER BY w.i LIMIT ?", (last, PAGE)).fetchall()
            if not page:
                return
            for i, path, type_, lead, digest, rest, ltype, ldigest, lrest in page:
                have = None if ltype is None else _entry(path, ltype, None, ldigest, lrest)
                yield i, _entry(path, type_, lead, digest, rest), have
            last = page[-1][0]

    def entries(self, acts: tuple[int, ...], *, reverse: bool = False) -> Iterator[PlannedEntry]:
        """The captured entries whose action is one of ``acts``, in capture order (or
        its reverse), a page at a time."""
        return (e for e, _act in self.entries_with_act(acts, reverse=reverse))

    def _wanted_pages(self, columns: str, acts: tuple[int, ...], *, reverse: bool = False,
                      also: str = "TRUE") -> Iterator[tuple[Any, ...]]:
        """``(i, *columns)`` of the captured entries whose action is one of ``acts`` (and
        that meet the condition ``also``), in capture order (or its reverse), read a page
        at a time."""
        marks = ", ".join("?" * len(acts))
        cmp, order = ("<", "DESC") if reverse else (">", "")
        last = 1 << 62 if reverse else -1
        while True:
            page = self._db.execute(
                f"SELECT i, {columns} FROM want WHERE act IN ({marks}) AND ({also}) AND "
                f"i {cmp} ? ORDER BY i {order} LIMIT ?", (*acts, last, PAGE)).fetchall()
            if not page:
                return
            yield from page
            last = page[-1][0]

    def entries_with_act(self, acts: tuple[int, ...], *,
                         reverse: bool = False) -> Iterator[tuple[PlannedEntry, int]]:
        """As :meth:`entries`, each with its action."""
        for _i, path, type_, lead, digest, rest, act in self._wanted_pages(
                "path, type, lead, digest, rest, act", acts, reverse=reverse):
            yield _entry(path, type_, lead, digest, rest), act

    def entries_to_set(self) -> Iterator[tuple[PlannedEntry, int]]:
        """As :meth:`entries_with_act` of FIX and WRITE, in reverse capture order, but for
        the regular files written from a blob of their own, whose metadata was set through
        the descriptor they were written by: the metadata pass, with no row read or entry
        made for most of a tree's files."""
        for _i, path, type_, lead, digest, rest, act in self._wanted_pages(
                "path, type, lead, digest, rest, act", (FIX, WRITE), reverse=True,
                also=f"NOT ({_SET_AS_WRITTEN})"):
            yield _entry(path, type_, lead, digest, rest), act

    def kinds_with_act(self, acts: tuple[int, ...]) -> Iterator[tuple[str, str, int]]:
        """``(path, type, act)`` of the captured entries whose action is one of ``acts``,
        in capture order (what a report needs, no entry decoded)."""
        for _i, path, type_, act in self._wanted_pages("path, type, act", acts):
            yield _path(path), type_, act

    def paths(self, act: int) -> Iterator[str]:
        """The paths of the captured entries whose action is ``act``, in capture order."""
        return (_path(path) for _i, path in self._wanted_pages("path", (act,)))

    def act_of(self, path: str) -> int | None:
        """The action decided for the captured entry at ``path``; None when not captured."""
        row = self._db.execute("SELECT act FROM want WHERE path = ?", (_held(path),)).fetchone()
        return None if row is None else int(row[0])

    def group_of(self, path: str) -> str | None:
        """The hardlink group (its first path) the captured entry at ``path`` was in."""
        row = self._db.execute("SELECT coalesce(lead, path) FROM want WHERE path = ?",
                               (_held(path),)).fetchone()
        return None if row is None else _path(row[0])

    def live_inode(self, path: str) -> tuple[bool, int | None]:
        """Whether the live tree has ``path``, and its inode."""
        row = self._db.execute("SELECT inode FROM live WHERE path = ?", (_held(path),)).fetchone()
        return (False, None) if row is None else (True, row[0])

    def has_live(self, path: str) -> bool:
        """Whether the live tree has ``path``."""
        return self.live_inode(path)[0]

    def live_only(self) -> list[str]:
        """The live paths the snapshot does not have."""
        return [_path(p) for (p,) in self._db.execute(
            "SELECT path FROM live WHERE path NOT IN (SELECT path FROM want)")]

    def shared_inodes(self) -> dict[int, list[str]]:
        """The live files sharing an inode with another live file, by inode."""
        mates: dict[int, list[str]] = {}
        for inode, path in self._db.execute(
                "SELECT inode, path FROM live WHERE type = 'file' AND inode IN (SELECT inode "
                "FROM live WHERE type = 'file' AND inode IS NOT NULL GROUP BY inode "
                "HAVING count(*) > 1) ORDER BY inode, path"):
            mates.setdefault(inode, []).append(_path(path))
        return mates

    def written_digests(self) -> Iterator[tuple[str, str]]:
        """(digest, path) of each file the plan writes from a blob, in capture order."""
        last = -1
        while True:
            page = self._db.execute(
                "SELECT i, digest, path FROM want WHERE act = ? AND type = 'file' AND digest "
                "IS NOT NULL AND lead IS NULL AND i > ? ORDER BY i LIMIT ?",
                (WRITE, last, PAGE)).fetchall()
            if not page:
                return
            yield from ((digest, _path(path)) for _i, digest, path in page)
            last = page[-1][0]

    def repeated_digests(self, limit: int = 100_000) -> dict[str, int]:
        """How many files the plan writes from each blob it writes more than once (at
        most ``limit`` blobs, the most used first)."""
        return dict(self._db.execute(
            "SELECT digest, count(*) AS n FROM want WHERE act = ? AND type = 'file' AND digest "
            "IS NOT NULL AND lead IS NULL GROUP BY digest HAVING n > 1 ORDER BY n DESC "
            "LIMIT ?", (WRITE, limit)))

    def first_written_with(self, digest: str) -> str | None:
        """The first path the plan writes from blob ``digest``."""
        row = self._db.execute("SELECT path FROM want WHERE act = ? AND digest = ? ORDER BY i "
                               "LIMIT 1", (WRITE, digest)).fetchone()
        return None if row is None else _path(row[0])

    def parents_to_fix(self, removed: Iterable[str]) -> list[tuple[int, str]]:
        """(row, path) of each captured directory not yet written or fixed whose entries
        are written, or removed (``removed``): its mtime moves."""
        self._db.execute("CREATE TEMP TABLE IF NOT EXISTS moved (path TEXT PRIMARY KEY) "
                         "WITHOUT ROWID")
        self._db.execute("DELETE FROM moved")
        self._db.executemany("INSERT OR IGNORE INTO moved VALUES (?)",
                             ((_held(parent_of(p)),) for p in removed if p != "."))
        self._db.execute("INSERT OR IGNORE INTO moved SELECT DISTINCT parent FROM want "
                         "WHERE act = ? AND path <> '.'", (WRITE,))
        return [(i, _path(p)) for i, p in self._db.execute(
            "SELECT i, path FROM want WHERE type = 'dir' AND act IN (?, ?) AND path IN "
            "(SELECT path FROM moved) ORDER BY i", (NONE, UNCHANGED))]

    # ------------------------------------------------------------ deciding
    def live_empty(self) -> bool:
        """Whether the live tree has nothing (the target is not there)."""
        return self._db.execute("SELECT 1 FROM live LIMIT 1").fetchone() is None

    def write_all(self) -> list[str]:
        """Decide WRITE for every captured entry but a file captured without its content
        (nor a hard link to one that has it): those are returned, in capture order."""
        bare = "type = 'file' AND digest IS NULL AND lead IS NULL"
        self._db.execute(f"UPDATE want SET act = ? WHERE NOT ({bare})", (WRITE,))
        return [_path(p) for (p,) in self._db.execute(
            f"SELECT path FROM want WHERE {bare} ORDER BY i")]

    def set_acts(self, acts: Iterable[tuple[int, int]]) -> None:
        """Record ``(action, row)`` pairs."""
        self._db.executemany("UPDATE want SET act = ? WHERE i = ?", acts)


__all__ = ["FIX", "NONE", "PAGE", "UNCHANGED", "WRITE", "PlanTable", "check_path", "parent_of"]
