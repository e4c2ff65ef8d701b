"""The harness-neutral tool call the backup layer reads.

A :class:`ToolCall` carries the tool's name, its input, the working directory
and the session.  Shell commands arrive as a tool whose input holds a
``command`` (Claude Code's ``Bash``, Codex's ``shell`` with an argv list);
calls to MCP servers arrive named ``mcp__<server>__<tool>`` (Claude Code and
Codex spell them so) or are built with :meth:`ToolCall.mcp`.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from typing import Any

SHELL_TOOLS = frozenset({
    "bash", "shell", "local_shell", "run_shell_command", "exec_command", "terminal",
    "run_terminal_cmd", "execute_command", "container.exec",
})


@dataclass(frozen=True)
class McpTool:
    """An MCP tool: the server's name as the harness knows it, and the tool's name."""

    server: str
    tool: str


@dataclass
class ToolCall:
    """One tool call an agent is about to make."""

    tool: str
    input: dict[str, Any]
    cwd: str
    session_id: str | None = None
    tool_use_id: str | None = None
    env: dict[str, str] | None = field(default=None, repr=False)
    harness: str = "generic"
    # Whether the harness runs a rewritten input as given (the hook decides it per call
    # where the harness's settings matter); ``None``: as the harness's adapter says.
    runs_rewrites: bool | None = field(default=None, repr=False)
    # Why the harness may not run a rewrite as given (its sandbox), for the model's note.
    rewrite_stopped: str | None = field(default=None, repr=False)

    # ------------------------------------------------------------ constructors
    @classmethod
    def shell(
        cls, command: str, *, cwd: str | None = None, session_id: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ToolCall:
        """A shell command line, as a ``Bash`` tool call."""
        return cls("Bash", {"command": command}, cwd or os.getcwd(), session_id, env=env)

    @classmethod
    def mcp(
        cls, server: str, tool: str, arguments: dict[str, Any] | None = None, *,
        cwd: str | None = None, session_id: str | None = None,
    ) -> ToolCall:
        """A call to tool ``tool`` of MCP server ``server``."""
        return cls(f"mcp__{server}__{tool}", dict(arguments or {}), cwd or os.getcwd(), session_id)

    @classmethod
    def from_hook_payload(cls, payload: Any, *, harness: str = "claude-code") -> ToolCall:
        """Read a ``PreToolUse`` hook payload (Claude Code / Codex).

        Raises :class:`ValueError` naming the field when the payload is not an
        object with a string ``tool_name`` and an object ``tool_input``.
        """
        if not isinstance(payload, dict):
            raise ValueError(f"hook payload is {type(payload).__name__}, not a JSON object")
        name = payload.get("tool_name")
        if not isinstance(name, str) or not name:
            raise ValueError("hook payload has no string 'tool_name'")
        tool_input = payload.get("tool_input", {})
        if not isinstance(tool_input, dict):
            raise ValueError("hook payload's 'tool_input' is not an object")
        cwd = payload.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            cwd = os.getcwd()
        session = payload.get("session_id")
        use_id = payload.get("tool_use_id")
        return cls(
            name, tool_input, cwd,
            session if isinstance(session, str) else None,
            use_id if isinstance(use_id, str) else None,
            harness=harness,
        )

    # ------------------------------------------------------------ views
    @property
    def mcp_tool(self) -> McpTool | None:
        """The MCP server and tool, when this is an MCP call."""
        if not self.tool.startswith("mcp__"):
            return None
        rest = self.tool[len("mcp__"):]
        server, sep, tool = rest.partition("__")
        if not sep or not server or not tool:
            return None
        return McpTool(server, tool)

    @property
    def is_shell(self) -> bool:
        """Whether the call runs a shell command."""
        return self.tool.lower() in SHELL_TOOLS and self.command is not None

    @property
    def command(self) -> str | None:
        """The shell command line of a shell tool call (an argv list is joined)."""
        cmd = self.input.get("command", self.input.get("cmd"))
        if isinstance(cmd, str):
            return cmd
        if isinstance(cmd, list) and all(isinstance(a, str) for a in cmd):
            return shlex.join(cmd)
        return None

    @property
    def workdir(self) -> str:
        """Where the command runs: the tool's own ``workdir`` if it names one, else ``cwd``."""
        wd = self.input.get("workdir") or self.input.get("cwd")
        if isinstance(wd, str) and wd.startswith("/"):
            return wd
        return self.cwd

    def to_record(self, limit: int = 4000) -> dict[str, Any]:
        """What the catalog keeps about the call (long inputs shortened)."""
        record: dict[str, Any] = {"tool": self.tool, "cwd": self.cwd, "harness": self.harness}
        if self.tool_use_id:
            record["tool_use_id"] = self.tool_use_id
        shown: dict[str, Any] = {}
        for k, v in self.input.items():
            if isinstance(v, str) and len(v) > limit:
                v = v[:limit] + f"… ({len(v)} chars)"
            shown[k] = v
        record["input"] = shown
        return record
