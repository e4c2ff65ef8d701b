"""One tool call of the scripted model, in a real harness's own names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class NoHarnessToolError(Exception):
    """A task's step has no tool of the harness or a published MCP server to carry it."""


@dataclass(frozen=True)
class HarnessCall:
    """One tool call the scripted model makes, in the harness's own names."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    kind: str = "function"          # Codex: "tool_search" for its client-side search
    namespace: str | None = None    # Codex: the MCP server's namespace
    # The arguments, read from the previous tool result (the ids a listing returned), as a
    # model reads them; ``None``: ``arguments`` as they are.
    resolve: Callable[[str], dict[str, Any]] | None = field(default=None, compare=False)
