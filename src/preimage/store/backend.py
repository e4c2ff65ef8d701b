"""The store's catalog side: the rows a catalog keeps (backups, snapshots, restores, trash
entries), the :class:`Catalog` every catalog implements, and :class:`RecordingBlobs`, the
view of a blob store that records what one capture references.

A :class:`~preimage.Store` is one blob store (:mod:`preimage.interface.blobs`) plus one
catalog; the embedded default is :class:`~preimage.store.blobs.LocalBlobStore` with
:class:`~preimage.store.catalog.SqliteCatalog`, the shared one packed chunks with a
PostgreSQL catalog.  Deleting is two-phase, so a capture running in parallel never loses
a blob it reuses (``hide``, then ``purge_hidden`` once every capture running then ended)."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from preimage.interface.blobs import BlobProblem, BlobStore, Leftover, sha256_hex


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
    expected_snapshots: int | None = None   # recorded when the capture finished
    finished_at: float | None = None
    problems: list[str] = field(default_factory=list)   # rows that did not read back


@dataclass(frozen=True)
class RestoreEntry:
    """One restore in the journal."""

    id: int
    backup_id: str
    only: str
    undo_backup: str | None
    status: str     # running | done | failed | superseded
    started_at: float


@dataclass(frozen=True)
class TrashEntry:
    """A path a backup moved into the store's trash instead of deleting it."""

    id: int
    backup_id: str
    original: str
    stored_at: str


# The statuses a backup goes through.  ``open`` while its capture runs (and
# holds its lease); ``complete`` once every target is in; ``failed`` when the
# capture raised; ``abandoned`` when its process died with it open; ``damaged``
# when ``check --repair`` found a blob or document of it missing or corrupt;
# ``overlapped``: a capture after a call that ran on while the session's next call did
# (``preimage.engine.call_locks``) — whole, but no after-state of its call alone.
STATUSES = ("open", "complete", "failed", "abandoned", "damaged", "overlapped")


class Catalog(ABC):
    """Backups, their snapshots, the blobs each snapshot references, and the journal.

    Every method is one atomic step; several processes use one catalog at
    once.  A backup is ``open`` while its capture holds its :meth:`lease`;
    references are recorded with the snapshot, before the backup is complete.
    """

    # ------------------------------------------------------------ format
    @abstractmethod
    def format_version(self) -> int:
        """The store format this catalog is at (see ``docs/store.md``)."""

    @abstractmethod
    def set_format_version(self, version: int) -> None:
        """Record that the store is now at ``version``."""

    @abstractmethod
    def migrate_schema(self, to_version: int) -> None:
        """Bring the catalog's own tables to format ``to_version`` (idempotent)."""

    @abstractmethod
    def setting(self, key: str) -> str | None:
        """A stored setting (quotas, retention policy), or None."""

    @abstractmethod
    def set_setting(self, key: str, value: str | None) -> None:
        """Store (or, with None, remove) a setting."""

    # ------------------------------------------------------------ backups
    @abstractmethod
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

    @abstractmethod
    def add_snapshot(self, row: SnapshotRow, refs: Iterable[str] = ()) -> None:
        """Record one captured snapshot and every blob it references, in one step."""

    @abstractmethod
    def finish_backup(
        self, backup_id: str, *, status: str, stored_bytes: int, logical_bytes: int,
        seconds: float, snapshots: int | None = None,
    ) -> None:
        """Close a backup with its final status, sizes and number of snapshots."""

    @abstractmethod
    def set_status(self, backup_id: str, status: str, *, only_if: str | None = None) -> bool:
        """Change a backup's status (when it is ``only_if``); True when it changed."""

    @abstractmethod
    def resolve(self, ref: str) -> str:
        """``last``, a full ID or a unique prefix → the full ID.

        ``last`` is the newest complete backup that is not an undo backup;
        an ambiguous prefix raises :class:`~preimage.UsageError` listing candidates.
        """

    @abstractmethod
    def get(self, ref: str) -> BackupRow:
        """The backup ``ref`` with its snapshots."""

    @abstractmethod
    def list_backups(self, limit: int | None = 50) -> list[BackupRow]:
        """Backups, newest first (all of them when ``limit`` is None)."""

    @abstractmethod
    def count(self) -> int:
        """Number of backups."""

    def find_backups(self, *, kinds: tuple[str, ...] | None = None, status: str | None = None,
                     parent_id: str | None = None, session: str | None = None,
                     id_from: str | None = None, id_to: str | None = None,
                     limit: int | None = None) -> list[BackupRow]:
        """Backups newest first that are of one of ``kinds``, in ``status``, children of
        ``parent_id``, of ``session``, with IDs from ``id_from`` to ``id_to`` (inclusive) —
        each condition that is given; at most ``limit``.  (This reads every backup; a
        catalog with a query language asks it instead.)"""
        out: list[BackupRow] = []
        for row in self.list_backups(None):
            if (kinds is None or row.kind in kinds) and (status is None or row.status == status) \
                    and (parent_id is None or row.parent_id == parent_id) \
                    and (session is None or row.session == session) \
                    and (id_from is None or row.id >= id_from) \
                    and (id_to is None or row.id <= id_to):
                out.append(row)
                if limit is not None and len(out) >= limit:
                    break
        return out

    def by_tool_use_id(self, tool_use_id: str, kinds: tuple[str, ...]) -> BackupRow | None:
        """The newest backup of one of ``kinds`` whose tool call has ``tool_use_id``."""
        for row in self.find_backups(kinds=kinds):
            if row.tool_call and row.tool_call.get("tool_use_id") == tool_use_id:
                return row
        return None

    def latest_snapshot(self, target: str, connector: str) -> SnapshotRow | None:
        """The newest snapshot of ``target`` by ``connector`` in a complete backup."""
        for backup in self.list_backups(None):
            if backup.status == "complete":
                for row in backup.snapshots:
                    if row.target == target and row.connector == connector:
                        return row
        return None

    @abstractmethod
    def stored_since(self, when: float) -> int:
        """Bytes the backups finished after ``when`` added to the store."""

    @abstractmethod
    def refs(self, backup_id: str, idx: int | None = None) -> set[str]:
        """Blobs a backup (or one of its snapshots) references, directly or through
        the links of a blob it references (see :meth:`add_links`)."""

    def ref_digests(self, backup_id: str, idx: int) -> Iterator[str]:
        """What :meth:`refs` gives for one snapshot, each digest once, in digest order,
        read as it is iterated where the catalog can (a restore's check of a million
        blobs would otherwise hold them all); this default reads them whole."""
        yield from sorted(self.refs(backup_id, idx))

    @abstractmethod
    def referenced(self, *, skip_statuses: tuple[str, ...] = ()) -> set[str]:
        """Every blob a backup references (directly or through links), leaving out
        backups in ``skip_statuses`` (``prune`` skips ``failed`` and ``abandoned``:
        what they stored is garbage)."""

    @abstractmethod
    def ref_rows(self) -> Iterator[tuple[str, int, str]]:
        """Every ``(backup_id, idx, digest)`` reference, links followed (for ``stats``)."""

    @abstractmethod
    def add_refs(self, backup_id: str, idx: int, refs: Iterable[str]) -> None:
        """Add references to an existing snapshot (repair, migration)."""

    def add_links(self, parent: str, children: set[str]) -> set[str]:
        """Record that blob ``parent`` names the blobs ``children``, so that whatever
        references ``parent`` references them too (a chunk of a snapshot document
        names the file blobs of its items; an unchanged chunk is recorded once, not
        once per backup); return the children ``parent`` now links to.

        A link is a fact about the parent's bytes, so recording it again, or for
        a parent no backup references yet, is harmless.  A catalog that keeps no
        links returns an empty set: the caller records ``children`` as direct
        references of its snapshot.
        """
        return set()

    def drop_unused_links(self) -> int:
        """Forget the links of parents no backup references, but only while no backup
        is ``open`` (a capture records a chunk's links before its snapshot row); the
        number of links dropped.  ``prune`` calls it."""
        return 0

    @abstractmethod
    def forget(self, backup_ids: Iterable[str]) -> int:
        """Remove backups with their snapshots and references; return how many."""

    @abstractmethod
    def orphan_rows(self) -> list[str]:
        """Snapshot or reference rows whose backup is gone, each described."""

    @abstractmethod
    def drop_orphan_rows(self) -> None:
        """Delete the rows :meth:`orphan_rows` describes."""

    @abstractmethod
    def clear_tool_call(self, backup_id: str) -> None:
        """Drop a backup's tool-call record that no longer reads back."""

    # ------------------------------------------------------------ leases and locks
    @abstractmethod
    def lease(self, backup_id: str) -> AbstractContextManager[None]:
        """Held by the process capturing ``backup_id`` for as long as it captures.

        It must end by itself when the process dies (the local catalog uses
        ``flock``; a server catalog would use a session-scoped lock).
        """

    @abstractmethod
    def lease_held(self, backup_id: str) -> bool:
        """Whether a live process holds ``backup_id``'s lease."""

    #: The first pause between two looks at a held lease (it doubles up to half a second).
    lease_poll: float = 0.01

    def wait_lease(self, backup_id: str, timeout: float | None) -> bool:
        """Block until nobody holds the lease (True) or ``timeout`` passes (False), polling
        :meth:`lease_held`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = self.lease_poll
        while self.lease_held(backup_id):
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.5)
        return True

    @abstractmethod
    def pin(self, backup_id: str) -> AbstractContextManager[None]:
        """Held, shared, by every process reading ``backup_id`` (a restore, diff, score,
        undo or export) for as long as it reads it, so that no ``forget`` — by name, by a
        retention policy or by the quota — removes a backup while it is being read.

        Like a lease it must end by itself when the process dies; taking it waits while
        a ``forget`` holds :meth:`unpinned` (a moment), so a reader that got its pin
        and then finds the backup still in the catalog keeps it until it lets go.
        """

    @abstractmethod
    def unpinned(self, backup_id: str) -> AbstractContextManager[bool]:
        """Exclusive against :meth:`pin`, without waiting: True inside the block when
        nobody reads ``backup_id`` (and nobody can start to until the block ends), False
        when someone does.  ``forget`` removes a backup only inside such a block."""

    @abstractmethod
    def stale_leases(self) -> list[str]:
        """Backup ids whose lease record outlived its process (nothing holds it)."""

    @abstractmethod
    def drop_stale_leases(self) -> None:
        """Remove the records :meth:`stale_leases` lists."""

    @abstractmethod
    def exclusive(self, name: str, *, wait: float = 0) -> AbstractContextManager[None]:
        """One holder at a time store-wide (``prune``, ``upgrade``), waited for up to
        ``wait`` seconds; raises :class:`~preimage.StoreBusyError` when it stays taken."""

    # ------------------------------------------------------------ restore journal
    @abstractmethod
    def running_restore(self, backup_id: str, only: str) -> RestoreEntry | None:
        """The unfinished restore of ``backup_id`` with scope ``only``, if any."""

    @abstractmethod
    def start_restore(self, backup_id: str, only: str, undo_backup: str | None) -> int:
        """Open a journal entry; return its id."""

    @abstractmethod
    def finish_restore(self, restore_id: int, status: str) -> None:
        """Close a journal entry (done, failed or superseded)."""

    @abstractmethod
    def restores(self) -> list[RestoreEntry]:
        """Every journal entry, newest first."""

    # ------------------------------------------------------------ digest cache
    @abstractmethod
    def cached_digest(
        self, dev: int, ino: int, size: int, mtime_ns: int, ctime_ns: int
    ) -> str | None:
        """A digest recorded for an unchanged source, if any."""

    @abstractmethod
    def cache_digests(self, rows: list[tuple[int, int, int, int, int, str]]) -> None:
        """Remember digests by identity and stat (batched)."""

    def cached_digests(self, dev: int, inodes: Sequence[int]
                       ) -> dict[int, tuple[int, int, int, str]] | None:
        """:meth:`cached_digest` for many inodes at once (``None``: not batched here)."""
        return None

    # ------------------------------------------------------------ trash
    @abstractmethod
    def add_trash(self, backup_id: str, original: str, stored_at: str) -> None:
        """Record a path moved into the store's trash by ``backup_id``."""

    def add_trash_many(self, backup_id: str, moved: Iterable[tuple[str, str]]) -> None:
        """Record several ``(original, stored_at)`` paths of ``backup_id`` (a catalog that
        can should do it in one transaction: a supervised ``rm -rf`` links thousands)."""
        for original, stored_at in moved:
            self.add_trash(backup_id, original, stored_at)

    @abstractmethod
    def trash(self) -> list[TrashEntry]:
        """Every trash entry."""

    @abstractmethod
    def drop_trash(self, entry_ids: Iterable[int]) -> None:
        """Forget trash entries whose files were reclaimed."""

    # ------------------------------------------------------------ health
    @abstractmethod
    def integrity_problems(self) -> list[str]:
        """What the database itself finds wrong with its storage (empty when sound)."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection."""


class RecordingBlobs(BlobStore):
    """A view of a blob store that records every digest a capture touches.

    The engine hands one to each connector's ``capture``: everything written,
    found by ``exists`` or read is a reference of that snapshot, so ``prune``
    keeps it — including blobs named only inside other blobs (a git listing's
    object files).  Bytes written twice within one capture are hashed but
    stored once.
    """

    def __init__(self, inner: BlobStore) -> None:
        super().__init__()
        self.inner = inner
        self.digest_cache = inner.digest_cache
        self.touched: set[str] = set()
        #: Called before every write: raises when the capture has been given up
        #: (:mod:`preimage.engine.deadline`), so an abandoned capture stops writing.
        self.given_up: Callable[[], None] = lambda: None

    def _count(self, before: tuple[int, int, int]) -> None:
        self.bytes_written += self.inner.bytes_written - before[0]
        self.bytes_seen += self.inner.bytes_seen - before[1]
        self.blobs_written += self.inner.blobs_written - before[2]

    def _state(self) -> tuple[int, int, int]:
        return self.inner.bytes_written, self.inner.bytes_seen, self.inner.blobs_written

    def put_bytes(self, data: bytes) -> str:
        return self.put_hashed(data, sha256_hex(data))

    def put_hashed(self, data: bytes, digest: str) -> str:
        self.given_up()
        if digest in self.touched and self.inner.stored_size(digest):
            self.bytes_seen += len(data)
            return digest
        before = self._state()
        digest = self.inner.put_hashed(data, digest)
        self._count(before)
        self.touched.add(digest)
        return digest

    def put_chunks(self, chunks: Iterable[bytes]) -> str:
        self.given_up()
        before = self._state()
        digest = self.inner.put_chunks(chunks)
        self._count(before)
        self.touched.add(digest)
        return digest

    def put_clone(self, fd: int) -> tuple[str, int] | None:
        self.given_up()
        before = self._state()
        got = self.inner.put_clone(fd)
        self._count(before)
        if got is not None:
            self.touched.add(got[0])
        return got

    def clone_source(self, digest: str) -> int | None:
        return self.inner.clone_source(digest)

    def chunks(
        self, digest: str, *, backup_id: str | None = None, path: str | None = None
    ) -> Iterator[bytes]:
        self.touched.add(digest)
        return self.inner.chunks(digest, backup_id=backup_id, path=path)

    def verify(self, digest: str, *, backup_id: str | None = None, path: str | None = None) -> None:
        self.touched.add(digest)
        self.inner.verify(digest, backup_id=backup_id, path=path)

    def exists(self, digest: str) -> bool:
        if self.inner.exists(digest):
            self.touched.add(digest)
            return True
        return False

    def will_check(self, digests: list[str]) -> None:
        self.inner.will_check(digests)

    def present(self, digest: str) -> bool:
        if self.inner.present(digest):
            self.touched.add(digest)
            return True
        return False

    def stored_size(self, digest: str) -> int:
        return self.inner.stored_size(digest)

    def flush(self) -> None:
        self.inner.flush()

    def raw_size(self, digest: str) -> int | None:
        return self.inner.raw_size(digest)

    def digests(self) -> Iterator[str]:
        return self.inner.digests()

    def inspect(self, digest: str, *, read_data: bool) -> BlobProblem | None:
        return self.inner.inspect(digest, read_data=read_data)

    def hide(self, digest: str, generation: str) -> bool:
        raise NotImplementedError("a capture never deletes")

    def unhide(self, digest: str, generation: str) -> None:
        raise NotImplementedError("a capture never deletes")

    def hidden(self) -> dict[str, list[str]]:
        return self.inner.hidden()

    def purge_hidden(self, generation: str, digests: Iterable[str]) -> int:
        raise NotImplementedError("a capture never deletes")

    def set_aside(self, digest: str) -> None:
        raise NotImplementedError("a capture never deletes")

    def leftovers(self) -> list[Leftover]:
        return self.inner.leftovers()

    def remove_leftovers(self, names: Iterable[str]) -> int:
        raise NotImplementedError("a capture never deletes")

    def __getattr__(self, name: str) -> Any:
        # backend-specific extras (the local store's ``path``, ``root``) stay reachable
        return getattr(self.inner, name)


def backup_conditions(kinds: tuple[str, ...] | None, status: str | None, parent_id: str | None,
                      session: str | None, id_from: str | None, id_to: str | None,
                      mark: str) -> tuple[str, list[Any]]:
    """The ``WHERE`` clause of :meth:`Catalog.find_backups` and its arguments (``mark``: the
    driver's placeholder)."""
    parts: list[str] = []
    args: list[Any] = []
    if kinds is not None:
        parts.append(f"kind IN ({','.join([mark] * len(kinds))})" if kinds else "FALSE")
        args.extend(kinds)
    for column, op, value in (("status", "=", status), ("parent_id", "=", parent_id),
                              ("session", "=", session), ("id", ">=", id_from),
                              ("id", "<=", id_to)):
        if value is not None:
            parts.append(f"{column} {op} {mark}")
            args.append(value)
    return (" WHERE " + " AND ".join(parts) if parts else ""), args
