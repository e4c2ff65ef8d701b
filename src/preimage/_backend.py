"""The store's backend interface: a blob side and a catalog side.

A :class:`~preimage.Store` is one :class:`BlobStore` (content-addressed bytes)
plus one :class:`Catalog` (backups, their snapshots and the blobs each one
references, the restore journal, settings).  The embedded default is
:class:`~preimage._blobs.LocalBlobStore` (zstd files under ``blobs/``) with
:class:`~preimage._catalog.SqliteCatalog`; another backend (packed chunks on an
object store, a shared SQL catalog) implements the same two classes and
everything above them — connectors, capture, restore, ``forget``, ``prune``,
``check``, ``stats`` — works unchanged.  The contract each method keeps is
written in its docstring and in ``docs/store.md``.

Deleting is two-phase so that a capture running in parallel never loses a
blob it reuses (see :mod:`preimage._lifecycle`): ``hide`` takes a blob out of
sight for new captures (a capture that looks for it either gets it back with
:meth:`BlobStore.exists` / ``put_*`` or writes it anew), and only after every
capture that was running when it was hidden has finished does ``purge_hidden``
delete what is still unreferenced.
"""

from __future__ import annotations

import errno
import hashlib
import io
import itertools
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol

CHUNK = 1 << 20


class DigestCache(Protocol):
    """Remembers a source's digest by identity and stat (file inode, message UID)."""

    def cached_digest(
        self, dev: int, ino: int, size: int, mtime_ns: int, ctime_ns: int
    ) -> str | None: ...

    def cache_digests(self, rows: list[tuple[int, int, int, int, int, str]]) -> None: ...


@dataclass(frozen=True)
class BlobProblem:
    """Something wrong with one stored blob, as :meth:`BlobStore.inspect` finds it."""

    digest: str
    kind: str      # "missing" | "corrupt"
    detail: str


@dataclass(frozen=True)
class Leftover:
    """Bytes a killed writer left behind (a partial upload, a scratch area)."""

    name: str
    size: int


# ioctl(dest_fd, FICLONE, src_fd) makes dest share every extent of src (XFS, btrfs);
# these errors mean "not here" (another filesystem, or none that clones): copy instead
FICLONE = 0x40049409
NO_CLONE = frozenset((errno.EXDEV, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOTTY,
                      errno.ENOSYS, errno.EPERM, errno.EBADF))


class BlobStore(ABC):
    """Content-addressed bytes: a blob is named by the sha256 of its uncompressed bytes.

    Writers call ``put_*`` and get the digest; readers stream ``chunks`` and
    must treat an exception at any point as "discard what you wrote" (the hash
    is checked at the end).  Identical bytes are stored once.  ``exists`` is the
    dedup test: it answers True only for a blob believed sound, so a damaged
    blob is rewritten by the next capture of the same bytes instead of being
    trusted.
    """

    def __init__(self) -> None:
        self.bytes_written = 0   # compressed bytes of blobs new to this store
        self.bytes_seen = 0      # uncompressed bytes handed to put_*
        self.blobs_written = 0
        self.digest_cache: DigestCache | None = None
        # the store's per-file cap: a connector records a larger source as
        # uncaptured instead of reading it (None: no cap)
        self.max_file_size: int | None = None
        # previous(target) -> the items of that target's newest snapshot (set by the
        # engine for each capture): a connector may reuse an entry whose source
        # provably did not change since, instead of reading it again
        self.previous: Callable[[str], Iterable[Any] | None] | None = None

    # ------------------------------------------------------------ what connectors use
    @abstractmethod
    def put_bytes(self, data: bytes) -> str:
        """Store ``data``; return its digest."""

    def put_hashed(self, data: bytes, digest: str) -> str:
        """:meth:`put_bytes` for a caller that has just hashed ``data`` (``digest`` is
        its sha256, computed by the caller itself): a backend may skip hashing again."""
        return self.put_bytes(data)

    @abstractmethod
    def put_chunks(self, chunks: Iterable[bytes]) -> str:
        """Store the concatenation of ``chunks`` without holding it in memory."""

    def put_file(self, fileobj: BinaryIO) -> str:
        """Store everything readable from ``fileobj``, streaming when it is large."""
        head = fileobj.read(CHUNK)
        if len(head) < CHUNK:
            return self.put_bytes(head)
        return self.put_chunks(itertools.chain([head], iter(lambda: fileobj.read(CHUNK), b"")))

    def put_clone(self, fd: int) -> tuple[str, int] | None:
        """Store the open regular file ``fd`` by sharing its extents (a reflink), when
        the backend and filesystem can: ``(digest, size)``; None and nothing stored
        when they cannot (the caller reads the file with ``put_file``)."""
        return None

    def clone_source(self, digest: str) -> int | None:
        """An open descriptor a restore may clone the blob's bytes from (it owns and
        closes it), or None: read the blob with ``chunks``."""
        return None

    @abstractmethod
    def chunks(
        self, digest: str, *, backup_id: str | None = None, path: str | None = None
    ) -> Iterator[bytes]:
        """Yield the blob's bytes; raise ``BlobMissingError`` / ``BlobCorruptError``
        (at the end, when the hash does not match)."""

    def get_bytes(
        self, digest: str, *, backup_id: str | None = None, path: str | None = None
    ) -> bytes:
        """The whole blob, verified."""
        buf = io.BytesIO()
        for chunk in self.chunks(digest, backup_id=backup_id, path=path):
            buf.write(chunk)
        return buf.getvalue()

    def verify(self, digest: str, *, backup_id: str | None = None, path: str | None = None) -> None:
        """Raise ``BlobMissingError`` / ``BlobCorruptError`` unless the blob is sound.

        Backends may answer from a cache of earlier full verifications that
        they can prove still hold (the local store: same file, same size,
        inode, mtime and ctime, verified after the file was last changed).
        """
        for _ in self.chunks(digest, backup_id=backup_id, path=path):
            pass

    def verify_many(self, digests: Iterable[str], *, backup_id: str | None = None,
                    path: str | None = None) -> None:
        """:meth:`verify` every blob of ``digests``; the first failure raises (its
        ``digest`` names the blob).  A backend may verify several at once and keep
        what it read for the reads that follow (a restore verifies, then writes)."""
        for digest in digests:
            self.verify(digest, backup_id=backup_id, path=path)

    @abstractmethod
    def exists(self, digest: str) -> bool:
        """Whether the blob is present and sound enough to reuse instead of rewriting."""

    def present(self, digest: str) -> bool:
        """Whether the blob is there, for a reader that verifies it as it reads and can
        undo what it wrote (a backend that cannot tell without reading verifies)."""
        return self.exists(digest)

    @abstractmethod
    def stored_size(self, digest: str) -> int:
        """Bytes the blob takes in the store (0 when missing)."""

    def flush(self) -> None:
        """Persist what the backend buffers: make every blob put so far durable and
        visible to other processes.

        The engine calls it after each snapshot, so before a backup is marked
        complete.  The local store writes its verification records; a packed
        store uploads its last pack and the index naming it.
        """
        return

    def close(self) -> None:
        """Release what the blob side holds (upload threads, leases); idempotent."""
        return

    @abstractmethod
    def raw_size(self, digest: str) -> int | None:
        """The blob's uncompressed size (None when missing or unreadable)."""

    # ------------------------------------------------------------ what lifecycle uses
    @abstractmethod
    def digests(self) -> Iterator[str]:
        """Every blob present (not hidden)."""

    @abstractmethod
    def inspect(self, digest: str, *, read_data: bool) -> BlobProblem | None:
        """``None`` when the blob is there (and, with ``read_data``, hashes right)."""

    @abstractmethod
    def hide(self, digest: str, generation: str) -> bool:
        """Phase one of deleting: take the blob out of sight under ``generation``.

        A hidden blob is still readable by ``chunks`` (a restore racing a prune
        keeps working) and comes back when a capture asks for it through
        ``exists`` or ``put_*``.  Returns False when the blob was not there.
        """

    @abstractmethod
    def unhide(self, digest: str, generation: str) -> None:
        """Put a hidden blob back (a backup turned out to reference it)."""

    @abstractmethod
    def hidden(self) -> dict[str, list[str]]:
        """Hidden blobs by generation."""

    @abstractmethod
    def purge_hidden(self, generation: str, digests: Iterable[str]) -> int:
        """Phase two: delete these hidden blobs of ``generation``; return bytes freed.

        A blob a capture brought back in the meantime is not deleted.
        """

    @abstractmethod
    def set_aside(self, digest: str) -> None:
        """Move a damaged blob out of the way, so the next capture of its bytes rewrites it."""

    @abstractmethod
    def leftovers(self) -> list[Leftover]:
        """Partial writes no live writer holds any more."""

    @abstractmethod
    def remove_leftovers(self, names: Iterable[str]) -> int:
        """Delete leftovers listed earlier (skipping any a writer holds again); bytes freed."""


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
# when ``check --repair`` found a blob or document of it missing or corrupt.
STATUSES = ("open", "complete", "failed", "abandoned", "damaged")


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

    # ------------------------------------------------------------ trash
    @abstractmethod
    def add_trash(self, backup_id: str, original: str, stored_at: str) -> None:
        """Record a path moved into the store's trash by ``backup_id``."""

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


def sha256_hex(data: bytes) -> str:
    """The digest the store names ``data`` by."""
    return hashlib.sha256(data).hexdigest()


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

    def _count(self, before: tuple[int, int, int]) -> None:
        self.bytes_written += self.inner.bytes_written - before[0]
        self.bytes_seen += self.inner.bytes_seen - before[1]
        self.blobs_written += self.inner.blobs_written - before[2]

    def _state(self) -> tuple[int, int, int]:
        return self.inner.bytes_written, self.inner.bytes_seen, self.inner.blobs_written

    def put_bytes(self, data: bytes) -> str:
        return self.put_hashed(data, sha256_hex(data))

    def put_hashed(self, data: bytes, digest: str) -> str:
        if digest in self.touched and self.inner.stored_size(digest):
            self.bytes_seen += len(data)
            return digest
        before = self._state()
        digest = self.inner.put_hashed(data, digest)
        self._count(before)
        self.touched.add(digest)
        return digest

    def put_chunks(self, chunks: Iterable[bytes]) -> str:
        before = self._state()
        digest = self.inner.put_chunks(chunks)
        self._count(before)
        self.touched.add(digest)
        return digest

    def put_clone(self, fd: int) -> tuple[str, int] | None:
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
