"""OpenCode: a JavaScript plugin (``tool.execute.before`` / ``tool.execute.after``).

OpenCode has no command hooks; it loads plugins from ``.opencode/plugin/`` (project) and
``~/.config/opencode/plugin/`` (user).  preimage's plugin (``opencode_plugin.js``, written
by ``preimage install opencode``) sends each call to ``preimage hook opencode``:

payload (stdin): ``hook_event_name`` (``tool.execute.before``/``tool.execute.after``),
``tool``, ``session_id``, ``tool_use_id`` (OpenCode's ``callID``), ``tool_input`` (the
call's ``args``), ``cwd`` (the instance's directory, where OpenCode runs the tool), and
after the call ``tool_response`` (``title``, ``output``, ``metadata``; for an MCP tool
``output`` — its text items — and ``isError``).  OpenCode fires ``tool.execute.after``
only for calls that did not throw.

answer (stdout): ``block`` (the plugin throws, which refuses the call and hands the
message to the model), ``args`` (merged over the call's arguments), ``note`` (appended
to the tool's output), ``message`` (printed on stderr).  A plugin cannot ask the user:
``on_failure: ask`` blocks.

Tools: ``bash`` → ``Bash``; ``write``/``edit``/``multiedit`` (``filePath``) →
``Write``/``Edit``/``MultiEdit`` (``file_path``); ``patch``/``apply_patch``
(``patchText``) → ``apply_patch``; reading tools to their Claude Code names; MCP tools,
which OpenCode names ``<server>_<tool>``, to ``mcp__<server>__<tool>`` for the servers
in the project's and the user's ``opencode.json``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, ClassVar

from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig
from preimage.layer.deciding.completion import Completion, Status, ToolResult
from preimage.layer.decision import Action, Decision
from preimage.layer.harnesses._base import Harness, HookEvent, Scope, _shorten, home
from preimage.layer.harnesses.hook import HookOutcome

TOOLS = {
    "bash": "Bash", "write": "Write", "edit": "Edit", "multiedit": "MultiEdit",
    "patch": "apply_patch", "apply_patch": "apply_patch",
    "read": "Read", "glob": "Glob", "grep": "Grep", "list": "LS", "webfetch": "WebFetch",
    "websearch": "WebSearch", "codesearch": "WebSearch", "todowrite": "TodoWrite",
    "todoread": "TodoRead", "task": "Task", "skill": "Skill", "question": "AskUserQuestion",
}
PLUGIN_FILE = "preimage.js"
PLUGIN_MARK = "preimage for OpenCode"


class OpenCode(Harness):
    """sst's OpenCode."""

    name = "opencode"
    title = "OpenCode"
    binary = "opencode"
    pre_events = ("tool.execute.before",)
    post_events = ("tool.execute.after",)
    answer_after_tells = True   # its note after the call names the undo it allows
    plugin_mark: ClassVar[str] = PLUGIN_MARK   # the line that says a plugin file is preimage's
    tools: ClassVar[dict[str, str]] = TOOLS    # the harness's tool names → the neutral ones

    def event(self, payload: Any) -> HookEvent:
        if not isinstance(payload, dict):
            raise ValueError(f"hook payload is {type(payload).__name__}, not a JSON object")
        # The plugin's own field names, read into the shape the base class expects.
        payload = {**payload, "tool_name": payload.get("tool"),
                   "tool_input": payload.get("tool_input") or {}}
        return super().event(payload)

    def call(self, payload: dict[str, Any]) -> ToolCall:
        raw = ToolCall.from_hook_payload(payload, harness=self.name)
        args = dict(raw.input)
        name = self.tools.get(raw.tool)
        if name is None:
            server = _mcp_server(self.name, raw.tool, raw.cwd)
            if server is not None:
                raw.tool = f"mcp__{server}__{raw.tool[len(_sanitize(server)) + 1:]}"
            return raw
        if "filePath" in args and "file_path" not in args:
            args["file_path"] = args.pop("filePath")
        if name == "apply_patch" and "patchText" in args:
            args["input"] = args.pop("patchText")
        if name == "Bash" and isinstance(args.get("workdir"), str):
            args["workdir"] = os.path.normpath(os.path.join(raw.cwd, args["workdir"]))
        raw.tool, raw.input = name, args
        return raw

    def result(self, payload: dict[str, Any], *, failed: bool) -> ToolResult:
        response = payload.get("tool_response")
        meta = response.get("metadata") if isinstance(response, dict) else None
        code = meta.get("exit") if isinstance(meta, dict) else None
        failed = (isinstance(code, int) and code != 0) or (
            isinstance(response, dict) and response.get("isError") is True)   # an MCP result
        # OpenCode fires tool.execute.after only for calls that did not throw.
        status: Status = "error" if failed else "ok"
        output = response.get("output") if isinstance(response, dict) else response
        return ToolResult(status=status, output=_shorten(output))

    def answer(self, decision: Decision, config: LayerConfig, *,
               permission_mode: str | None = None) -> HookOutcome:
        out: dict[str, Any] = {}
        if not self.worth_saying(decision):
            return HookOutcome("{}")
        if decision.action is Action.REWRITE and decision.updated_input is not None:
            out["args"] = {"command": decision.updated_input.get("command")}
        if decision.additional_context:
            out["note"] = decision.additional_context
        if decision.error:
            out["message"] = self.failure_message(decision)
            if self.refusal(config):
                out.pop("args", None)
                out["block"] = out["message"]
        return HookOutcome(json.dumps(out))

    def nothing_after(self, answer: str) -> str:
        """``"after": false``: the plugin then skips the call's ``tool.execute.after``
        (no process, no service round trip) — there is nothing to record for it."""
        out = json.loads(answer)
        if isinstance(out, dict) and "block" not in out:
            out["after"] = False
        return json.dumps(out)

    def answer_after(self, completion: Completion) -> HookOutcome:
        return HookOutcome(json.dumps({"note": completion.note} if completion.note else {}))

    def settings_path(self, scope: Scope, project: Path) -> Path:
        if scope == "user":
            base = os.environ.get("XDG_CONFIG_HOME")
            return (Path(base) if base else home() / ".config") / "opencode" / "plugin" / PLUGIN_FILE
        return project / ".opencode" / "plugin" / PLUGIN_FILE

    def plugin_source(self, preimage: str, args: list[str], on_failure: str, *,
                      client: str | None = None) -> str:
        """The plugin file, for ``preimage`` (a name on PATH or an absolute path) and the
        compiled hook ``client`` it runs instead when that is there."""
        return plugin_source(preimage, args, on_failure, harness=self.name, title=self.title,
                             client=client)


def _sanitize(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)


def _mcp_server(harness: str, tool: str, cwd: str) -> str | None:
    """The MCP server configured for ``harness`` whose (sanitised) name prefixes ``tool``,
    longest first."""
    from preimage.layer.mcp_servers import server_names

    names = sorted(server_names(harness, cwd, str(home())), key=len, reverse=True)
    return next((n for n in names if tool.startswith(_sanitize(n) + "_")), None)


def plugin_source(preimage: str, args: list[str], on_failure: str, *,
                  harness: str = "opencode", title: str = "OpenCode",
                  client: str | None = None) -> str:
    """The plugin file of ``harness`` (OpenCode or a fork of it that loads the same
    plugins), for ``preimage`` (a name on PATH or an absolute path)."""
    from importlib.resources import files

    text = (files("preimage.layer.harnesses") / "opencode_plugin.js").read_text()
    return (text.replace("@@HARNESS@@", harness).replace("@@TITLE@@", title)
            .replace("@@PREIMAGE@@", preimage.replace("\\", "\\\\").replace('"', '\\"'))
            .replace("@@ARGS@@", json.dumps(args)).replace("@@CLIENT@@", json.dumps(client or ""))
            .replace("@@ON_FAILURE@@", "deny" if on_failure != "allow" else "allow"))
