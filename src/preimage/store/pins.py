"""Read pins of the local catalog: a shared ``flock`` on ``locks/read-<id>.lock`` held by
every process reading a backup, and the exclusive, non-waiting test ``forget`` makes
under it before it removes one.

``flock`` ends with its process, so a reader killed mid-restore pins nothing.  Taking a
pin waits while a ``forget`` holds the exclusive side (one catalog transaction long); a
reader then looks the backup up again and finds it gone, instead of reading a backup
being removed.  The file is left in place (unlinking it could split a reader and a
``forget`` onto two different files); ``forget`` unlinks it under its exclusive lock,
when no reader can be on it and the backup is gone.
"""

from __future__ import annotations

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


@contextmanager
def pinned_file(locks: Path, backup_id: str) -> Iterator[None]:
    """A shared pin on ``backup_id`` for the block (see the module docstring)."""
    path = _path(locks, backup_id)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_SH)
        try:   # a forget may have unlinked the file between open and flock
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        yield
    finally:
        os.close(fd)


@contextmanager
def unpinned_file(locks: Path, backup_id: str) -> Iterator[bool]:
    """True inside the block when nobody pins ``backup_id`` (and nobody can until it ends)."""
    path = _path(locks, backup_id)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                yield False
                return
            raise
        try:
            yield True
        finally:
            # the backup is gone or kept; a reader that opens the file later makes a new one
            try:
                os.unlink(path)
            except OSError:
                pass
    finally:
        os.close(fd)
