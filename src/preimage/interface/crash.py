"""Crash points for the crash-injection tests: die at the N-th pass of a named point.

``PREIMAGE_CRASH_AT=blob:3`` makes the process kill itself (SIGKILL, no
cleanup, exactly as ``kill -9`` would) the third time it reaches
``point("blob")``.  Points sit where a real crash does the most damage: a
blob written but not yet renamed into place (``blob``), a catalog transaction
not yet committed (``catalog``), a file about to be restored
(``restore-write``), a backup about to be forgotten (``forget``), a blob about
to be deleted by ``prune`` (``prune-delete``).  A test that sets ``plan``
directly can also only count the passes (``plan = ("", 0)``), to choose where
to kill next time.  ``name:N:stop`` stops the process there instead (SIGSTOP, as a
scheduler that never gives it the CPU again would): a test can then do what it likes
to the store while the process holds everything it held, and let it go on
(SIGCONT).  Unset, a point costs one comparison.
"""

from __future__ import annotations

import os
import signal

counts: dict[str, int] = {}
plan: tuple[str, int] | None = None
signal_to_send = {"now": signal.SIGKILL}   # SIGSTOP for ``name:N:stop``
_read = False


def _load() -> tuple[str, int] | None:
    spec = os.environ.get("PREIMAGE_CRASH_AT", "")
    name, _, rest = spec.partition(":")
    nth, _, how = rest.partition(":")
    signal_to_send["now"] = signal.SIGSTOP if how == "stop" else signal.SIGKILL
    if not name:
        return None
    try:
        return name, max(int(nth or "1"), 1)
    except ValueError:
        return None


def arm(name: str, nth: int) -> None:
    """Die at the ``nth`` pass of ``name`` from now on (``("", 0)``: only count)."""
    global plan, _read
    plan, _read = (name, nth), True
    counts.clear()


def point(name: str) -> None:
    """Count a pass of crash point ``name``; die here when the plan says so."""
    global plan, _read
    if not _read:
        plan, _read = _load(), True
    if plan is None:
        return
    counts[name] = counts.get(name, 0) + 1
    if plan[0] == name and counts[name] == plan[1]:
        os.kill(os.getpid(), signal_to_send["now"])
