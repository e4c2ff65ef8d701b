"""One tool call of the scripted model, in a real harness's own names."""

from __future__ import annotations

import json
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


def answer_text(text: str) -> str:
    """The text of a tool's answer as the server wrote it, from what the harness passed on:
    Claude Code's ``{"result": "…"}``, MCP content parts ``[{"type": "text", "text":
    "…"}]``, Codex's ``Wall time: …`` / ``Output:`` lines before them."""
    prefix, sep, rest = text.partition("\nOutput:\n")
    if sep and prefix.startswith("Wall time"):
        text = rest
    try:
        return _unwrapped(json.loads(text))
    except ValueError:
        return text


def _unwrapped(doc: Any) -> str:
    if isinstance(doc, str):
        return doc
    if isinstance(doc, list):
        return "\n".join(_unwrapped(part) for part in doc)
    if isinstance(doc, dict):
        for key in ("result", "text", "content", "output"):
            if key in doc:
                return _unwrapped(doc[key])
    return ""
