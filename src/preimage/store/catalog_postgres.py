"""The shared catalog: PostgreSQL, for a store many machines write at once.

The same tables as the local catalog (``docs/store.md``), minus the parts that
belong to one machine (the stat cache stays local: inode numbers mean nothing
on another machine), plus ``hidden_blobs``, the register of the two-phase
delete that every machine's captures consult.

**Nothing readable leaves the client.**  Labels, tool calls, targets, restore
scopes and trash paths are sealed with AES-256-GCM; blob digests (snapshot
documents, references, hidden blobs) are turned into deterministic AES-SIV
tokens, so the server can still join and count them but cannot tell which
content they name.  Backup ids, times, kinds, tiers, statuses and sizes are
plain, so ``list`` sorts and filters in SQL.

**Leases** are session-level advisory locks: PostgreSQL drops them when the
holder's connection ends, so a killed capture's backup is known to be dead.
``lease_held`` reads ``pg_locks``, which sees every session.  Store-wide locks
(``prune``, ``upgrade``) are advisory locks too.

**Migrations**: ``meta.catalog_schema`` is the version of these tables;
:meth:`PostgresCatalog.migrate` brings them up to date in one transaction
(under an advisory lock), ``preimage store migrate`` runs it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from preimage.interface.errors import (
    BackupNotFoundError,
    RemoteUnavailableError,
    StoreBusyError,
    StoreConfigError,
    StoreError,
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
from preimage.store.catalog_cipher import CatalogCipher
from preimage.store.format import SHARED_FORMAT
from preimage.store.packs._crypto import Keys

SCHEMA_VERSION = 2   # 2: links (format 3)
T = TypeVar("T")
_LEASE_NS = 0x70726531    # advisory lock namespaces: leases, store-wide locks
_LOCK_NS = 0x70726532
_PIN_NS = 0x70726533      # read pins: shared by readers, exclusive for a forget
_ID_CHARS = re.compile(r"^[0-9a-z]+$")

_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS backups (
        id TEXT PRIMARY KEY, created_at DOUBLE PRECISION NOT NULL,
        label TEXT NOT NULL DEFAULT '', kind TEXT NOT NULL DEFAULT 'capture',
        tier TEXT NOT NULL DEFAULT 'manual', tool_call TEXT, session TEXT, parent_id TEXT,
        status TEXT NOT NULL DEFAULT 'open', stored_bytes BIGINT NOT NULL DEFAULT 0,
        logical_bytes BIGINT NOT NULL DEFAULT 0, seconds DOUBLE PRECISION NOT NULL DEFAULT 0,
        expected_snapshots INTEGER, finished_at DOUBLE PRECISION)""",
    """CREATE TABLE IF NOT EXISTS snapshots (
        backup_id TEXT NOT NULL, idx INTEGER NOT NULL, connector TEXT NOT NULL,
        target TEXT NOT NULL, digest TEXT NOT NULL, items INTEGER NOT NULL,
        PRIMARY KEY (backup_id, idx))""",
    """CREATE TABLE IF NOT EXISTS refs (
        backup_id TEXT NOT NULL, idx INTEGER NOT NULL, digest TEXT NOT NULL,
        PRIMARY KEY (backup_id, idx, digest))""",
    """CREATE INDEX IF NOT EXISTS refs_by_digest ON refs(digest)""",
    """CREATE INDEX IF NOT EXISTS backups_by_parent ON backups(parent_id)""",
    """CREATE TABLE IF NOT EXISTS links (
        parent TEXT NOT NULL, child TEXT NOT NULL, PRIMARY KEY (parent, child))""",
    """CREATE TABLE IF NOT EXISTS restores (
        id BIGSERIAL PRIMARY KEY, backup_id TEXT NOT NULL, only_filter TEXT NOT NULL DEFAULT '',
        undo_backup TEXT, started_at DOUBLE PRECISION NOT NULL, finished_at DOUBLE PRECISION,
        status TEXT NOT NULL DEFAULT 'running')""",
    """CREATE TABLE IF NOT EXISTS trash (
        id BIGSERIAL PRIMARY KEY, backup_id TEXT NOT NULL, original TEXT NOT NULL,
        stored_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS hidden_blobs (
        digest TEXT PRIMARY KEY, generation TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'hidden', hidden_at DOUBLE PRECISION NOT NULL)""",
]
_BACKUP_COLUMNS = (
    "id, created_at, label, kind, tier, tool_call, session, parent_id, status, stored_bytes,"
    " logical_bytes, seconds, expected_snapshots, finished_at"
)


def _lock_key(name: str) -> int:
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=4).digest(), "big", signed=True)


class PostgresCatalog(Catalog):
    """The catalog in the PostgreSQL database at ``url`` (credentials from the URL,
    ``PGPASSWORD`` or ``~/.pgpass``; only the redacted ``where`` is ever printed)."""

    lease_poll = 0.02  # each look at a lease is a round trip to the server

    def __init__(self, url: str, where: str, keys: Keys, repository_id: str, *,
                 create: bool = False) -> None:
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise StoreConfigError("a postgresql:// catalog needs psycopg — install "
                                   "preimage[remote]") from exc
        self._psycopg = psycopg
        self.where = where
        self.cipher = CatalogCipher(keys)
        self.on_lease: Callable[[], None] | None = None
        self._url = url   # to reconnect; never printed
        self._db = self._connect()
        # Advisory locks this process holds: name -> (namespace, key).  A dropped
        # connection loses them all; ``_reconnect`` takes them again and remembers
        # which ones had a break (``lease_intact``).
        self._held: dict[str, tuple[int, int]] = {}
        self._broken: set[str] = set()
        self._pins: dict[str, int] = {}   # backup id -> read pins this process holds
        version = self.schema_found = self._schema_version()
        if version == 0 and not create:
            self._db.close()
            raise StoreConfigError(
                f"the catalog at {where} has no preimage tables — run `preimage store init`",
                where=where)
        if version > SCHEMA_VERSION:
            self._db.close()
            raise StoreConfigError(
                f"the catalog at {where} has schema {version}, newer than this preimage "
                f"understands ({SCHEMA_VERSION}); upgrade preimage", where=where)
        if create:
            self.migrate(repository_id)
        owner = self._meta("repository")
        if owner is not None and owner != repository_id:
            self._db.close()
            raise StoreConfigError(
                f"the catalog at {where} belongs to another store (repository {owner[:8]}…, "
                f"not {repository_id[:8]}…) — point PREIMAGE_CATALOG at this store's database",
                where=where)

    # ------------------------------------------------------------ plumbing
    def _connect(self) -> Any:
        try:
            return self._psycopg.connect(self._url, autocommit=True, connect_timeout=5,
                                         application_name="preimage")
        except self._psycopg.OperationalError as exc:
            raise _connect_error(exc, self.where) from None

    def _q(self, sql: str, params: Iterable[Any] = (), *,
           retry: bool = True) -> list[tuple[Any, ...]]:
        """One statement.  When the connection has dropped, connect again (taking every
        held lease again) and, with ``retry`` (statements safe to run twice), run it
        once more."""
        args = tuple(params)

        def run(db: Any) -> list[tuple[Any, ...]]:
            cur = db.execute(sql, args)
            return list(cur.fetchall()) if cur.description else []

        return self._run(run, retry)

    def _tx(self, body: Callable[[Any], T]) -> T:
        """``body(connection)`` in one transaction; run again on a new connection when
        the old one dropped (every transaction body here is safe to run twice)."""

        def run(db: Any) -> T:
            with db.transaction():
                return body(db)

        return self._run(run, True)

    def _run(self, run: Callable[[Any], T], retry: bool) -> T:
        try:
            return run(self._db)
        except self._psycopg.OperationalError as exc:
            if not self._reconnect() or not retry:
                raise _connect_error(exc, self.where) from None
        try:
            return run(self._db)
        except self._psycopg.OperationalError as exc:
            raise _connect_error(exc, self.where) from None

    def _reconnect(self) -> bool:
        """After a dropped connection: a new one, with every lease taken again.  False
        when the connection is fine (the error was something else).

        While the connection was down the server saw this process's leases free, so a
        ``prune`` may have taken its capture for dead.  The leases taken again are noted
        as broken: such a capture is not marked complete (:meth:`finish_backup`), and its
        writer indexes nothing (:meth:`lease_intact`) — it fails, clearly, and what it
        uploaded is reclaimed by the next prune.  A store-wide lock lost this way fails
        the command at once.
        """
        if not (self._db.broken or self._db.closed):
            return False
        with contextlib.suppress(Exception):
            self._db.close()
        self._db = self._connect()
        held, self._held = self._held, {}
        try:
            # read pins: while the connection was down a forget may have removed the
            # backup; a reader that then misses a blob fails as a missing blob does
            for backup_id, count in self._pins.items():
                for _ in range(count):
                    self._db.execute("SELECT pg_advisory_lock_shared(%s, %s)",
                                     (_PIN_NS, _lock_key(backup_id)))
            for name, (ns, key) in held.items():
                if ns == _LOCK_NS:
                    raise RemoteUnavailableError(
                        f"the catalog at {self.where}",
                        f"the connection dropped while this process held the store-wide "
                        f"{name!r} lock; run the command again")
                self._take(name, ns, key, wait=60)
                self._broken.add(name)
        except self._psycopg.OperationalError as exc:
            raise _connect_error(exc, self.where) from None
        return True

    def _take(self, name: str, ns: int, key: int, *, wait: float) -> None:
        """Take advisory lock ``(ns, key)`` for this session, waiting up to ``wait`` s."""
        deadline = time.monotonic() + wait
        pause = 0.02
        while not self._db.execute("SELECT pg_try_advisory_lock(%s, %s)",
                                   (ns, key)).fetchone()[0]:
            if time.monotonic() >= deadline:
                raise StoreBusyError(self.where, name)
            time.sleep(pause)
            pause = min(pause * 2, 0.5)
        self._held[name] = (ns, key)

    def _meta(self, key: str) -> str | None:
        rows = self._q("SELECT value FROM meta WHERE key=%s", (key,))
        return str(rows[0][0]) if rows else None

    def _schema_version(self) -> int:
        rows = self._q("SELECT to_regclass('meta') IS NOT NULL")
        if not rows or not rows[0][0]:
            return 0
        value = self._meta("catalog_schema")
        return int(value) if value else 0

    def migrate(self, repository_id: str | None = None) -> int:
        """Create or bring the tables up to :data:`SCHEMA_VERSION`; return the version
        found before (0 for a new database)."""
        with self.exclusive("migrate", wait=120):
            before = self._schema_version()

            def create(db: Any) -> None:
                for stmt in _SCHEMA:
                    db.execute(stmt)
                db.execute("INSERT INTO meta VALUES ('catalog_schema', %s) ON CONFLICT (key)"
                           " DO UPDATE SET value = EXCLUDED.value", (str(SCHEMA_VERSION),))
                # a new catalog is at the current format; an existing one keeps its
                # own until the store's upgrade (preimage.store.format) moves it on
                db.execute("INSERT INTO meta VALUES ('format', %s) ON CONFLICT DO NOTHING",
                           (str(SHARED_FORMAT),))
                if repository_id is not None:
                    db.execute("INSERT INTO meta VALUES ('repository', %s) ON CONFLICT DO NOTHING",
                               (repository_id,))

            self._tx(create)
        return before

    def close(self) -> None:
        """Close the connection (which ends every lease it held)."""
        with contextlib.suppress(Exception):
            self._db.close()

    # ------------------------------------------------------------ format
    def format_version(self) -> int:
        """The store format recorded at ``store init``."""
        value = self._meta("format")
        return int(value) if value else 0

    def set_format_version(self, version: int) -> None:
        """Record the store format."""
        self._q("INSERT INTO meta VALUES ('format', %s) ON CONFLICT (key) DO UPDATE"
                " SET value = EXCLUDED.value", (str(version),))

    def migrate_schema(self, to_version: int) -> None:
        """Bring the tables to format ``to_version`` (2: the first schema; 3: ``links``)."""
        if to_version not in (2, 3):
            raise ValueError(f"no schema migration to format {to_version}")
        self.migrate()

    def setting(self, key: str) -> str | None:
        """A stored setting."""
        return self._meta(f"setting:{key}")

    def set_setting(self, key: str, value: str | None) -> None:
        """Store or remove a setting."""
        if value is None:
            self._q("DELETE FROM meta WHERE key=%s", (f"setting:{key}",))
        else:
            self._q("INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE"
                    " SET value = EXCLUDED.value", (f"setting:{key}", value))

    # ------------------------------------------------------------ backups
    def add_backup(self, backup_id: str, *, label: str = "", kind: str = "capture",
                   tier: str = "manual", tool_call: dict[str, Any] | None = None,
                   session: str | None = None, parent_id: str | None = None,
                   created_at: float | None = None) -> None:
        """Open a new backup (status ``open``); ``created_at`` keeps an imported one's time."""
        c = self.cipher
        self._q(
            "INSERT INTO backups (id, created_at, label, kind, tier, tool_call, session, parent_id)"
            " VALUES (%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (id) DO NOTHING",
            (backup_id, time.time() if created_at is None else created_at,
             c.text(label, "label") if label else "", kind, tier,
             c.text(json.dumps(tool_call), "tool_call") if tool_call is not None else None,
             session, parent_id),
        )

    def add_snapshot(self, row: SnapshotRow, refs: Iterable[str] = ()) -> None:
        """Record a snapshot and its references in one transaction (COPY for the refs)."""
        c = self.cipher
        tokens = {c.token(d) for d in {row.digest, *refs}}
        values = (row.backup_id, row.idx, row.connector, c.text(row.target, "target"),
                  c.token(row.digest), row.items)

        def write(db: Any) -> None:
            # what an attempt cut short by a dropped connection may have committed goes first
            db.execute("DELETE FROM refs WHERE backup_id=%s AND idx=%s", (row.backup_id, row.idx))
            db.execute("DELETE FROM snapshots WHERE backup_id=%s AND idx=%s",
                       (row.backup_id, row.idx))
            db.execute("INSERT INTO snapshots VALUES (%s,%s,%s,%s,%s,%s)", values)
            with db.cursor().copy("COPY refs (backup_id, idx, digest) FROM STDIN") as copy:
                for t in tokens:
                    copy.write_row((row.backup_id, row.idx, t))

        self._tx(write)

    def add_refs(self, backup_id: str, idx: int, refs: Iterable[str]) -> None:
        """Add references to a snapshot."""
        rows = [(backup_id, idx, self.cipher.token(d)) for d in refs]
        self._tx(lambda db: db.cursor().executemany(
            "INSERT INTO refs VALUES (%s,%s,%s) ON CONFLICT DO NOTHING", rows))

    def finish_backup(self, backup_id: str, *, status: str, stored_bytes: int,
                      logical_bytes: int, seconds: float, snapshots: int | None = None) -> None:
        """Close a backup with its final status and sizes.

        ``complete`` only from ``open``, and only while the capture's lease has held
        without a break: a capture whose catalog connection dropped may have been
        taken for dead by a ``prune`` meanwhile, so it is marked ``failed`` instead and
        :class:`StoreError` says so.
        """
        broken = status == "complete" and backup_id in self._broken
        rows = self._q(
            "UPDATE backups SET status=%s, stored_bytes=%s, logical_bytes=%s, seconds=%s,"
            " expected_snapshots=%s, finished_at=%s WHERE id=%s"
            + (" AND status IN ('open', 'complete')" if status == "complete" else "")
            + " RETURNING id",
            ("failed" if broken else status, stored_bytes, logical_bytes, seconds, snapshots,
             time.time(), backup_id))
        if status == "complete" and (broken or not rows):
            raise StoreError(
                f"the connection to the catalog at {self.where} dropped while backup "
                f"{backup_id} was being captured: its lease lapsed, so a prune may have taken "
                "it for dead — the backup is marked failed; capture again")

    def set_status(self, backup_id: str, status: str, *, only_if: str | None = None) -> bool:
        """Change a backup's status (only from ``only_if`` when given)."""
        if only_if is None:
            sql, params = "UPDATE backups SET status=%s WHERE id=%s RETURNING id", (status, backup_id)
        else:
            sql = "UPDATE backups SET status=%s WHERE id=%s AND status=%s RETURNING id"
            params = (status, backup_id, only_if)  # type: ignore[assignment]
        return bool(self._q(sql, params))

    def resolve(self, ref: str) -> str:
        """``last``, a full ID or a unique prefix → the full ID (``last`` as the local
        catalog has it: never an undo backup nor a post-call capture)."""
        ref = ref.strip().lower()
        if ref in ("last", "latest", "@"):
            rows = self._q("SELECT id FROM backups WHERE status='complete' AND"
                           " kind NOT IN ('pre-restore', 'post-call') ORDER BY id DESC LIMIT 1")
            if not rows:
                raise BackupNotFoundError(ref)
            return str(rows[0][0])
        if not ref or not _ID_CHARS.match(ref):
            raise BackupNotFoundError(ref)
        rows = self._q("SELECT id FROM backups WHERE id LIKE %s ORDER BY id DESC LIMIT 6",
                       (ref + "%",))
        if any(r[0] == ref for r in rows):
            return ref
        if not rows:
            raise BackupNotFoundError(ref)
        if len(rows) > 1:
            shown = ", ".join(str(r[0]) for r in rows[:5]) + (", …" if len(rows) > 5 else "")
            raise UsageError(
                f"backup id prefix {ref!r} is ambiguous: it matches {shown} — give more characters")
        return str(rows[0][0])

    def get(self, ref: str) -> BackupRow:
        """The backup ``ref`` with its snapshots."""
        backup_id = self.resolve(ref)
        rows = self._q(f"SELECT {_BACKUP_COLUMNS} FROM backups WHERE id=%s", (backup_id,))
        if not rows:
            raise BackupNotFoundError(ref)
        return self._backup_row(rows[0], self._snapshots([backup_id]).get(backup_id, []))

    def _snapshots(self, ids: list[str]) -> dict[str, list[SnapshotRow]]:
        out: dict[str, list[SnapshotRow]] = {}
        if not ids:
            return out
        for r in self._q("SELECT backup_id, idx, connector, target, digest, items FROM snapshots"
                         " WHERE backup_id = ANY(%s) ORDER BY backup_id, idx", (ids,)):
            out.setdefault(str(r[0]), []).append(SnapshotRow(
                str(r[0]), int(r[1]), str(r[2]), self.cipher.untext(r[3], "target") or "",
                self.cipher.untoken(str(r[4])), int(r[5] or 0)))
        return out

    def list_backups(self, limit: int | None = 50) -> list[BackupRow]:
        """Newest first."""
        return self.find_backups(limit=limit)

    def find_backups(self, *, kinds: tuple[str, ...] | None = None, status: str | None = None,
                     parent_id: str | None = None, session: str | None = None,
                     id_from: str | None = None, id_to: str | None = None,
                     limit: int | None = None) -> list[BackupRow]:
        """:meth:`Catalog.find_backups` as one query (the columns it asks about are not
        sealed)."""
        where, args = backup_conditions(kinds, status, parent_id, session, id_from, id_to, "%s")
        rows = self._q(f"SELECT {_BACKUP_COLUMNS} FROM backups{where} ORDER BY id DESC"
                       + (" LIMIT %s" if limit is not None else ""),
                       (*args, limit) if limit is not None else tuple(args))
        snaps = self._snapshots([str(r[0]) for r in rows])
        return [self._backup_row(r, snaps.get(str(r[0]), [])) for r in rows]

    def count(self) -> int:
        """Number of backups."""
        return int(self._q("SELECT count(*) FROM backups")[0][0])

    def stored_since(self, when: float) -> int:
        """Sum of ``stored_bytes`` of backups finished after ``when``."""
        rows = self._q("SELECT coalesce(sum(stored_bytes), 0) FROM backups WHERE finished_at > %s",
                       (when,))
        return int(rows[0][0])

    def latest_snapshot(self, target: str, connector: str) -> SnapshotRow | None:
        """The newest snapshot of ``target`` in a complete backup.  Targets are sealed
        (the server cannot match them), so the connector's snapshots are read newest
        first, a page at a time, until one opens to ``target``."""
        page, offset = 200, 0
        while True:
            rows = self._q(
                "SELECT s.backup_id, s.idx, s.target, s.digest, s.items FROM snapshots s"
                " JOIN backups b ON b.id = s.backup_id WHERE s.connector=%s"
                " AND b.status='complete' ORDER BY s.backup_id DESC, s.idx LIMIT %s OFFSET %s",
                (connector, page, offset))
            for r in rows:
                try:
                    name = self.cipher.untext(r[2], "target")
                except Exception:   # a row this key does not open: not this machine's target
                    continue
                if name == target:
                    return SnapshotRow(str(r[0]), int(r[1]), connector, target,
                                       self.cipher.untoken(str(r[3])), int(r[4] or 0))
            if len(rows) < page:
                return None
            offset += page

    def refs(self, backup_id: str, idx: int | None = None) -> set[str]:
        """Blobs a backup (or one snapshot) references, links followed."""
        if idx is None:
            rows = self._q(_closure("SELECT digest FROM refs WHERE backup_id=%s"), (backup_id,))
        else:
            rows = self._q(_closure("SELECT digest FROM refs WHERE backup_id=%s AND idx=%s"),
                           (backup_id, idx))
        return {self.cipher.untoken(str(r[0])) for r in rows}

    def referenced(self, *, skip_statuses: tuple[str, ...] = ()) -> set[str]:
        """Every blob a backup references, links followed (one statement, so one
        consistent read), backups in ``skip_statuses`` left out."""
        rows = self._q(_closure("SELECT r.digest FROM refs r JOIN backups b ON b.id = r.backup_id"
                                " WHERE NOT (b.status = ANY(%s))"), (list(skip_statuses),))
        return {self.cipher.untoken(str(r[0])) for r in rows}

    def ref_rows(self) -> Iterator[tuple[str, int, str]]:
        """Every reference, links followed: ``(backup_id, idx, digest)``."""
        for r in self._q(
            "WITH RECURSIVE c(b, i, d) AS (SELECT backup_id, idx, digest FROM refs"
            " UNION SELECT c.b, c.i, l.child FROM c JOIN links l ON l.parent = c.d)"
            " SELECT b, i, d FROM c"
        ):
            yield str(r[0]), int(r[1]), self.cipher.untoken(str(r[2]))

    def add_links(self, parent: str, children: set[str]) -> set[str]:
        """Record that ``parent`` names ``children``; the children it now links to.

        A parent's links are written in one transaction, so any link of
        ``parent`` on record means all of them are: an unchanged chunk costs
        one read.  Two machines writing the same parent at once write the same
        facts (``ON CONFLICT DO NOTHING``).
        """
        c = self.cipher
        token = c.token(parent)
        recorded = {c.untoken(str(r[0]))
                    for r in self._q("SELECT child FROM links WHERE parent=%s", (token,))}
        if recorded:
            return recorded & children
        rows = [(token, c.token(d)) for d in children]
        self._tx(lambda db: db.cursor().executemany(
            "INSERT INTO links VALUES (%s,%s) ON CONFLICT DO NOTHING", rows))
        return set(children)

    def drop_unused_links(self) -> int:
        """Forget links of parents nothing references, when no backup is open.

        The backups table is locked against writes for the statement: a capture
        that opens its backup meanwhile waits, so it cannot rely on a link this
        statement is about to drop.
        """
        def drop(db: Any) -> int:
            db.execute("LOCK TABLE backups IN SHARE MODE")
            cur = db.execute(
                "WITH RECURSIVE c(d) AS (SELECT digest FROM refs"
                " UNION SELECT l.child FROM links l JOIN c ON l.parent = c.d)"
                " DELETE FROM links WHERE parent NOT IN (SELECT d FROM c)"
                " AND NOT EXISTS (SELECT 1 FROM backups WHERE status='open')")
            return int(cur.rowcount or 0)

        return self._tx(drop)

    def orphan_rows(self) -> list[str]:
        """Snapshot and reference rows whose backup is gone."""
        out = [f"snapshot row {r[0]}#{r[1]} belongs to no backup" for r in self._q(
            "SELECT backup_id, idx FROM snapshots WHERE backup_id NOT IN (SELECT id FROM backups)")]
        out += [f"{r[1]} reference row(s) of {r[0]} belong to no backup" for r in self._q(
            "SELECT backup_id, count(*) FROM refs WHERE backup_id NOT IN (SELECT id FROM backups)"
            " GROUP BY backup_id")]
        return out

    def drop_orphan_rows(self) -> None:
        """Delete the rows :meth:`orphan_rows` describes."""

        def drop(db: Any) -> None:
            db.execute("DELETE FROM snapshots WHERE backup_id NOT IN (SELECT id FROM backups)")
            db.execute("DELETE FROM refs WHERE backup_id NOT IN (SELECT id FROM backups)")

        self._tx(drop)

    def forget(self, backup_ids: Iterable[str]) -> int:
        """Remove backups with their snapshots and references."""
        ids = list(backup_ids)

        def drop(db: Any) -> int:
            db.execute("DELETE FROM refs WHERE backup_id = ANY(%s)", (ids,))
            db.execute("DELETE FROM snapshots WHERE backup_id = ANY(%s)", (ids,))
            cur = db.execute("DELETE FROM backups WHERE id = ANY(%s)", (ids,))
            return int(cur.rowcount or 0)

        return self._tx(drop)

    def clear_tool_call(self, backup_id: str) -> None:
        """Drop a tool-call record that no longer reads back."""
        self._q("UPDATE backups SET tool_call=NULL WHERE id=%s", (backup_id,))

    def _backup_row(self, row: tuple[Any, ...], snaps: list[SnapshotRow]) -> BackupRow:
        problems: list[str] = []
        tool_call = None
        label = ""
        try:
            label = self.cipher.untext(row[2], "label") or ""
            if row[5]:
                tool_call = json.loads(self.cipher.untext(row[5], "tool_call") or "null")
        except Exception:
            problems.append("its label or tool_call record does not open with this key")
        return BackupRow(
            id=str(row[0]), created_at=float(row[1] or 0), label=label, kind=str(row[3]),
            tier=str(row[4]), tool_call=tool_call if isinstance(tool_call, dict) else None,
            session=row[6], parent_id=row[7], status=str(row[8]),
            stored_bytes=int(row[9] or 0), logical_bytes=int(row[10] or 0),
            seconds=float(row[11] or 0), snapshots=snaps,
            expected_snapshots=None if row[12] is None else int(row[12]),
            finished_at=None if row[13] is None else float(row[13]), problems=problems,
        )

    # ------------------------------------------------------------ leases and locks
    @contextmanager
    def lease(self, backup_id: str) -> Iterator[None]:
        """A session advisory lock held for the capture's life (dropped if the process dies)."""
        key = _lock_key(backup_id)
        self._q("SELECT pg_advisory_lock(%s, %s)", (_LEASE_NS, key))
        self._held[backup_id] = (_LEASE_NS, key)
        try:
            if self.on_lease is not None and not backup_id.startswith("writer-"):
                self.on_lease()
            yield
        finally:
            self._release(backup_id)

    def _release(self, name: str) -> None:
        held = self._held.pop(name, None)
        self._broken.discard(name)
        if held is not None:
            with contextlib.suppress(Exception):
                self._db.execute("SELECT pg_advisory_unlock(%s, %s)", held)

    def lease_intact(self, name: str) -> bool:
        """Whether this process has held lease ``name`` without a break since it took it.
        Checks the connection first: after a drop the lease is taken again and the answer
        is False (see :meth:`_reconnect`)."""
        self._q("SELECT 1")
        return name in self._held and name not in self._broken

    def lease_held(self, backup_id: str) -> bool:
        """Whether any session holds the lease (read from ``pg_locks``)."""
        return bool(self._q(
            "SELECT 1 FROM pg_locks WHERE locktype='advisory' AND classid=%s::oid"
            " AND objid=%s::oid AND objsubid=2 AND granted",
            (_LEASE_NS, _lock_key(backup_id) & 0xFFFFFFFF)))

    @contextmanager
    def pin(self, backup_id: str) -> Iterator[None]:
        """A session-level shared advisory lock (it ends with the process's session)."""
        self._q("SELECT pg_advisory_lock_shared(%s, %s)", (_PIN_NS, _lock_key(backup_id)))
        self._pins[backup_id] = self._pins.get(backup_id, 0) + 1
        try:
            yield
        finally:
            left = self._pins.pop(backup_id) - 1
            if left:
                self._pins[backup_id] = left
            with contextlib.suppress(Exception):
                self._db.execute("SELECT pg_advisory_unlock_shared(%s, %s)",
                                 (_PIN_NS, _lock_key(backup_id)))

    @contextmanager
    def unpinned(self, backup_id: str) -> Iterator[bool]:
        """The exclusive side of :meth:`pin`, tried once (a hash collision with another
        backup's pin answers False: it keeps a backup, never loses one)."""
        key = _lock_key(backup_id)
        if backup_id in self._pins or not self._q(
                "SELECT pg_try_advisory_lock(%s, %s)", (_PIN_NS, key))[0][0]:
            yield False
            return
        try:
            yield True
        finally:
            with contextlib.suppress(Exception):
                self._db.execute("SELECT pg_advisory_unlock(%s, %s)", (_PIN_NS, key))

    def stale_leases(self) -> list[str]:
        """Advisory locks leave nothing behind when their session ends."""
        return []

    def drop_stale_leases(self) -> None:
        """Nothing to drop (see :meth:`stale_leases`)."""

    @contextmanager
    def exclusive(self, name: str, *, wait: float = 0) -> Iterator[None]:
        """A store-wide advisory lock, waited for up to ``wait`` seconds."""
        key = _lock_key(name)
        deadline = time.monotonic() + wait
        pause = 0.02
        while not self._q("SELECT pg_try_advisory_lock(%s, %s)", (_LOCK_NS, key))[0][0]:
            if time.monotonic() >= deadline:
                raise StoreBusyError(self.where, name)
            time.sleep(pause)
            pause = min(pause * 2, 0.5)
        self._held[name] = (_LOCK_NS, key)
        try:
            yield
        finally:
            self._release(name)

    # ------------------------------------------------------------ restore journal
    def _restore_entry(self, r: tuple[Any, ...]) -> RestoreEntry:
        return RestoreEntry(int(r[0]), str(r[1]), self.cipher.untext(r[2], "only") or "",
                            r[3], str(r[4]), float(r[5]))

    def running_restore(self, backup_id: str, only: str) -> RestoreEntry | None:
        """The newest unfinished restore of ``backup_id`` with scope ``only``."""
        for r in self._q("SELECT id, backup_id, only_filter, undo_backup, status, started_at"
                         " FROM restores WHERE backup_id=%s AND status='running'"
                         " ORDER BY id DESC", (backup_id,)):
            entry = self._restore_entry(r)
            if entry.only == only:
                return entry
        return None

    def start_restore(self, backup_id: str, only: str, undo_backup: str | None) -> int:
        """Open a journal entry."""
        rows = self._q("INSERT INTO restores (backup_id, only_filter, undo_backup, started_at)"
                       " VALUES (%s,%s,%s,%s) RETURNING id",
                       (backup_id, self.cipher.text(only, "only"), undo_backup, time.time()),
                       retry=False)
        return int(rows[0][0])

    def finish_restore(self, restore_id: int, status: str) -> None:
        """Close a journal entry."""
        self._q("UPDATE restores SET status=%s, finished_at=%s WHERE id=%s",
                (status, time.time(), restore_id))

    def restores(self) -> list[RestoreEntry]:
        """Every journal entry, newest first."""
        return [self._restore_entry(r) for r in self._q(
            "SELECT id, backup_id, only_filter, undo_backup, status, started_at FROM restores"
            " ORDER BY id DESC")]

    # ------------------------------------------------------------ digest cache
    def cached_digest(self, dev: int, ino: int, size: int, mtime_ns: int,
                      ctime_ns: int) -> str | None:
        """Never: inode numbers are one machine's (the store keeps a local cache)."""
        return None

    def cache_digests(self, rows: list[tuple[int, int, int, int, int, str]]) -> None:
        """Nothing is cached here (see :meth:`cached_digest`)."""

    # ------------------------------------------------------------ trash
    def add_trash(self, backup_id: str, original: str, stored_at: str) -> None:
        """Record a path moved into a machine's trash."""
        c = self.cipher
        self._q("INSERT INTO trash (backup_id, original, stored_at) VALUES (%s,%s,%s)",
                (backup_id, c.text(original, "original"), c.text(stored_at, "stored_at")),
                retry=False)

    def trash(self) -> list[TrashEntry]:
        """Every trash entry."""
        c = self.cipher
        return [TrashEntry(int(r[0]), str(r[1]), c.untext(r[2], "original") or "",
                           c.untext(r[3], "stored_at") or "")
                for r in self._q("SELECT id, backup_id, original, stored_at FROM trash ORDER BY id")]

    def drop_trash(self, entry_ids: Iterable[int]) -> None:
        """Forget trash entries."""
        self._q("DELETE FROM trash WHERE id = ANY(%s)", (list(entry_ids),))

    # ------------------------------------------------------------ hidden register
    def hide_blob(self, generation: str, digest: str) -> None:
        """Register a blob as hidden under ``generation`` (phase one of deleting)."""
        self._q("INSERT INTO hidden_blobs VALUES (%s,%s,'hidden',%s) ON CONFLICT DO NOTHING",
                (self.cipher.token(digest), generation, time.time()))

    def bring_back(self, digest: str) -> bool:
        """Un-hide a blob no purge has claimed; True when this call did it."""
        return bool(self._q(
            "DELETE FROM hidden_blobs WHERE digest=%s AND state='hidden' AND generation != %s"
            " RETURNING digest", (self.cipher.token(digest), "damaged")))

    def unhide_blob(self, generation: str, digest: str) -> None:
        """Take a blob of ``generation`` off the register."""
        self._q("DELETE FROM hidden_blobs WHERE digest=%s AND generation=%s",
                (self.cipher.token(digest), generation))

    def hidden_blobs(self) -> dict[str, list[str]]:
        """Hidden (and being purged) blobs by generation."""
        out: dict[str, list[str]] = {}
        for token, gen in self._q("SELECT digest, generation FROM hidden_blobs"):
            out.setdefault(str(gen), []).append(self.cipher.untoken(str(token)))
        return out

    def claim_hidden(self, generation: str, digests: Iterable[str]) -> set[str]:
        """Mark still-hidden blobs as being purged, atomically; return those marked."""
        tokens = [self.cipher.token(d) for d in digests]
        rows = self._q("UPDATE hidden_blobs SET state='purging' WHERE generation=%s AND"
                       " state='hidden' AND digest = ANY(%s) RETURNING digest",
                       (generation, tokens))
        return {self.cipher.untoken(str(r[0])) for r in rows}

    def drop_claimed(self, generation: str) -> None:
        """Remove the purged rows of ``generation``."""
        self._q("DELETE FROM hidden_blobs WHERE generation=%s AND state='purging'", (generation,))

    # ------------------------------------------------------------ health
    def integrity_problems(self) -> list[str]:
        """What the database finds wrong: here, only that it cannot be reached."""
        try:
            self._q("SELECT 1")
        except RemoteUnavailableError as exc:
            return [str(exc)]
        return []


def _closure(start: str) -> str:
    """A query for the digests ``start`` selects and every blob they link to."""
    return (f"WITH RECURSIVE c(d) AS ({start}"
            " UNION SELECT l.child FROM links l JOIN c ON l.parent = c.d) SELECT d FROM c")


def reach_catalog(url: str, where: str) -> None:
    """Connect once and hang up: a precise error when the server cannot be used."""
    import psycopg

    try:
        psycopg.connect(url, autocommit=True, connect_timeout=5).close()
    except psycopg.OperationalError as exc:
        raise _connect_error(exc, where) from None


def _connect_error(exc: Exception, where: str) -> Exception:
    """One line for a failed connection or statement, never echoing a password."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    lower = text.lower()
    if "password authentication failed" in lower or "no password supplied" in lower:
        return StoreConfigError(
            f"the catalog at {where} refused the login — set the password in PGPASSWORD or "
            "~/.pgpass (or the PREIMAGE_CATALOG URL); nothing was written", where=where)
    if "does not exist" in lower and "database" in lower:
        return StoreConfigError(
            f"the catalog database at {where} does not exist — create it (createdb) and run "
            "`preimage store init`; nothing was written", where=where)
    for needle, reason in (("connection refused", "connection refused"),
                           ("timeout expired", "timed out"), ("timed out", "timed out"),
                           ("could not translate host name", "unknown host"),
                           ("server closed the connection", "connection closed"),
                           ("terminating connection", "connection closed")):
        if needle in lower:
            return RemoteUnavailableError(f"the catalog at {where}", reason)
    return RemoteUnavailableError(f"the catalog at {where}", re.sub(r"password=\S+", "", text))
