"""The locks a hook session's capture after a call holds while it runs.

The decision service answers some post-call events before it captures the state after the
call (``answer_first`` in :func:`preimage.layer.harnesses.hook.handle`).  While that
capture runs it holds its session's lock, one of 256 files in the store's
``locks/sessions/`` (a session's name hashed; two sessions sharing one at most wait for
each other's capture).  The session's next call that may change anything waits for it,
and so do ``restore`` and ``undo`` for every session, so neither writes a target while a
capture of it is still reading — nor reverts a call whose after-state is not recorded yet.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from pathlib import Path

#: Seconds ``restore`` and ``undo`` wait at most for captures after calls still running.
CAPTURE_WAIT = 60.0


def _folder(home: Path) -> Path:
    return home / "locks" / "sessions"


def _digest(session: str) -> str:
    return hashlib.sha256(session.encode("utf-8", "surrogateescape")).hexdigest()


def _lock(home: Path, session: str) -> Path:
    return _folder(home) / f"{_digest(session)[:2]}.lock"


def _late(home: Path, session: str) -> Path:
    return _folder(home) / f"{_digest(session)}.late"


def _flock(fd: int, how: int, within: float) -> bool:
    """``flock(fd, how)``, waiting at most ``within`` seconds for it."""
    deadline = time.monotonic() + within
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
        except OSError:
            return False


def hold_session(home: Path, session: str, within: float) -> int | None:
    """Hold ``session``'s lock in the store at ``home`` (an open descriptor; closing it
    lets go).  ``None`` when it could not be taken within ``within`` seconds, or when
    there is no store at ``home`` yet (its folders are the store's to make, 0700): then
    nothing may be captured late."""
    path = _lock(home, session)
    try:
        for folder in (home / "locks", path.parent):   # never the home itself
            folder.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    if not _flock(fd, fcntl.LOCK_EX, within):
        os.close(fd)
        return None
    return fd


def _wait(path: Path, deadline: float) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:   # never made: no capture of it was ever put off
        return True
    try:
        return _flock(fd, fcntl.LOCK_SH, max(0.0, deadline - time.monotonic()))
    finally:
        os.close(fd)


def wait_for_session(home: Path, session: str, within: float) -> bool:
    """Wait until no capture after an earlier call of ``session`` is running (at most
    ``within`` seconds); False when one still was."""
    return _wait(_lock(home, session), time.monotonic() + within)


def mark_late(home: Path, session: str) -> None:
    """Say that ``session``'s next call runs without waiting for the capture after its
    previous one (see the module docstring).  The mark is taken back at once when no
    capture holds the lock any more: one that ended before this call runs saw nothing
    of it."""
    mark = _late(home, session)
    try:
        os.close(os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600))
        os.utime(mark)
    except OSError:
        return
    if _wait(_lock(home, session), 0.0):
        mark.unlink(missing_ok=True)


def overlapped_since(home: Path, session: str, started: float) -> bool:
    """Whether ``session``'s next call ran without waiting for the capture after a call
    whose lock was taken at ``started`` (``time.time()``) and is still held: a mark made
    since.  The mark is taken away either way."""
    mark = _late(home, session)
    try:
        made = mark.stat().st_mtime
        mark.unlink()
    except OSError:
        return False
    return made >= started


def wait_for_sessions(home: Path, within: float) -> bool:
    """Wait until no capture after a call is running in the store at ``home``, whatever
    its session (at most ``within`` seconds); False when one still was."""
    deadline = time.monotonic() + within
    try:
        names = sorted(os.listdir(_folder(home)))
    except OSError:
        return True
    return all(_wait(_folder(home) / name, deadline) for name in names
               if name.endswith(".lock"))


__all__ = ["CAPTURE_WAIT", "hold_session", "mark_late", "overlapped_since", "wait_for_session",
           "wait_for_sessions"]
