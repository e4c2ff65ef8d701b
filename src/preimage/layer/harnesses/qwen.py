"""Qwen Code: ``PreToolUse`` / ``PostToolUse`` / ``PostToolUseFailure`` command hooks.

Qwen Code is a fork of Gemini CLI with Claude Code's hook events.  Payload (stdin):
``session_id``, ``cwd``, ``permission_mode``, ``hook_event_name``, ``tool_name``,
``tool_input``, ``tool_use_id``; ``PostToolUse`` adds ``tool_response`` and
``duration_ms``, ``PostToolUseFailure`` ``error``.  Tools keep Gemini CLI's names
(``run_shell_command`` with ``directory``, ``write_file``, ``edit``), mapped here to the
harness-neutral ones.

Answer (stdout, exit 0): ``permissionDecision`` ``deny`` with ``permissionDecisionReason``
blocks the call; ``hookSpecificOutput.additionalContext`` reaches the model only from
``PostToolUse`` (``PreToolUse``'s is logged and dropped), so the backup ID is told after
the call, as in Gemini CLI.  Unlike Claude Code, Qwen Code's
``PreToolUse`` ignores ``updatedInput`` (it is read only from ``PermissionRequest`` hooks),
so a call the layer would rewrite into a reversible form is refused with the rewritten
command for the model to run instead (a harness that ran the original would lose what the
rewrite kept), and an ``rm`` is copied before the call, not moved into the trash.  Qwen
Code runs a call whose hook failed, so ``ask`` denies.  Timeouts are in seconds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig
from preimage.layer.deciding.completion import Completion
from preimage.layer.decision import Action, Decision
from preimage.layer.harnesses._base import Harness, Scope, home
from preimage.layer.harnesses.hook import HookOutcome

# Qwen Code's tool → the harness-neutral name the rules know.
TOOLS = {
    "run_shell_command": "Bash", "write_file": "Write", "edit": "Edit",
    "notebook_edit": "NotebookEdit", "read_file": "Read", "list_directory": "LS",
    "glob": "Glob", "grep_search": "Grep", "web_fetch": "WebFetch", "web_search": "WebSearch",
    "todo_write": "TodoWrite",
}


class Qwen(Harness):
    """Alibaba's Qwen Code."""

    name = "qwen"
    title = "Qwen Code"
    binary = "qwen"
    pre_events = ("PreToolUse",)
    post_events = ("PostToolUse",)
    answer_after_tells = True   # its note after the call names the undo it allows
    failure_events = ("PostToolUseFailure",)
    applies_rewrites = False   # PreToolUse's updatedInput is ignored

    def call(self, payload: dict[str, Any]) -> ToolCall:
        raw = ToolCall.from_hook_payload(payload, harness=self.name)
        name = TOOLS.get(raw.tool, raw.tool)
        args = dict(raw.input)
        if name == "Bash":
            folder = args.pop("directory", None) or args.pop("dir_path", None)
            if isinstance(folder, str) and folder:
                args["workdir"] = os.path.normpath(os.path.join(raw.cwd, folder))
        elif "file_path" not in args and "absolute_path" in args:
            args["file_path"] = args.pop("absolute_path")
        raw.tool, raw.input = name, args
        return raw

    def answer(self, decision: Decision, config: LayerConfig, *,
               permission_mode: str | None = None) -> HookOutcome:
        if not self.worth_saying(decision):
            return HookOutcome("{}")
        specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
        out: dict[str, Any] = {"hookSpecificOutput": specific}
        if decision.error:
            out["systemMessage"] = self.failure_message(decision)
            if self.refusal(config):
                specific["permissionDecision"] = "deny"
                specific["permissionDecisionReason"] = out["systemMessage"]
        elif decision.action is Action.REWRITE and decision.updated_input is not None:
            command = decision.updated_input.get("command")
            specific["permissionDecision"] = "deny"
            specific["permissionDecisionReason"] = (
                "preimage: run this reversible form of the command instead "
                f"(Qwen Code cannot rewrite a call): {command}")
        if len(specific) == 1:   # only the event's name: nothing to decide
            del out["hookSpecificOutput"]
        return HookOutcome(json.dumps(out))

    def answer_after(self, completion: Completion) -> HookOutcome:
        if not completion.note:
            return HookOutcome("{}")
        return HookOutcome(json.dumps({"hookSpecificOutput": {
            "hookEventName": "PostToolUse", "additionalContext": completion.note}}))

    def settings_path(self, scope: Scope, project: Path) -> Path:
        if scope == "user":
            return home() / ".qwen" / "settings.json"
        return project / ".qwen" / "settings.json"
