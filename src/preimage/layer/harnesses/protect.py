"""The Python API for agents that run their tools in-process.

>>> import preimage
>>> with preimage.protect(preimage.ToolCall.shell("rm -rf build")) as guard:
...     subprocess.run(["rm", "-rf", "build"])           # runs after the backup
>>> guard.backup_id                                       # preimage restore <id>

>>> @preimage.protected("mcp__pg__execute_sql")          # or protected() for the function name
... def execute_sql(sql: str) -> str: ...

``protect(call)`` backs up what ``call`` will change (:meth:`BackupLayer.before`)
before the ``with`` body runs and records how the body ended
(:meth:`BackupLayer.after`).  When the backup fails it raises
:class:`~preimage.UnprotectedCallError` under ``on_failure: deny`` (or ``ask``: an
in-process call has nobody to ask) and otherwise lets the body run, with the reason
in ``guard.decision.error`` and a warning.  A rewrite the layer proposes
(``rm`` → move to the store's trash) is in ``guard.decision.updated_input``; the body
decides whether to use it.
"""

from __future__ import annotations

import functools
import inspect
import os
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from preimage.interface.errors import PreimageError
from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig
from preimage.layer.deciding.completion import Completion, ToolResult
from preimage.layer.decision import Decision

P = ParamSpec("P")
R = TypeVar("R")


class UnprotectedCallError(PreimageError):
    """The backup before a tool call failed and the settings say not to run it."""

    def __init__(self, call: ToolCall, reason: str) -> None:
        super().__init__(f"{call.tool}: not run, the backup failed — {reason}")
        self.call = call
        self.reason = reason


class UnprotectedCallWarning(UserWarning):
    """A tool call ran although its backup failed (``on_failure: allow``)."""


@dataclass
class Guard:
    """What :func:`protect` did: the decision before the call and the completion after it."""

    call: ToolCall
    decision: Decision
    completion: Completion | None = None

    @property
    def backup_id(self) -> str | None:
        """The backup holding the state before the call (``None`` when nothing was taken)."""
        return self.decision.backup_id


@contextmanager
def protect(call: ToolCall, *, config: LayerConfig | None = None,
            layer: Any = None) -> Iterator[Guard]:
    """Back up what ``call`` will change, run the ``with`` body, record how it ended.

    Raises :class:`UnprotectedCallError` before the body runs when the backup failed
    and ``on_failure`` is ``deny`` or ``ask``.
    """
    from preimage.layer.deciding.backup_layer import BackupLayer

    backup_layer: BackupLayer = layer or BackupLayer(config=config)
    if call.harness == "generic":
        call.harness = "python"
    decision = backup_layer.before(call)
    guard = Guard(call, decision)
    if decision.error:
        if backup_layer.config.on_failure != "allow":
            backup_layer.after(call, ToolResult("error", error=decision.error), decision)
            raise UnprotectedCallError(call, decision.error)
        warnings.warn(f"preimage: {call.tool} is NOT backed up — {decision.error}",
                      UnprotectedCallWarning, stacklevel=3)
    started = time.perf_counter()
    try:
        yield guard
    except BaseException as exc:
        guard.completion = backup_layer.after(call, ToolResult(
            "error", round((time.perf_counter() - started) * 1000, 1), error=repr(exc)), decision)
        raise
    guard.completion = backup_layer.after(call, ToolResult(
        "ok", round((time.perf_counter() - started) * 1000, 1)), decision)


def protected(tool: str | None = None, *, config: LayerConfig | None = None,
              ) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a tool function so each call is backed up first.

    The call the layer sees is ``ToolCall(tool or the function's name, its arguments
    by name, cwd)``: name the tool as the rules know it (``Bash`` with a ``command``
    argument, ``Write`` with ``file_path``, ``mcp__<server>__<tool>``).
    """

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(fn)
        name = tool or fn.__name__

        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            call = ToolCall(name, dict(bound.arguments), os.getcwd(), harness="python")
            with protect(call, config=config):
                return fn(*args, **kwargs)

        return run

    return wrap
