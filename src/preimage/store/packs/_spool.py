"""Verified plaintext of blobs on this machine's disk, for the life of one process.

A restore verifies every blob before its first write, then writes them.  On
an object store that is two downloads, two decryptions and two decompressions
of everything — unless the first pass keeps what it verified.  The spool is
that: each blob, once it hashed to its name, as a region of one file (mode 0600,
in a 0700 directory of its own under the cache), so the write pass reads local
bytes instead of fetching and opening them again.  One file, not one per blob:
creating a file is what a restore's write pass does once per file it restores,
and on a busy filesystem it costs far more than appending to one (the inode
allocator's search, measured as most of a 512 MiB restore's system time).

It is bounded (``PREIMAGE_SPOOL_MB``, 4096 by default, and never more than
half the free space of its filesystem): a blob that does not fit is verified
all the same and fetched again when it is read.  The directory is removed when
the store is closed; one a killed process left (its lock file is no longer
held) is removed by the next spool opened in the same cache.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

from preimage.interface.errors import BlobCorruptError


def _limit() -> int:
    """``$PREIMAGE_SPOOL_MB`` in bytes, read when a spool is made (a resident process serves
    callers with different settings, so nothing is read at import)."""
    return int(os.environ.get("PREIMAGE_SPOOL_MB", "4096")) << 20
_BLOCK = 1 << 20


class SpoolWriter:
    """One blob being written into its region of the spool; :meth:`commit` once it
    verified."""

    def __init__(self, spool: Spool, digest: str, size: int, offset: int) -> None:
        self._spool = spool
        self._digest = digest
        self._size = size
        self._offset = offset
        self._written = 0

    def write(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        if self._written + len(view) > self._size:   # never into the next blob's region
            raise BlobCorruptError(self._digest)
        fd = self._spool.fd
        while view:
            n = os.pwrite(fd, view, self._offset + self._written)
            view = view[n:]
            self._written += n

    def commit(self) -> None:
        """The bytes written hashed to the digest: make them readable."""
        if self._written == self._size:
            self._spool._committed(self._digest, self._offset, self._size)

    def abort(self) -> None:
        """The blob failed (or the write did): forget it (its region stays unused)."""


class Spool:
    """One file of verified blobs, created on first use in a directory under ``parent``."""

    def __init__(self, parent: Path, limit: int | None = None) -> None:
        limit = _limit() if limit is None else limit
        self._parent = parent
        self._limit = limit
        self._lock = threading.Lock()
        self._used = 0
        self._root: Path | None = None
        self._lock_fd: int | None = None
        self._fd: int | None = None
        self._ready: dict[str, tuple[int, int]] = {}   # digest -> (offset, size)
        self._broken = limit <= 0

    @property
    def root(self) -> Path:
        assert self._root is not None
        return self._root

    @property
    def fd(self) -> int:
        """The spool file, open for reading and writing."""
        assert self._fd is not None
        return self._fd

    def _open(self) -> bool:
        if self._root is not None:
            return True
        if self._broken:
            return False
        try:
            self._parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            _sweep(self._parent)
            root = self._parent / f"{os.getpid()}-{secrets.token_hex(4)}"
            root.mkdir(mode=0o700)
            fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            data = os.open(root / "blobs", os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                           0o600)
            st = os.statvfs(root)
        except OSError:
            self._broken = True
            return False
        self._root, self._lock_fd, self._fd = root, fd, data
        self._limit = min(self._limit, st.f_bavail * st.f_frsize // 2)
        return True

    def writer(self, digest: str, size: int) -> SpoolWriter | None:
        """A writer for ``digest`` (``size`` bytes), or None when it does not fit."""
        with self._lock:
            if digest in self._ready or not self._open() or self._used + size > self._limit:
                return None
            offset = self._used   # regions are handed out end to end, never reused
            self._used += size
        return SpoolWriter(self, digest, size, offset)

    def _committed(self, digest: str, offset: int, size: int) -> None:
        with self._lock:
            self._ready[digest] = (offset, size)

    def has(self, digest: str) -> bool:
        """Whether the verified bytes of ``digest`` are here."""
        return digest in self._ready

    def read(self, digest: str) -> SpooledBlob | None:
        """The spooled bytes of ``digest`` (None when not spooled).

        They hashed to ``digest`` as they were written; a spool file cut short since
        raises :class:`BlobCorruptError` where the blob's bytes run out, as a blob would.
        """
        where = self._ready.get(digest)
        if where is None or self._fd is None:
            return None
        return SpooledBlob(self._fd, digest, *where)

    def close(self) -> None:
        """Remove the directory and everything in it."""
        root, fd, data = self._root, self._lock_fd, self._fd
        self._root, self._lock_fd, self._fd = None, None, None
        self._ready.clear()
        self._used = 0
        if data is not None:
            os.close(data)
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)
        if fd is not None:
            os.close(fd)


class SpooledBlob:
    """A spooled blob: an iterator of its bytes in blocks, which can also copy itself
    into a file descriptor inside the kernel (:meth:`copy_into`) — a restore's write
    pass then moves no byte through Python."""

    def __init__(self, fd: int, digest: str, offset: int, size: int) -> None:
        self._fd = fd
        self._digest = digest
        self._offset = offset
        self._size = size
        self._blocks: Iterator[bytes] | None = None

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        if self._blocks is None:
            self._blocks = _blocks(self._fd, self._digest, self._offset, self._size)
        return next(self._blocks)

    def close(self) -> None:
        """Stop reading (the spool file stays open for other blobs)."""
        self._blocks = iter(())

    def copy_into(self, fd: int) -> None:
        """Write every byte at ``fd``'s position (copy_file_range, else sendfile, else
        reads and writes); :class:`BlobCorruptError` when the spool file is cut short."""
        copied = 0
        try:
            while copied < self._size:
                n = _kernel_copy(self._fd, fd, self._size - copied, self._offset + copied)
                if n == 0:
                    break
                copied += n
        except OSError as exc:
            if copied or exc.errno not in _NO_KERNEL_COPY:
                raise
            for block in _blocks(self._fd, self._digest, self._offset, self._size):
                view = memoryview(block)
                while view:
                    view = view[os.write(fd, view):]
            return
        if copied != self._size:
            raise BlobCorruptError(self._digest)


# copy_file_range refuses some pairs of filesystems (and old kernels lack it); then
# sendfile, then a plain copy.
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF}


def _kernel_copy(src: int, dst: int, count: int, offset: int) -> int:
    count = min(count, 1 << 30)
    try:
        return os.copy_file_range(src, dst, count, offset)
    except OSError as exc:
        if exc.errno not in _NO_KERNEL_COPY:
            raise
    return os.sendfile(dst, src, offset, count)


def _blocks(fd: int, digest: str, offset: int, size: int) -> Iterator[bytes]:
    seen = 0
    while seen < size:
        block = os.pread(fd, min(_BLOCK, size - seen), offset + seen)
        if not block:
            break
        seen += len(block)
        yield block
    if seen != size:
        raise BlobCorruptError(digest)


def _sweep(parent: Path) -> None:
    """Remove spool directories of processes that are gone (their lock is free)."""
    for entry in parent.iterdir():
        try:
            fd = os.open(entry / ".lock", os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:   # killed between making the directory and locking it
            if not _alive(entry.name.partition("-")[0]):
                shutil.rmtree(entry, ignore_errors=True)
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        shutil.rmtree(entry, ignore_errors=True)
        os.close(fd)


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except OSError:
        return True
    return True
