"""A capture that outlives whoever waited for it is abandoned, not completed.

The backup layer's hook gives a capture ``--timeout`` seconds; then it tells the harness
the call is *not* backed up and lets the call run.  A capture still going on after that
would read the call's changes into a backup that calls itself the state before the call
— and ``restore last`` would bring that mix back.  So the waiter hands the capture an
event (:func:`given_up_when`) and sets it when it stops waiting; the capture checks it
before each blob it writes and once more just before it marks the backup complete, and
stops there: the backup is marked ``abandoned`` and a prune that does not wait reclaims
what it wrote (:func:`preimage.engine.capture.capture`).

A capture whose last check passed before the event was set read everything before the
waiter gave up, so before the call ran: it completes, and is a true before-image.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from preimage.interface.errors import CaptureAbandonedError

_event: ContextVar[threading.Event | None] = ContextVar("preimage_capture_given_up",
                                                         default=None)


@contextmanager
def given_up_when(event: threading.Event) -> Iterator[None]:
    """Every capture this thread runs in the block is abandoned once ``event`` is set."""
    token = _event.set(event)
    try:
        yield
    finally:
        _event.reset(token)


def check_for(backup_id: str) -> Callable[[], None]:
    """The check a capture of ``backup_id`` makes: raises :class:`CaptureAbandonedError`
    once its waiter has given up (nothing when nobody set a deadline)."""
    event = _event.get()
    if event is None:
        return lambda: None

    def check() -> None:
        if event.is_set():
            raise CaptureAbandonedError(backup_id)

    return check
