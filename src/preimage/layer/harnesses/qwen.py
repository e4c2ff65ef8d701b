"""Qwen Code: ``PreToolUse`` / ``PostToolUse`` / ``PostToolUseFailure`` command hooks.

Qwen Code is a fork of Gemini CLI with Claude Code's hook events.  Payload (stdin):
``session_id``, ``cwd``, ``permission_mode``, ``hook_event_name``, ``tool_name``,
``tool_input``, ``tool_use_id``; ``PostToolUse`` adds ``tool_response`` and
``duration_ms``, ``PostToolUseFailure`` ``error``.  Tools keep Gemini CLI's names
(``run_shell_command`` with ``directory``, ``write_file``, ``edit``), mapped here to the
harness-neutral ones; MCP tools are ``mcp__<server>__<tool>`` already (the server read from
Qwen Code's own settings, :mod:`preimage.layer.mcp_servers`).

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
import re
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
        if raw.tool.startswith("mcp__"):
            raw.tool = _mcp_tool(raw.tool, raw.cwd)
            return raw
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
            from preimage.layer.mcp_servers import qwen_home

            return qwen_home(os.environ, home()) / "settings.json"
        return project / ".qwen" / "settings.json"


def _mcp_tool(tool: str, cwd: str) -> str:
    """``mcp__<server>__<tool>`` with the server as Qwen Code's settings name it.

    Qwen Code names an MCP tool ``mcp__<server>__<tool>``; a name with any character but
    letters, digits, ``_`` and ``-``, or longer than 63, has those made ``_``, is cut to
    55 and gets ``_`` and a hash of the whole name: a server named ``shop.db`` calls
    ``mcp__shop_db__write_query_0911wmf``.  The layer finds the server's definition by
    its own name, so that name is put back, and the tool's where the hash proves it."""
    from preimage.layer.mcp_servers import server_names

    names = server_names("qwen", cwd, str(home()))
    if tool[len("mcp__"):].partition("__")[0] in names:
        return tool
    for name in sorted(names, key=len, reverse=True):
        prefix = re.sub(r"[^A-Za-z0-9_-]", "_", f"mcp__{name}__")
        if tool.startswith(prefix):
            rest = tool[len(prefix):]
            if len(rest) > 8 and rest[-8] == "_" \
                    and _name_hash(f"mcp__{name}__{rest[:-8]}") == rest[-7:]:
                rest = rest[:-8]
            return f"mcp__{name}__{rest}"
    return tool


def _name_hash(name: str) -> str:
    """Qwen Code's ``stableToolNameHash``: FNV-1a over UTF-16 code units, base 36."""
    value = 2166136261
    units = name.encode("utf-16-le")
    for k in range(0, len(units), 2):
        value = ((value ^ int.from_bytes(units[k:k + 2], "little")) * 16777619) & 0xFFFFFFFF
    digits = ""
    while value:
        value, d = divmod(value, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[d] + digits
    return digits.rjust(7, "0")
