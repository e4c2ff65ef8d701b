"""Gemini CLI: ``BeforeTool`` / ``AfterTool`` command hooks in ``settings.json``.

Payload (stdin): ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``,
``timestamp``, ``tool_name``, ``tool_input`` (and ``mcp_context`` for MCP tools);
``AfterTool`` adds ``tool_response`` (``llmContent``, ``returnDisplay``, ``error``).  There
is no call id, so a call is matched to its after-event by tool and input.

Tools are mapped to the harness-neutral names: ``run_shell_command`` → ``Bash``
(``dir_path`` → ``workdir``), ``write_file`` → ``Write``, ``replace`` → ``Edit``, the
reading tools to their Claude Code names, MCP tools to ``mcp__<server>__<tool>``.

Answer: ``decision: "deny"`` with ``reason`` blocks the call and the reason reaches the
model; ``hookSpecificOutput.tool_input`` is merged over the call's arguments;
``systemMessage`` is shown to the user.  ``BeforeTool`` cannot add context for the model,
so the backup ID reaches it from ``AfterTool``'s ``additionalContext``.  Timeouts are
in milliseconds.  Gemini hooks cannot ask the user: ``on_failure: ask`` denies.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig
from preimage.layer.deciding.completion import Completion, Status, ToolResult
from preimage.layer.decision import Action, Decision
from preimage.layer.harnesses._base import Harness, Scope, _shorten, home
from preimage.layer.harnesses.hook import HookOutcome

# Gemini CLI's tool → the harness-neutral name the rules know.
TOOLS = {
    "run_shell_command": "Bash", "write_file": "Write", "replace": "Edit",
    "read_file": "Read", "read_many_files": "Read", "list_directory": "LS", "glob": "Glob",
    "grep_search": "Grep", "search_file_content": "Grep", "web_fetch": "WebFetch",
    "google_web_search": "WebSearch", "write_todos": "TodoWrite",
}


class Gemini(Harness):
    """Google's Gemini CLI."""

    name = "gemini"
    title = "Gemini CLI"
    binary = "gemini"
    pre_events = ("BeforeTool",)
    post_events = ("AfterTool",)
    answer_after_tells = True   # its note after the call names the undo it allows
    settings_comments = True   # it strips // and /* */ comments from settings.json

    def call(self, payload: dict[str, Any]) -> ToolCall:
        raw = ToolCall.from_hook_payload(payload, harness=self.name)
        mcp = payload.get("mcp_context")
        if isinstance(mcp, dict) and not raw.tool.startswith("mcp__"):
            server = mcp.get("server_name") or mcp.get("serverName")
            tool = mcp.get("tool_name") or mcp.get("toolName")
            if isinstance(server, str) and isinstance(tool, str):
                raw.tool = f"mcp__{server}__{tool}"
                return raw
        server = _mcp_server(raw.tool, raw.cwd)
        if server is not None:  # Gemini CLI names MCP tools mcp_<server>_<tool>
            raw.tool = f"mcp__{server}__{raw.tool[len('mcp_') + len(server) + 1:]}"
            return raw
        name = TOOLS.get(raw.tool, raw.tool)
        args = dict(raw.input)
        if name == "Bash":
            folder = args.pop("dir_path", None) or args.pop("directory", None)
            if isinstance(folder, str) and folder:
                args["workdir"] = os.path.normpath(os.path.join(raw.cwd, folder))
        elif name in ("Write", "Edit") and "file_path" not in args and "absolute_path" in args:
            args["file_path"] = args.pop("absolute_path")
        raw.tool, raw.input = name, args
        return raw

    def result(self, payload: dict[str, Any], *, failed: bool) -> ToolResult:
        response = payload.get("tool_response")
        error = response.get("error") if isinstance(response, dict) else None
        content = response.get("llmContent") if isinstance(response, dict) else response
        code = re.search(r"Exit Code: (-?\d+)", str(content or ""))
        status: Status = "error" if error or (code and code.group(1) != "0") else "ok"
        return ToolResult(status=status, output=_shorten(content),
                          error=json.dumps(error, default=str) if error else None)

    def answer(self, decision: Decision, config: LayerConfig, *,
               permission_mode: str | None = None) -> HookOutcome:
        if not self.worth_saying(decision):
            return HookOutcome("{}")
        out: dict[str, Any] = {}
        if decision.action is Action.REWRITE and decision.updated_input is not None:
            command = decision.updated_input.get("command")
            out["hookSpecificOutput"] = {"hookEventName": "BeforeTool",
                                         "tool_input": {"command": command}}
        if decision.error:
            out["systemMessage"] = self.failure_message(decision)
            if self.refusal(config):
                out.pop("hookSpecificOutput", None)
                out["decision"] = "deny"
                out["reason"] = out["systemMessage"]
        return HookOutcome(json.dumps(out))

    def answer_after(self, completion: Completion) -> HookOutcome:
        if not completion.note:
            return HookOutcome("{}")
        return HookOutcome(json.dumps({"hookSpecificOutput": {
            "hookEventName": "AfterTool", "additionalContext": completion.note}}))

    def settings_path(self, scope: Scope, project: Path) -> Path:
        if scope == "user":
            from preimage.layer.mcp_servers import gemini_home

            return gemini_home(os.environ, home()) / "settings.json"
        return project / ".gemini" / "settings.json"


def _mcp_server(tool: str, cwd: str) -> str | None:
    """The MCP server (from Gemini CLI's settings) whose name follows ``mcp_`` in ``tool``."""
    if not tool.startswith("mcp_") or tool.startswith("mcp__"):
        return None
    from preimage.layer.mcp_servers import server_names

    names = server_names("gemini", cwd, str(home()))
    return next((n for n in sorted(names, key=len, reverse=True)
                 if tool.startswith(f"mcp_{n}_")), None)
