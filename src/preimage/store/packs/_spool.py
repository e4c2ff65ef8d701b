"""Verified plaintext of blobs on this machine's disk, for the life of one process.

A restore verifies every blob before its first write, then writes them.  On
an object store that is two downloads, two decryptions and two decompressions
of everything — unless the first pass keeps what it verified.  The spool is
that: each blob, once it hashed to its name, as one file (mode 0600, in a
0700 directory of its own under the cache), so the write pass reads local
bytes instead of fetching and opening them again.

It is bounded (``PREIMAGE_SPOOL_MB``, 4096 by default, and never more than
half the free space of its filesystem): a blob that does not fit is verified
all the same and fetched again when it is read.  The directory is removed when
the store is closed; one a killed process left (its lock file is no longer
held) is removed by the next spool opened in the same cache.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from preimage.interface.errors import BlobCorruptError


def _limit() -> int:
    """``$PREIMAGE_SPOOL_MB`` in bytes, read when a spool is made (a resident process serves
    callers with different settings, so nothing is read at import)."""
    return int(os.environ.get("PREIMAGE_SPOOL_MB", "4096")) << 20
_BLOCK = 1 << 20


class SpoolWriter:
    """One blob being written into the spool; :meth:`commit` once it verified."""

    def __init__(self, spool: Spool, digest: str, size: int, fd: int, tmp: Path) -> None:
        self._spool = spool
        self._digest = digest
        self._size = size
        self._fd = fd
        self._tmp = tmp

    def write(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def commit(self) -> None:
        """The bytes written hashed to the digest: make them readable."""
        os.close(self._fd)
        os.replace(self._tmp, self._spool.root / self._digest)
        self._spool._committed(self._digest, self._size)

    def abort(self) -> None:
        """The blob failed (or the write did): forget it."""
        with contextlib.suppress(OSError):
            os.close(self._fd)
        with contextlib.suppress(OSError):
            self._tmp.unlink()
        self._spool._release(self._size)


class Spool:
    """A directory of verified blobs, created on first use under ``parent``."""

    def __init__(self, parent: Path, limit: int | None = None) -> None:
        limit = _limit() if limit is None else limit
        self._parent = parent
        self._limit = limit
        self._lock = threading.Lock()
        self._used = 0
        self._root: Path | None = None
        self._lock_fd: int | None = None
        self._ready: dict[str, int] = {}   # digest -> size
        self._broken = limit <= 0

    @property
    def root(self) -> Path:
        assert self._root is not None
        return self._root

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
            st = os.statvfs(root)
        except OSError:
            self._broken = True
            return False
        self._root, self._lock_fd = root, fd
        self._limit = min(self._limit, st.f_bavail * st.f_frsize // 2)
        return True

    def writer(self, digest: str, size: int) -> SpoolWriter | None:
        """A writer for ``digest`` (``size`` bytes), or None when it does not fit."""
        with self._lock:
            if digest in self._ready or not self._open() or self._used + size > self._limit:
                return None
            self._used += size
        tmp = self.root / f".{digest}.{secrets.token_hex(4)}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except OSError:
            self._release(size)
            return None
        return SpoolWriter(self, digest, size, fd, tmp)

    def _committed(self, digest: str, size: int) -> None:
        with self._lock:
            self._ready[digest] = size

    def _release(self, size: int) -> None:
        with self._lock:
            self._used -= size

    def has(self, digest: str) -> bool:
        """Whether the verified bytes of ``digest`` are here."""
        return digest in self._ready

    def read(self, digest: str) -> SpooledBlob | None:
        """The spooled bytes of ``digest`` (None when not spooled).

        They hashed to ``digest`` as they were written; a file that no longer has the
        size written raises :class:`BlobCorruptError` at its end, as a blob would.
        """
        size = self._ready.get(digest)
        if size is None:
            return None
        try:
            fh = open(self.root / digest, "rb")  # noqa: SIM115 - closed by SpooledBlob
        except OSError:
            return None
        return SpooledBlob(fh, digest, size)

    def close(self) -> None:
        """Remove the directory and everything in it."""
        root, fd = self._root, self._lock_fd
        self._root, self._lock_fd = None, None
        self._ready.clear()
        self._used = 0
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)
        if fd is not None:
            os.close(fd)


class SpooledBlob:
    """A spooled blob: an iterator of its bytes in blocks, which can also copy itself
    into a file descriptor inside the kernel (:meth:`copy_into`) — a restore's write
    pass then moves no byte through Python."""

    def __init__(self, fh: BinaryIO, digest: str, size: int) -> None:
        self._fh = fh
        self._digest = digest
        self._size = size
        self._blocks: Iterator[bytes] | None = None

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        if self._blocks is None:
            self._blocks = _blocks(self._fh, self._digest, self._size)
        return next(self._blocks)

    def close(self) -> None:
        """Release the spool file (reading stops)."""
        self._fh.close()

    def copy_into(self, fd: int) -> None:
        """Write every byte at ``fd``'s position (copy_file_range, else sendfile, else
        reads and writes); :class:`BlobCorruptError` when the spool file is cut short."""
        with self._fh:
            src = self._fh.fileno()
            copied = 0
            try:
                while copied < self._size:
                    n = _kernel_copy(src, fd, self._size - copied)
                    if n == 0:
                        break
                    copied += n
            except OSError as exc:
                if copied or exc.errno not in _NO_KERNEL_COPY:
                    raise
                for block in _blocks(self._fh, self._digest, self._size):
                    view = memoryview(block)
                    while view:
                        view = view[os.write(fd, view):]
                return
            if copied != self._size or os.read(src, 1):
                raise BlobCorruptError(self._digest)


# copy_file_range refuses some pairs of filesystems (and old kernels lack it); then
# sendfile, then a plain copy.
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF}


def _kernel_copy(src: int, dst: int, count: int) -> int:
    count = min(count, 1 << 30)
    try:
        return os.copy_file_range(src, dst, count)
    except OSError as exc:
        if exc.errno not in _NO_KERNEL_COPY:
            raise
    return os.sendfile(dst, src, None, count)


def _blocks(fh: BinaryIO, digest: str, size: int) -> Iterator[bytes]:
    seen = 0
    with fh:
        while block := fh.read(_BLOCK):
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
