"""The SQLite catalog of backups, snapshots, restores and the stat cache.

WAL mode with a generous busy timeout lets many processes capture at once;
each write is one short transaction.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from preimage._errors import BackupNotFoundError, StoreUnavailableError

_SCHEMA = """
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
    seconds     REAL NOT NULL DEFAULT 0
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
CREATE TABLE IF NOT EXISTS trash (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    backup_id   TEXT NOT NULL,
    original    TEXT NOT NULL,
    stored_at   TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class SnapshotRow:
    """A snapshot's entry in the catalog."""

    backup_id: str
    idx: int
    connector: str
    target: str
    digest: str
    items: int


@dataclass(frozen=True)
class BackupRow:
    """A backup's entry in the catalog."""

    id: str
    created_at: float
    label: str
    kind: str
    tier: str
    tool_call: dict[str, Any] | None
    session: str | None
    parent_id: str | None
    status: str
    stored_bytes: int
    logical_bytes: int
    seconds: float
    snapshots: list[SnapshotRow] = field(default_factory=list)


class Catalog:
    """The catalog database at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._db = sqlite3.connect(path, timeout=60, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=60000")
            self._db.execute("PRAGMA synchronous=NORMAL")
            with self._tx():
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        self._db.execute(stmt)
        except sqlite3.Error as exc:
            raise StoreUnavailableError(str(path), f"catalog: {exc}") from exc
        path.chmod(0o600)

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
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        else:
            try:
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._db.execute("ROLLBACK")
                raise StoreUnavailableError(str(self.path), f"catalog: {exc}") from exc

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
    ) -> None:
        """Open a new backup (status ``open`` until :meth:`finish_backup`)."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO backups (id, created_at, label, kind, tier, tool_call, session,"
                " parent_id) VALUES (?,?,?,?,?,?,?,?)",
                (
                    backup_id,
                    time.time(),
                    label,
                    kind,
                    tier,
                    json.dumps(tool_call) if tool_call is not None else None,
                    session,
                    parent_id,
                ),
            )

    def add_snapshot(self, row: SnapshotRow) -> None:
        """Record one captured snapshot of a backup."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO snapshots VALUES (?,?,?,?,?,?)",
                (row.backup_id, row.idx, row.connector, row.target, row.digest, row.items),
            )

    def finish_backup(
        self, backup_id: str, *, status: str, stored_bytes: int, logical_bytes: int, seconds: float
    ) -> None:
        """Close a backup with its final status and sizes."""
        with self._tx() as db:
            db.execute(
                "UPDATE backups SET status=?, stored_bytes=?, logical_bytes=?, seconds=?"
                " WHERE id=?",
                (status, stored_bytes, logical_bytes, seconds, backup_id),
            )

    def resolve(self, ref: str) -> str:
        """Turn ``last``, a full ID or a unique ID prefix into a full ID.

        ``last`` is the newest complete backup a user or the layer *took*: an
        undo backup (kind ``pre-restore``) is never ``last``, or restoring
        ``last`` right after a restore would undo it.
        """
        ref = ref.strip().lower()
        if ref in ("last", "latest", "@"):
            row = self._db.execute(
                "SELECT id FROM backups WHERE status='complete' AND kind != 'pre-restore'"
                " ORDER BY id DESC LIMIT 1"
            ).fetchone()
        else:
            rows = self._db.execute(
                "SELECT id FROM backups WHERE id LIKE ? ORDER BY id DESC LIMIT 2",
                (ref.replace("%", "").replace("_", "") + "%",),
            ).fetchall()
            row = rows[0] if len(rows) == 1 and ref else None
        if row is None:
            raise BackupNotFoundError(ref)
        return str(row[0])

    def get(self, ref: str) -> BackupRow:
        """The backup ``ref`` (``last``, ID or unique prefix) with its snapshots."""
        backup_id = self.resolve(ref)
        row = self._db.execute("SELECT * FROM backups WHERE id=?", (backup_id,)).fetchone()
        snaps = [
            SnapshotRow(*r)
            for r in self._db.execute(
                "SELECT * FROM snapshots WHERE backup_id=? ORDER BY idx", (backup_id,)
            )
        ]
        return _backup_row(row, snaps)

    def list_backups(self, limit: int = 50) -> list[BackupRow]:
        """Newest backups first."""
        rows = self._db.execute(
            "SELECT * FROM backups ORDER BY id DESC LIMIT ?", (limit,)
        ).fetchall()
        out = []
        for row in rows:
            snaps = [
                SnapshotRow(*r)
                for r in self._db.execute(
                    "SELECT * FROM snapshots WHERE backup_id=? ORDER BY idx", (row[0],)
                )
            ]
            out.append(_backup_row(row, snaps))
        return out

    def count(self) -> int:
        """Number of backups."""
        return int(self._db.execute("SELECT count(*) FROM backups").fetchone()[0])

    # ------------------------------------------------------------ restore journal
    def start_restore(self, backup_id: str, only: str) -> tuple[int, str | None]:
        """Open a journal entry; reuse an unfinished one for the same backup and scope.

        Returns ``(restore_id, undo_backup)``: an interrupted restore keeps the
        undo backup taken before its first attempt, so re-running it does not
        mistake the half-restored state for the state to come back to.
        """
        with self._tx() as db:
            row = db.execute(
                "SELECT id, undo_backup FROM restores WHERE backup_id=? AND only_filter=?"
                " AND status='running' ORDER BY id DESC LIMIT 1",
                (backup_id, only),
            ).fetchone()
            if row:
                return int(row[0]), row[1]
            cur = db.execute(
                "INSERT INTO restores (backup_id, only_filter, started_at) VALUES (?,?,?)",
                (backup_id, only, time.time()),
            )
            return int(cur.lastrowid or 0), None

    def set_restore_undo(self, restore_id: int, undo_backup: str) -> None:
        """Remember the backup that undoes this restore."""
        with self._tx() as db:
            db.execute("UPDATE restores SET undo_backup=? WHERE id=?", (undo_backup, restore_id))

    def finish_restore(self, restore_id: int, status: str) -> None:
        """Close a journal entry."""
        with self._tx() as db:
            db.execute(
                "UPDATE restores SET status=?, finished_at=? WHERE id=?",
                (status, time.time(), restore_id),
            )

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

    # ------------------------------------------------------------ trash
    def add_trash(self, backup_id: str, original: str, stored_at: str) -> None:
        """Record a path moved to the store's trash."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO trash (backup_id, original, stored_at) VALUES (?,?,?)",
                (backup_id, original, stored_at),
            )

    def trash_of(self, backup_id: str) -> list[tuple[str, str]]:
        """``(original, stored_at)`` pairs moved to trash by ``backup_id``."""
        return [
            (str(a), str(b))
            for a, b in self._db.execute(
                "SELECT original, stored_at FROM trash WHERE backup_id=? ORDER BY id",
                (backup_id,),
            )
        ]


def _backup_row(row: Any, snaps: list[SnapshotRow]) -> BackupRow:
    return BackupRow(
        id=row[0],
        created_at=row[1],
        label=row[2],
        kind=row[3],
        tier=row[4],
        tool_call=json.loads(row[5]) if row[5] else None,
        session=row[6],
        parent_id=row[7],
        status=row[8],
        stored_bytes=row[9],
        logical_bytes=row[10],
        seconds=row[11],
        snapshots=snaps,
    )
