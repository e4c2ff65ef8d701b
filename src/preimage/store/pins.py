"""Read pins of the local catalog: a shared ``flock`` on ``locks/read-<id>.lock`` held by
every process reading a backup, and the exclusive, non-waiting test ``forget`` makes
under it before it removes one.

``flock`` ends with its process, so a reader killed mid-restore pins nothing.  Taking a
pin waits while a ``forget`` holds the exclusive side (one catalog transaction long); a
reader then looks the backup up again and finds it gone, instead of reading a backup
being removed.  Whoever holds the file exclusively last — the last reader out, or a
``forget`` — unlinks it; a reader checks, once it holds its pin, that the file it locked
is still the one at the path, so no two processes ever lock different files.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from preimage.interface.errors import UsageError


def _path(locks: Path, backup_id: str) -> Path:
    # the ID names a file: anything but a plain backup ID is refused, not resolved
    if not backup_id or not backup_id.isalnum() or not backup_id.isascii():
        raise UsageError(f"{backup_id!r} is not a backup ID")
    return locks / f"read-{backup_id}.lock"



def locked_file(path: Path, op: int) -> int:
    """``path`` opened (created 0600) and locked with ``flock`` ``op``: the descriptor.

    Whoever releases such a lock may unlink the file, so a lock taken on a file that was
    unlinked between the open and the ``flock`` is dropped and taken again on the file now
    at ``path``.  Raises :class:`OSError` as ``flock`` does (``EWOULDBLOCK`` with
    ``LOCK_NB``), the descriptor closed."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, op)
        except OSError:
            os.close(fd)
            raise
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


@contextmanager
def pinned_file(locks: Path, backup_id: str) -> Iterator[None]:
    """A shared pin on ``backup_id`` for the block (see the module docstring)."""
    path = _path(locks, backup_id)
    fd = locked_file(path, fcntl.LOCK_SH)
    try:
        yield
    finally:
        try:   # the last reader out removes the file (a reader coming in checks the inode)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                os.unlink(path)
        except OSError:
            pass
        os.close(fd)


@contextmanager
def unpinned_file(locks: Path, backup_id: str) -> Iterator[bool]:
    """True inside the block when nobody pins ``backup_id`` (and nobody can until it ends)."""
    path = _path(locks, backup_id)
    try:
        fd = locked_file(path, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            yield False
            return
        raise
    try:
        yield True
    finally:
        # the backup is gone or kept; a reader that opens the path later makes a new file
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)
