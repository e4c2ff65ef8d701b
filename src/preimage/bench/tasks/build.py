"""The shapes every task family builds: a task document, a shell call, an MCP call, a
later destructive step."""

from __future__ import annotations

from typing import Any


def task(
    tid: str, family: str, category: str, system: str, request: str, *,
    call: dict[str, Any], lost: list[str], survive: str, setup: dict[str, Any] | None = None,
    before: list[dict[str, Any]] | None = None, then: list[dict[str, Any]] | None = None,
    requires: list[str] | None = None, cwd: str = "{home}/proj", needs: str = "",
) -> dict[str, Any]:
    """One task document (validated later as a :class:`Scenario`)."""
    return {
        "id": tid, "title": request, "task": request, "family": family,
        "category": category, "system": system, "requires": requires or [], "cwd": cwd,
        "setup": setup or {}, "before": before or [], "call": call, "then": then or [],
        "expected_lost": lost, "notes": survive, "needs": needs,
        "source": f"regret suite, family {family}",
    }


def bash(command: str) -> dict[str, Any]:
    """A shell call as the harness's shell tool sends it."""
    return {"tool": "Bash", "input": {"command": command}}


def mcp(server: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """An MCP call as the harness names it."""
    return {"tool": f"mcp__{server}__{tool}", "input": arguments}


def regret(call: dict[str, Any], lost: list[str]) -> dict[str, Any]:
    """A later step that destroys more (a second regret moment)."""
    return {**call, "regret": True, "lost": lost}
