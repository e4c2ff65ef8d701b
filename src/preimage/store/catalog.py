"""The local catalog: one SQLite database beside the blobs.

WAL mode with a generous busy timeout lets many processes capture at once;
each write is one short transaction.  Leases and store-wide locks are
``flock`` locks on files in ``locks/`` next to the database, so they end by
themselves when their process dies — that is how an ``open`` backup whose
capture was killed is told from one still running.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from preimage.interface import crash as _crash
from preimage.interface.errors import (
    BackupNotFoundError,
    StoreBusyError,
    StoreUnavailableError,
    UsageError,
)
from preimage.store.backend import (
    BackupRow,
    Catalog,
    RestoreEntry,
    SnapshotRow,
    TrashEntry,
    backup_conditions,
)
from preimage.store.pins import locked_file, pinned_file, unpinned_file
from preimage.store.wal import use_wal

__all__ = ["BackupRow", "SnapshotRow", "SqliteCatalog"]

# Format 1 (the first release) had backups, snapshots, restores, stat_cache and
# trash.  Format 2 adds meta (the format version and settings), refs (every
# blob each snapshot references), blob_sound (the local store's verification
# record), and two columns of backups.  Format 3 adds links (the blobs a chunk of
# a snapshot document names: referenced through the chunk, recorded once).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS backups (
    id          TEXT PRIMARY KEY,
    created_at  REAL NOT NULL,
    label       TEXT NOT NULL DEFAULT '',
    kind        TEXT NOT NULL DEFAULT 'capture',
    tier        TEXT NOT NULL DEFAULT 'manual',
    tool_call   TEXT,
    session     TEXT,
    parent_id   TEXT,
    status      TEXT NOT NULL DEFAULT 'open',
    stored_bytes  INTEGER NOT NULL DEFAULT 0,
    logical_bytes INTEGER NOT NULL DEFAULT 0,
    seconds     REAL NOT NULL DEFAULT 0,
    expected_snapshots INTEGER,
    finished_at REAL
);
CREATE TABLE IF NOT EXISTS snapshots (
    backup_id   TEXT NOT NULL REFERENCES backups(id),
    idx         INTEGER NOT NULL,
    connector   TEXT NOT NULL,
    target      TEXT NOT NULL,
    digest      TEXT NOT NULL,
    items       INTEGER NOT NULL,
    PRIMARY KEY (backup_id, idx)
);
CREATE TABLE IF NOT EXISTS refs (
    backup_id   TEXT NOT NULL,
    idx         INTEGER NOT NULL,
    digest      TEXT NOT NULL,
    PRIMARY KEY (backup_id, idx, digest)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS refs_by_digest ON refs(digest);
CREATE TABLE IF NOT EXISTS links (
    parent      TEXT NOT NULL,
    child       TEXT NOT NULL,
    PRIMARY KEY (parent, child)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS restores (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    backup_id     TEXT NOT NULL,
    only_filter   TEXT NOT NULL DEFAULT '',
    undo_backup   TEXT,
    started_at    REAL NOT NULL,
    finished_at   REAL,
    status        TEXT NOT NULL DEFAULT 'running'
);
CREATE TABLE IF NOT EXISTS stat_cache (
    dev INTEGER, ino INTEGER, size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER,
    digest TEXT NOT NULL,
    PRIMARY KEY (dev, ino)
);
CREATE TABLE IF NOT EXISTS blob_sound (
    digest TEXT PRIMARY KEY, size INTEGER, ino INTEGER, mtime_ns INTEGER, ctime_ns INTEGER
);
CREATE TABLE IF NOT EXISTS blob_raw_size (digest TEXT PRIMARY KEY, raw INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS trash (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    backup_id   TEXT NOT NULL,
    original    TEXT NOT NULL,
    stored_at   TEXT NOT NULL
);
"""

# Indexes no format depends on (either release reads a catalog with or without them),
# made after the tables and their migrations, and added on open to a catalog an earlier
# release made (see SqliteCatalog._ensure_indexes).
_INDEXES = {
    # the newest complete snapshot of a target (every capture's first read) walked every
    # snapshot of that target and sorted them: 1.5 ms at 1,281 of one target, growing
    # with the history; 9 µs with the index
    "snapshots_by_target_newest": "snapshots(target, backup_id)",
    # a call's post-call backup and trash moves (every undo, every restore of a call)
    "backups_by_parent": "backups(parent_id)",
    # a store with a size cap sums what was stored since its last measure at every capture
    "backups_by_finish": "backups(finished_at)",
}


def _add_indexes(db: sqlite3.Connection) -> None:
    for name, on in _INDEXES.items():
        db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {on}")
    db.execute("DROP INDEX IF EXISTS snapshots_by_target")   # covered by the first


_BACKUP_COLUMNS = (
    "id, created_at, label, kind, tier, tool_call, session, parent_id, status, stored_bytes,"
    " logical_bytes, seconds, expected_snapshots, finished_at"
)
_ID_CHARS = re.compile(r"^[0-9a-z]+$")


def stat_cache_rows(db: sqlite3.Connection, dev: int, inodes: Sequence[int]
                    ) -> dict[int, tuple[int, int, int, str]]:
    """Inode → ``(size, mtime_ns, ctime_ns, digest)`` of each of ``inodes`` a ``stat_cache``
    table holds, in one query per 500 (a directory's files, before they are read)."""
    found: dict[int, tuple[int, int, int, str]] = {}
    for start in range(0, len(inodes), 500):
        part = list(inodes[start:start + 500])
        marks = ",".join("?" * len(part))
        for ino, size, mtime_ns, ctime_ns, digest in db.execute(
                "SELECT ino, size, mtime_ns, ctime_ns, digest FROM stat_cache"
                f" WHERE dev=? AND ino IN ({marks})", (dev, *part)):
            found[int(ino)] = (int(size), int(mtime_ns), int(ctime_ns), str(digest))
    return found


class SqliteCatalog(Catalog):
    """The catalog database at ``path``; leases live in ``path.parent / "locks"``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.locks = path.parent / "locks"
        try:
            self._db = sqlite3.connect(path, timeout=60, isolation_level=None)
            self._db.execute("PRAGMA busy_timeout=60000")
            use_wal(self._db)
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._version = self._read_version()
            if self._version == 0:
                with self._tx() as db:
                    for stmt in _SCHEMA.split(";"):
                        if stmt.strip():
                            db.execute(stmt)
                    _add_indexes(db)
                    db.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?)", (str(_NEW),))
                self._version = self._read_version()
            else:
                self._ensure_indexes()
        except sqlite3.DatabaseError as exc:
            raise StoreUnavailableError(
                str(path), f"the catalog is not a readable SQLite database ({exc})"
            ) from exc
        with contextlib.suppress(OSError):
            path.chmod(0o600)
        self.locks.mkdir(mode=0o700, exist_ok=True)
        self._held: dict[str, int] = {}

    def _ensure_indexes(self) -> None:
        """Add an index a catalog made by an earlier release lacks (an index is no part of
        the format: any release reads the tables with or without it).  A catalog that
        cannot be written to now gets it on a later open."""
        have = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}
        if set(_INDEXES) <= have or not {"snapshots", "backups"} <= have:
            return
        columns = {r[1] for r in self._db.execute("PRAGMA table_info(backups)")}
        if "finished_at" not in columns:
            return   # a format the store's upgrade migrates first (migrate_schema adds them)
        with contextlib.suppress(StoreUnavailableError, sqlite3.Error), self._tx() as db:
            _add_indexes(db)

    def _read_version(self) -> int:
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "backups" not in tables:
            return 0
        if "meta" not in tables:
            return 1
        row = self._db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
        return int(row[0]) if row else 1

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreUnavailableError(str(self.path), f"catalog: {exc}") from exc
        try:
            yield self._db
            _crash.point("catalog")
        except sqlite3.OperationalError as exc:   # read-only, disk full, I/O error
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            raise StoreUnavailableError(str(self.path), f"catalog: {exc}") from exc
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        try:
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._db.execute("ROLLBACK")
            raise StoreUnavailableError(str(self.path), f"catalog: {exc}") from exc

    # ------------------------------------------------------------ format
    def format_version(self) -> int:
        """0 for a new, empty database; 1 for the first release's; else as recorded."""
        self._version = self._read_version()
        return self._version

    def set_format_version(self, version: int) -> None:
        """Record the store format (creating the meta table when upgrading from 1)."""
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('format', ?)", (str(version),))
        self._version = version

    def migrate_schema(self, to_version: int) -> None:
        """Bring the tables to ``to_version`` (idempotent, one transaction)."""
        if to_version not in (2, 3, 4):
            raise ValueError(f"no schema migration to format {to_version}")
        with self._tx() as db:
            cols = {r[1] for r in db.execute("PRAGMA table_info(backups)")}
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    db.execute(stmt)
            if "expected_snapshots" not in cols:
                db.execute("ALTER TABLE backups ADD COLUMN expected_snapshots INTEGER")
            if "finished_at" not in cols:
                db.execute("ALTER TABLE backups ADD COLUMN finished_at REAL")
            _add_indexes(db)

    def setting(self, key: str) -> str | None:
        """A value stored under ``setting:<key>``."""
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (f"setting:{key}",)).fetchone()
        return str(row[0]) if row else None

    def set_setting(self, key: str, value: str | None) -> None:
        """Store or remove a setting."""
        with self._tx() as db:
            if value is None:
                db.execute("DELETE FROM meta WHERE key=?", (f"setting:{key}",))
            else:
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (f"setting:{key}", value))

    # ------------------------------------------------------------ backups
    def add_backup(
        self,
        backup_id: str,
        *,
        label: str = "",
        kind: str = "capture",
        tier: str = "manual",
        tool_call: dict[str, Any] | None = None,
        session: str | None = None,
        parent_id: str | None = None,
        created_at: float | None = None,
    ) -> None:
        """Open a new backup (status ``open`` until :meth:`finish_backup`)."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO backups (id, created_at, label, kind, tier, tool_call, session,"
                " parent_id) VALUES (?,?,?,?,?,?,?,?)",
                (
                    backup_id,
                    time.time() if created_at is None else created_at,
                    label,
                    kind,
                    tier,
                    json.dumps(tool_call) if tool_call is not None else None,
                    session,
                    parent_id,
                ),
            )

    def add_snapshot(self, row: SnapshotRow, refs: Iterable[str] = ()) -> None:
        """Record one captured snapshot and its references in one transaction."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO snapshots VALUES (?,?,?,?,?,?)",
                (row.backup_id, row.idx, row.connector, row.target, row.digest, row.items),
            )
            db.executemany(
                "INSERT OR IGNORE INTO refs VALUES (?,?,?)",
                ((row.backup_id, row.idx, d) for d in {row.digest, *refs}),
            )

    def add_refs(self, backup_id: str, idx: int, refs: Iterable[str]) -> None:
        """Add references to a snapshot."""
        with self._tx() as db:
            db.executemany(
                "INSERT OR IGNORE INTO refs VALUES (?,?,?)", ((backup_id, idx, d) for d in refs)
            )

    def finish_backup(
        self, backup_id: str, *, status: str, stored_bytes: int, logical_bytes: int,
        seconds: float, snapshots: int | None = None,
    ) -> None:
        """Close a backup with its final status and sizes."""
        with self._tx() as db:
            db.execute(
                "UPDATE backups SET status=?, stored_bytes=?, logical_bytes=?, seconds=?,"
                " expected_snapshots=?, finished_at=? WHERE id=?",
                (status, stored_bytes, logical_bytes, seconds, snapshots, time.time(), backup_id),
            )

    def set_status(self, backup_id: str, status: str, *, only_if: str | None = None) -> bool:
        """Change a backup's status, optionally only from ``only_if``."""
        with self._tx() as db:
            if only_if is None:
                cur = db.execute("UPDATE backups SET status=? WHERE id=?", (status, backup_id))
            else:
                cur = db.execute(
                    "UPDATE backups SET status=? WHERE id=? AND status=?",
                    (status, backup_id, only_if),
                )
            return cur.rowcount > 0

    def resolve(self, ref: str) -> str:
        """Turn ``last``, a full ID or a unique ID prefix into a full ID.

        ``last`` is the newest complete backup a user or the layer *took*: an
        undo backup (kind ``pre-restore``) is never ``last``, or restoring
        ``last`` right after a restore would undo it; nor is the capture the
        layer takes right after a call (kind ``post-call``), which holds the
        state the call left, not the one before it.
        """
        ref = ref.strip().lower()
        if ref in ("last", "latest", "@"):
            row = self._db.execute(
                "SELECT id FROM backups WHERE status='complete'"
                " AND kind NOT IN ('pre-restore', 'post-call') ORDER BY id DESC LIMIT 1"
            ).fetchone()
            if row is None:
                raise BackupNotFoundError(ref)
            return str(row[0])
        if not ref or not _ID_CHARS.match(ref):
            raise BackupNotFoundError(ref)
        rows = self._db.execute(
            "SELECT id FROM backups WHERE id >= ? AND id < ? ORDER BY id DESC LIMIT 6",
            (ref, ref + "\U0010ffff"),
        ).fetchall()
        exact = [r for r in rows if r[0] == ref]
        if exact:
            return ref
        if not rows:
            raise BackupNotFoundError(ref)
        if len(rows) > 1:
            shown = ", ".join(str(r[0]) for r in rows[:5]) + (", …" if len(rows) > 5 else "")
            raise UsageError(
                f"backup id prefix {ref!r} is ambiguous: it matches {shown} — give more characters"
            )
        return str(rows[0][0])

    def get(self, ref: str) -> BackupRow:
        """The backup ``ref`` (``last``, ID or unique prefix) with its snapshots."""
        backup_id = self.resolve(ref)
        row = self._db.execute(
            f"SELECT {_BACKUP_COLUMNS} FROM backups WHERE id=?", (backup_id,)
        ).fetchone()
        if row is None:
            raise BackupNotFoundError(ref)
        return _backup_row(row, self._snapshots(backup_id))

    def _snapshots(self, backup_id: str) -> list[SnapshotRow]:
        return [
            SnapshotRow(str(r[0]), int(r[1]), str(r[2]), str(r[3]), str(r[4]), int(r[5] or 0))
            for r in self._db.execute(
                "SELECT backup_id, idx, connector, target, digest, items FROM snapshots"
                " WHERE backup_id=? ORDER BY idx",
                (backup_id,),
            )
        ]

    def list_backups(self, limit: int | None = 50) -> list[BackupRow]:
        """Newest backups first."""
        return self.find_backups(limit=limit)

    def find_backups(self, *, kinds: tuple[str, ...] | None = None, status: str | None = None,
                     parent_id: str | None = None, session: str | None = None,
                     id_from: str | None = None, id_to: str | None = None,
                     limit: int | None = None) -> list[BackupRow]:
        """:meth:`Catalog.find_backups` as one query (a call's post-call backup, its trash
        moves: through the index on ``parent_id``, not by reading every backup)."""
        where, args = backup_conditions(kinds, status, parent_id, session, id_from, id_to, "?")
        rows = self._db.execute(
            f"SELECT {_BACKUP_COLUMNS} FROM backups{where} ORDER BY id DESC LIMIT ?",
            (*args, -1 if limit is None else limit)).fetchall()
        snaps: dict[str, list[SnapshotRow]] = {}
        ids = [r[0] for r in rows]
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            for r in self._db.execute(
                "SELECT backup_id, idx, connector, target, digest, items FROM snapshots"
                f" WHERE backup_id IN ({marks}) ORDER BY idx",
                part,
            ):
                snaps.setdefault(r[0], []).append(
                    SnapshotRow(str(r[0]), int(r[1]), str(r[2]), str(r[3]), str(r[4]),
                                int(r[5] or 0))
                )
        return [_backup_row(row, snaps.get(row[0], [])) for row in rows]

    def by_tool_use_id(self, tool_use_id: str, kinds: tuple[str, ...]) -> BackupRow | None:
        """:meth:`Catalog.by_tool_use_id`, the tool calls' JSON read by SQLite."""
        marks = ",".join("?" * len(kinds))
        row = self._db.execute(
            f"SELECT id FROM backups WHERE kind IN ({marks}) AND tool_call IS NOT NULL"
            " AND CASE WHEN json_valid(tool_call) THEN json_extract(tool_call, '$.tool_use_id')"
            " END = ? ORDER BY id DESC LIMIT 1", (*kinds, tool_use_id)).fetchone()
        return None if row is None else self.get(str(row[0]))

    def count(self) -> int:
        """Number of backups."""
        return int(self._db.execute("SELECT count(*) FROM backups").fetchone()[0])

    def latest_snapshot(self, target: str, connector: str) -> SnapshotRow | None:
        """The newest snapshot of ``target`` in a complete backup (one query)."""
        r = self._db.execute(
            "SELECT s.backup_id, s.idx, s.connector, s.target, s.digest, s.items FROM snapshots s"
            " JOIN backups b ON b.id = s.backup_id WHERE s.target=? AND s.connector=?"
            " AND b.status='complete' ORDER BY s.backup_id DESC LIMIT 1",
            (target, connector),
        ).fetchone()
        if r is None:
            return None
        return SnapshotRow(str(r[0]), int(r[1]), str(r[2]), str(r[3]), str(r[4]), int(r[5] or 0))

    def stored_since(self, when: float) -> int:
        """Sum of ``stored_bytes`` of backups finished after ``when``."""
        row = self._db.execute(
            "SELECT coalesce(sum(stored_bytes), 0) FROM backups WHERE finished_at > ?", (when,)
        ).fetchone()
        return int(row[0])

    def refs(self, backup_id: str, idx: int | None = None) -> set[str]:
        """Blobs a backup (or one snapshot of it) references, links followed."""
        args: tuple[str | int, ...] = (backup_id,)
        start = "SELECT digest FROM refs WHERE backup_id=?"
        if idx is not None:
            start, args = start + " AND idx=?", (backup_id, idx)
        return {str(r[0]) for r in self._db.execute(_closure(start), args)}

    def ref_digests(self, backup_id: str, idx: int) -> Iterator[str]:
        """:meth:`refs` of one snapshot in digest order, read 500 rows at a time (SQLite
        sorts past its cache in temporary files)."""
        cur = self._db.execute(
            _closure("SELECT digest FROM refs WHERE backup_id=? AND idx=?") + " ORDER BY d",
            (backup_id, idx))
        try:
            while rows := cur.fetchmany(500):
                yield from (str(r[0]) for r in rows)
        finally:
            cur.close()

    def referenced(self, *, skip_statuses: tuple[str, ...] = ()) -> set[str]:
        """Every blob a backup references (one consistent read, links followed),
        backups in ``skip_statuses`` left out."""
        marks = ",".join("?" * len(skip_statuses)) or "''"
        start = ("SELECT r.digest FROM refs r JOIN backups b ON b.id = r.backup_id"
                 f" WHERE b.status NOT IN ({marks})")
        return {str(r[0]) for r in self._db.execute(_closure(start), skip_statuses)}

    def ref_rows(self) -> Iterator[tuple[str, int, str]]:
        """Every reference, links followed: ``(backup_id, idx, digest)``."""
        for r in self._db.execute(
            "WITH RECURSIVE c(b, i, d) AS (SELECT backup_id, idx, digest FROM refs"
            " UNION SELECT c.b, c.i, l.child FROM c JOIN links l ON l.parent = c.d)"
            " SELECT b, i, d FROM c"
        ):
            yield str(r[0]), int(r[1]), str(r[2])

    def add_links(self, parent: str, children: set[str]) -> set[str]:
        """Record that ``parent`` names ``children``; the children it now links to.

        A parent's links are written in one transaction and dropped in one
        statement, so any link of ``parent`` on record means all of them are:
        an unchanged chunk costs one read, no write.
        """
        recorded = {str(r[0]) for r in self._db.execute(
            "SELECT child FROM links WHERE parent=?", (parent,))}
        if recorded:
            return recorded & children
        with self._tx() as db:
            db.executemany("INSERT OR IGNORE INTO links VALUES (?,?)",
                           ((parent, c) for c in children))
        return set(children)

    def drop_unused_links(self) -> int:
        """Forget links of parents nothing references, when no backup is open."""
        with self._tx() as db:
            cur = db.execute(
                "WITH RECURSIVE c(d) AS (SELECT digest FROM refs"
                " UNION SELECT l.child FROM links l JOIN c ON l.parent = c.d)"
                " DELETE FROM links WHERE parent NOT IN (SELECT d FROM c)"
                " AND NOT EXISTS (SELECT 1 FROM backups WHERE status='open')"
            )
            return int(cur.rowcount)

    def orphan_rows(self) -> list[str]:
        """Snapshot and reference rows whose backup row is gone."""
        out = [
            f"snapshot row {r[0]}#{r[1]} belongs to no backup"
            for r in self._db.execute(
                "SELECT backup_id, idx FROM snapshots WHERE backup_id NOT IN (SELECT id FROM backups)"
            )
        ]
        out += [
            f"{r[1]} reference row(s) of {r[0]} belong to no backup"
            for r in self._db.execute(
                "SELECT backup_id, count(*) FROM refs WHERE backup_id NOT IN"
                " (SELECT id FROM backups) GROUP BY backup_id"
            )
        ]
        return out

    def drop_orphan_rows(self) -> None:
        """Delete snapshot and reference rows whose backup row is gone."""
        with self._tx() as db:
            db.execute("DELETE FROM snapshots WHERE backup_id NOT IN (SELECT id FROM backups)")
            db.execute("DELETE FROM refs WHERE backup_id NOT IN (SELECT id FROM backups)")

    def forget(self, backup_ids: Iterable[str]) -> int:
        """Remove backups, their snapshots and their references."""
        ids = list(backup_ids)
        n = 0
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            with self._tx() as db:
                db.execute(f"DELETE FROM refs WHERE backup_id IN ({marks})", part)
                db.execute(f"DELETE FROM snapshots WHERE backup_id IN ({marks})", part)
                n += db.execute(f"DELETE FROM backups WHERE id IN ({marks})", part).rowcount
        return n

    def clear_tool_call(self, backup_id: str) -> None:
        """Drop an unreadable tool-call record (``check --repair``)."""
        with self._tx() as db:
            db.execute("UPDATE backups SET tool_call=NULL WHERE id=?", (backup_id,))

    # ------------------------------------------------------------ leases and locks
    def _lock_path(self, name: str) -> Path:
        return self.locks / f"{name}.lock"

    @contextmanager
    def lease(self, backup_id: str) -> Iterator[None]:
        """An exclusive ``flock`` on ``locks/capture-<id>.lock`` for the capture's life."""
        path = self._lock_path(f"capture-{backup_id}")
        fd = locked_file(path, fcntl.LOCK_EX)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)
            os.close(fd)

    def lease_held(self, backup_id: str) -> bool:
        """Whether a live process holds the capture lease of ``backup_id``."""
        try:
            fd = os.open(self._lock_path(f"capture-{backup_id}"), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return True
            raise
        finally:
            os.close(fd)
        return False

    def pin(self, backup_id: str) -> AbstractContextManager[None]:
        """A shared ``flock`` on ``locks/read-<id>.lock`` (:mod:`preimage.store.pins`)."""
        return pinned_file(self.locks, backup_id)

    def unpinned(self, backup_id: str) -> AbstractContextManager[bool]:
        """The exclusive side of :meth:`pin`, not waiting (:mod:`preimage.store.pins`)."""
        return unpinned_file(self.locks, backup_id)

    def stale_leases(self) -> list[str]:
        """Backups whose lease file no process holds (left by killed captures)."""
        out = []
        for p in sorted(self.locks.glob("capture-*.lock")):
            backup_id = p.name[len("capture-") : -len(".lock")]
            if not self.lease_held(backup_id):
                out.append(backup_id)
        return out

    def drop_stale_leases(self) -> None:
        """Delete lease files nobody holds."""
        for backup_id in self.stale_leases():
            path = self._lock_path(f"capture-{backup_id}")
            fd = None
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.unlink(path)
            except OSError:
                pass
            finally:
                if fd is not None:
                    os.close(fd)

    @contextmanager
    def exclusive(self, name: str, *, wait: float = 0) -> Iterator[None]:
        """A store-wide exclusive lock, waited for up to ``wait`` seconds;
        :class:`StoreBusyError` when it stays taken."""
        path = self._lock_path(name)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            deadline = time.monotonic() + wait
            pause = 0.01
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if time.monotonic() >= deadline:
                        raise StoreBusyError(str(self.path.parent), name) from exc
                time.sleep(pause)
                pause = min(pause * 2, 0.5)
            yield
        finally:
            os.close(fd)

    # ------------------------------------------------------------ restore journal
    def running_restore(self, backup_id: str, only: str) -> RestoreEntry | None:
        """The newest unfinished restore of ``backup_id`` with scope ``only``."""
        row = self._db.execute(
            "SELECT id, backup_id, only_filter, undo_backup, status, started_at FROM restores"
            " WHERE backup_id=? AND only_filter=? AND status='running' ORDER BY id DESC LIMIT 1",
            (backup_id, only),
        ).fetchone()
        return RestoreEntry(*row) if row else None

    def start_restore(self, backup_id: str, only: str, undo_backup: str | None) -> int:
        """Open a journal entry."""
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO restores (backup_id, only_filter, undo_backup, started_at)"
                " VALUES (?,?,?,?)",
                (backup_id, only, undo_backup, time.time()),
            )
            return int(cur.lastrowid or 0)

    def finish_restore(self, restore_id: int, status: str) -> None:
        """Close a journal entry."""
        with self._tx() as db:
            db.execute(
                "UPDATE restores SET status=?, finished_at=? WHERE id=?",
                (status, time.time(), restore_id),
            )

    def restores(self) -> list[RestoreEntry]:
        """Every journal entry, newest first."""
        return [
            RestoreEntry(*r)
            for r in self._db.execute(
                "SELECT id, backup_id, only_filter, undo_backup, status, started_at FROM restores"
                " ORDER BY id DESC"
            )
        ]

    # ------------------------------------------------------------ stat cache
    def cached_digest(
        self, dev: int, ino: int, size: int, mtime_ns: int, ctime_ns: int
    ) -> str | None:
        """A digest recorded for an unchanged inode, if any."""
        row = self._db.execute(
            "SELECT digest FROM stat_cache WHERE dev=? AND ino=? AND size=? AND mtime_ns=?"
            " AND ctime_ns=?",
            (dev, ino, size, mtime_ns, ctime_ns),
        ).fetchone()
        return str(row[0]) if row else None

    def cache_digests(self, rows: list[tuple[int, int, int, int, int, str]]) -> None:
        """Remember digests by inode and stat (batched)."""
        if not rows:
            return
        with self._tx() as db:
            db.executemany("INSERT OR REPLACE INTO stat_cache VALUES (?,?,?,?,?,?)", rows)

    def cached_digests(self, dev: int, inodes: Sequence[int]
                       ) -> dict[int, tuple[int, int, int, str]] | None:
        """The recorded stat and digest of each of ``inodes`` it holds (one query per 500)."""
        return stat_cache_rows(self._db, dev, inodes)

    # ------------------------------------------------------------ blob verification record
    def blob_keys(self) -> dict[str, tuple[int, int, int, int]]:
        """Every recorded blob verification: digest → the file's stat at the time."""
        return {
            str(r[0]): (int(r[1]), int(r[2]), int(r[3]), int(r[4]))
            for r in self._db.execute("SELECT digest, size, ino, mtime_ns, ctime_ns FROM blob_sound")
        }

    def set_blob_keys(self, rows: list[tuple[str, tuple[int, int, int, int] | None]]) -> None:
        """Record (or, with None, drop) blob verifications, in one transaction."""
        if not rows:
            return
        with self._tx() as db:
            for digest, key in rows:
                if key is None:
                    db.execute("DELETE FROM blob_sound WHERE digest=?", (digest,))
                else:
                    db.execute("INSERT OR REPLACE INTO blob_sound VALUES (?,?,?,?,?)",
                               (digest, *key))

    def raw_size(self, digest: str) -> int | None:
        """A blob's uncompressed size, when recorded."""
        row = self._db.execute("SELECT raw FROM blob_raw_size WHERE digest=?", (digest,)).fetchone()
        return int(row[0]) if row else None

    def set_raw_sizes(self, rows: list[tuple[str, int]]) -> None:
        """Record uncompressed sizes of blobs."""
        if rows:
            with self._tx() as db:
                db.executemany("INSERT OR REPLACE INTO blob_raw_size VALUES (?,?)", rows)

    # ------------------------------------------------------------ trash
    def add_trash(self, backup_id: str, original: str, stored_at: str) -> None:
        """Record a path moved to the store's trash."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO trash (backup_id, original, stored_at) VALUES (?,?,?)",
                (backup_id, original, stored_at),
            )

    def add_trash_many(self, backup_id: str, moved: Iterable[tuple[str, str]]) -> None:
        """Record several paths moved to the store's trash, in one transaction."""
        with self._tx() as db:
            db.executemany(
                "INSERT INTO trash (backup_id, original, stored_at) VALUES (?,?,?)",
                ((backup_id, original, stored_at) for original, stored_at in moved),
            )

    def trash_of(self, backup_id: str) -> list[tuple[str, str]]:
        """``(original, stored_at)`` pairs moved to trash by ``backup_id``."""
        return [(e.original, e.stored_at) for e in self.trash() if e.backup_id == backup_id]

    def trash(self) -> list[TrashEntry]:
        """Every trash entry."""
        return [
            TrashEntry(int(r[0]), str(r[1]), str(r[2]), str(r[3]))
            for r in self._db.execute(
                "SELECT id, backup_id, original, stored_at FROM trash ORDER BY id"
            )
        ]

    def drop_trash(self, entry_ids: Iterable[int]) -> None:
        """Forget trash entries."""
        with self._tx() as db:
            db.executemany("DELETE FROM trash WHERE id=?", ((i,) for i in entry_ids))

    # ------------------------------------------------------------ health
    def integrity_problems(self) -> list[str]:
        """``PRAGMA integrity_check`` findings (empty when the database is sound)."""
        try:
            rows = [str(r[0]) for r in self._db.execute("PRAGMA integrity_check")]
        except sqlite3.DatabaseError as exc:
            return [f"catalog database: {exc}"]
        return [] if rows == ["ok"] else [f"catalog database: {r}" for r in rows]


_NEW = 4   # the format a new catalog is created at (kept equal to _format.FORMAT)


def _closure(start: str) -> str:
    """A query for the digests ``start`` selects and every blob they link to."""
    return (f"WITH RECURSIVE c(d) AS ({start}"
            " UNION SELECT l.child FROM links l JOIN c ON l.parent = c.d) SELECT d FROM c")


def _backup_row(row: Any, snaps: list[SnapshotRow]) -> BackupRow:
    problems: list[str] = []
    tool_call = None
    if row[5]:
        try:
            tool_call = json.loads(row[5])
            if not isinstance(tool_call, dict):
                raise ValueError("not an object")
        except ValueError:
            tool_call = None
            problems.append("its tool_call record is not valid JSON")
    return BackupRow(
        id=str(row[0]),
        created_at=float(row[1] or 0),
        label=str(row[2] or ""),
        kind=str(row[3]),
        tier=str(row[4]),
        tool_call=tool_call,
        session=row[6],
        parent_id=row[7],
        status=str(row[8]),
        stored_bytes=int(row[9] or 0),
        logical_bytes=int(row[10] or 0),
        seconds=float(row[11] or 0),
        snapshots=snaps,
        expected_snapshots=None if row[12] is None else int(row[12]),
        finished_at=None if row[13] is None else float(row[13]),
        problems=problems,
    )
