"""The blob store as a connector sees it: content-addressed bytes written, found and read by
sha256 digest (:class:`BlobStore`), and the shapes its methods return.

The store's implementations (:mod:`preimage.store.blobs`, the packed shared store in
:mod:`preimage.store.packs`) subclass it; connectors only ever hold one."""

from __future__ import annotations

import errno
import hashlib
import io
import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol

CHUNK = 1 << 20


class DigestCache(Protocol):
    """Remembers a source's digest by identity and stat (file inode, message UID)."""

    def cached_digest(
        self, dev: int, ino: int, size: int, mtime_ns: int, ctime_ns: int
    ) -> str | None: ...

    def cache_digests(self, rows: list[tuple[int, int, int, int, int, str]]) -> None: ...

    def cached_digests(self, dev: int, inodes: Sequence[int]
                       ) -> dict[int, tuple[int, int, int, str]] | None:
        """``cached_digest`` for many inodes of one device at once: inode → ``(size,
        mtime_ns, ctime_ns, digest)`` of those it holds (the caller compares the stat);
        ``None`` when this cache cannot batch (ask ``cached_digest`` one by one)."""
        ...


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

    def will_read(self, digests: list[str]) -> None:
        """A hint: the caller reads these blobs next, about in this order (a restore's
        next few hundred files).  A backend may look them up or fetch them ahead; what
        it reads still verifies as ``chunks`` does.  The default does nothing."""
        del digests

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

    def will_check(self, digests: list[str]) -> None:
        """A hint: the caller asks :meth:`exists` of these blobs next (an unchanged
        re-capture, the previous snapshot's next few hundred files).  A backend may look
        them up at once; each answer is still its own.  The default does nothing."""
        del digests

    def present(self, digest: str) -> bool:
        """Whether the blob is there, for a reader that verifies it as it reads and can
        undo what it wrote (a backend that cannot tell without reading verifies)."""
        return self.exists(digest)

    def missing(self, digests: Iterable[str]) -> str | None:
        """The first of ``digests`` that is not :meth:`present`, or None."""
        return next((d for d in digests if not self.present(d)), None)

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


def sha256_hex(data: bytes) -> str:
    """The digest the store names ``data`` by."""
    return hashlib.sha256(data).hexdigest()
