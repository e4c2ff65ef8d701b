"""Codex CLI: ``PreToolUse`` / ``PostToolUse`` command hooks from ``hooks.json``.

Payload (stdin): ``session_id``, ``turn_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, ``model``, ``permission_mode``, ``tool_name``, ``tool_input``,
``tool_use_id``; ``PostToolUse`` adds ``tool_response`` as a *string*.  Tools: ``Bash``
(``{"command"}``, whatever the model called — ``exec_command``, ``shell``), ``apply_patch``
(``{"command": PATCH}``; ``Write``/``Edit`` match it too), MCP tools ``mcp__<server>__<tool>``.

Answer: Codex reads the Claude Code shape but rejects, as an invalid hook output,
``permissionDecision: "allow"`` without ``updatedInput``, ``permissionDecision: "ask"``,
and ``permissionDecisionReason`` without a decision — so ``--approve`` has no effect
here and ``on_failure: ask`` denies (Codex hooks cannot hand a call to the user).
Hooks must be trusted in Codex (``/hooks``) before they run.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from preimage.layer.completion import Status, ToolResult
from preimage.layer.config import LayerConfig
from preimage.layer.decision import Action, Decision
from preimage.layer.harnesses._base import Harness, Scope, _shorten, home
from preimage.layer.hook import HookOutcome

_EXIT = re.compile(r"(?:Process exited with code|Exit code:)\s*(-?\d+)")


class Codex(Harness):
    """OpenAI's Codex CLI."""

    name = "codex"
    title = "Codex CLI"
    binary = "codex"
    pre_events = ("PreToolUse",)
    post_events = ("PostToolUse",)

    def result(self, payload: dict[str, Any], *, failed: bool) -> ToolResult:
        response = payload.get("tool_response")
        text = response if isinstance(response, str) else json.dumps(response, default=str)
        code = _EXIT.search(text or "")
        status: Status = "unknown" if code is None else (
            "ok" if int(code.group(1)) == 0 else "error")
        return ToolResult(status=status, output=_shorten(text))

    def answer(self, decision: Decision, config: LayerConfig, *,
               permission_mode: str | None = None) -> HookOutcome:
        if not self.worth_saying(decision):
            return HookOutcome("{}")
        specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
        out: dict[str, Any] = {"hookSpecificOutput": specific}
        if decision.additional_context:
            specific["additionalContext"] = decision.additional_context
        if decision.action is Action.REWRITE and decision.updated_input is not None:
            specific["permissionDecision"] = "allow"
            specific["permissionDecisionReason"] = "preimage rewrote the call into a reversible form"
            specific["updatedInput"] = decision.updated_input
        if decision.error:
            out["systemMessage"] = self.failure_message(decision)
            if self.refusal(config):
                specific["permissionDecision"] = "deny"
                specific["permissionDecisionReason"] = out["systemMessage"]
                specific.pop("updatedInput", None)
        return HookOutcome(json.dumps(out))

    def settings_path(self, scope: Scope, project: Path) -> Path:
        if scope == "user":
            base = os.environ.get("CODEX_HOME")
            return (Path(base) if base else home() / ".codex") / "hooks.json"
        return project / ".codex" / "hooks.json"
