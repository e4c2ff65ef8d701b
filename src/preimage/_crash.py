"""Crash points for the crash-injection tests: die at the N-th pass of a named point.

``PREIMAGE_CRASH_AT=blob:3`` makes the process kill itself (SIGKILL, no
cleanup, exactly as ``kill -9`` would) the third time it reaches
``point("blob")``.  Points sit where a real crash does the most damage: a
blob written but not yet renamed into place, a catalog step, a file half
restored, a blob about to be deleted by ``prune``.  Unset, a point costs one
dictionary lookup.
"""

from __future__ import annotations

import os
import signal

_counts: dict[str, int] = {}
_plan: tuple[str, int] | None = None
_read = False


def _load() -> tuple[str, int] | None:
    spec = os.environ.get("PREIMAGE_CRASH_AT", "")
    name, _, nth = spec.partition(":")
    if not name:
        return None
    try:
        return name, max(int(nth or "1"), 1)
    except ValueError:
        return None


def point(name: str) -> None:
    """Count a pass of crash point ``name``; die here when the plan says so."""
    global _plan, _read
    if not _read:
        _plan, _read = _load(), True
    if _plan is None or _plan[0] != name:
        return
    _counts[name] = _counts.get(name, 0) + 1
    if _counts[name] == _plan[1]:
        os.kill(os.getpid(), signal.SIGKILL)
