"""Claude Code: ``PreToolUse`` / ``PostToolUse`` / ``PostToolUseFailure`` command hooks.

Payload (stdin): ``session_id``, ``transcript_path``, ``cwd``, ``permission_mode``,
``hook_event_name``, ``tool_name``, ``tool_input``, ``tool_use_id``; the post events add
``tool_response`` (an object) and ``duration_ms``, the failure event ``error``.
Tools: ``Bash``, ``Write``/``Edit``/``MultiEdit``/``NotebookEdit`` (``file_path``), and
MCP tools named ``mcp__<server>__<tool>``.

Answer (stdout, exit 0): ``hookSpecificOutput.additionalContext`` reaches the model;
``permissionDecision`` ``allow``/``deny``/``ask`` with ``permissionDecisionReason``;
``updatedInput`` replaces the tool input (with ``allow``; with no decision the rewritten
call goes through the user's own permission rules, as the original would have);
``systemMessage`` is shown to the user.  The command's ``timeout`` is in seconds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from preimage.layer.config import LayerConfig
from preimage.layer.decision import Action, Decision
from preimage.layer.harnesses._base import Harness, Scope, home
from preimage.layer.harnesses.hook import HookOutcome


class ClaudeCode(Harness):
    """Anthropic's Claude Code."""

    name = "claude-code"
    title = "Claude Code"
    binary = "claude"
    pre_events = ("PreToolUse",)
    post_events = ("PostToolUse",)
    failure_events = ("PostToolUseFailure",)
    can_ask = True

    def answer(self, decision: Decision, config: LayerConfig, *,
               permission_mode: str | None = None) -> HookOutcome:
        return HookOutcome(json.dumps(self.answer_doc(decision, config,
                                                      permission_mode=permission_mode)))

    def answer_doc(self, decision: Decision, config: LayerConfig, *,
                   permission_mode: str | None = None) -> dict[str, Any]:
        """The JSON answer as a dict (``{}`` when there is nothing to say).

        A rewritten call carries no decision: the harness applies ``updatedInput`` and
        then asks its own permission rules, exactly as it would have for the original
        call — a hook never approves a destructive call by itself, and never blocks one
        the user allowed (``ask`` would leave an unattended run unable to delete at all).
        ``--approve``, or a session already in ``bypassPermissions`` mode, answers
        ``allow``.
        """
        if not self.worth_saying(decision):
            return {}
        specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
        out: dict[str, Any] = {"hookSpecificOutput": specific}
        context = decision.additional_context
        if context:
            specific["additionalContext"] = context
        if decision.action is Action.REWRITE and decision.updated_input is not None:
            if config.approve or permission_mode == "bypassPermissions":
                specific["permissionDecision"] = "allow"
                specific["permissionDecisionReason"] = (
                    "preimage rewrote the call into a reversible form")
            specific["updatedInput"] = decision.updated_input
        elif decision.protected and config.approve:
            specific["permissionDecision"] = "allow"
            specific["permissionDecisionReason"] = f"backed up as {decision.backup_id}"
        if decision.error:
            out["systemMessage"] = self.failure_message(decision)
            refusal = self.refusal(config)
            if refusal:
                specific["permissionDecision"] = refusal
                specific["permissionDecisionReason"] = out["systemMessage"]
                specific.pop("updatedInput", None)
        return out

    def settings_path(self, scope: Scope, project: Path) -> Path:
        if scope == "user":
            base = os.environ.get("CLAUDE_CONFIG_DIR")
            return (Path(base) if base else home() / ".claude") / "settings.json"
        name = "settings.local.json" if scope == "local" else "settings.json"
        return project / ".claude" / name

    def scopes(self) -> tuple[Scope, ...]:
        return ("project", "local", "user")
