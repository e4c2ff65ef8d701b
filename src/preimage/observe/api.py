"""The Python API: supervise the tool functions of an in-process agent.

::

    from preimage.observe import observing

    with observing(session="run-42") as watch:
        result = watch.call(write_config, path, data)   # runs in a supervised child
        watch.run(["make", "clean"])
    watch.backups    # one observed backup ID per call that changed something

Each :meth:`Observer.call` runs the function in a forked child under
supervision (a process cannot supervise itself: the supervisor's own writes
into the store would stop on its own filter), pickles its return value back,
and re-raises its exception.  Without supervision on this system,
:func:`observing` raises :class:`SupervisionUnavailable` on entry, so a caller
can fall back to the layer's ``protect`` (which reads the call) knowingly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from preimage.observe.supervisor import Outcome, require, run_command, run_function
from preimage.store.store import Store


class Observer:
    """Supervises calls into one store and session; keeps every call's outcome."""

    def __init__(self, store: Store, session: str | None) -> None:
        self.store = store
        self.session = session
        self.outcomes: list[Outcome] = []

    @property
    def backups(self) -> list[str]:
        """The observed backups of the calls so far (calls that changed nothing have none)."""
        return [o.backup_id for o in self.outcomes if o.backup_id is not None]

    def call(self, fn: Callable[..., Any], *args: Any, label: str = "", **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` under supervision; its value, or its exception raised."""
        outcome = run_function(fn, *args, store=self.store, session=self.session,
                               label=label or getattr(fn, "__name__", "call"), **kwargs)
        self.outcomes.append(outcome)
        return outcome.value

    def run(self, argv: Sequence[str], *, label: str = "", **kwargs: Any) -> Outcome:
        """A command under supervision (see :func:`run_command`)."""
        outcome = run_command(argv, store=self.store, session=self.session, label=label,
                              **kwargs)
        self.outcomes.append(outcome)
        return outcome


@contextmanager
def observing(*, store: Store | None = None, session: str | None = None) -> Iterator[Observer]:
    """An :class:`Observer` for the block; a store it opened is closed at the end.

    Raises :class:`SupervisionUnavailable` when the system cannot supervise.
    """
    require()
    own = store is None
    st = Store() if store is None else store
    try:
        yield Observer(st, session)
    finally:
        if own:
            st.close()
