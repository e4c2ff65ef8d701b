"""A task's steps as a real harness's own tool calls, and the MCP servers behind them.

The regret tasks name each step the way the simulated path runs it: ``Bash`` with a
command line, or ``mcp__<server>__<tool>`` with arguments.  Through a real harness the
scripted model asks for the harness's own tool instead:

* a shell line is Claude Code's ``Bash`` (``command``) or Codex's ``exec_command``
  (``cmd``);
* a PostgreSQL step is ``execute_sql`` of ``postgres-mcp`` and a Kubernetes step
  ``kubectl_delete`` of ``mcp-server-kubernetes`` — the tasks already use those
  servers' tool names and arguments, so the step passes as it is;
* an email step is emails-mcp's: a listing (``get_emails``) of the folder, then the
  change by the sequence numbers that listing showed (:mod:`preimage.bench.harness_email`);
* a browser step is @playwright/mcp's: a navigation or a script as it is, a click by the
  ref the page's snapshot just showed for its element (:mod:`preimage.bench.harness_browser`);
* Codex offers MCP tools only behind its client-side ``tool_search``: the model
  searches once per server before its first call there, then calls the tool in the
  ``mcp__<server>`` namespace the search returned.

A step with no tool of a published server to carry it raises
:class:`NoHarnessToolError` with the reason; the runner lists the task as not run
through that path (never simulated in its place).  Each MCP server is configured the
way its documentation says, in the harness's own MCP configuration
(:func:`mcp_definitions`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any

from preimage.bench.harness_browser import playwright_mcp_args, playwright_mcp_calls
from preimage.bench.harness_email import emails_mcp_calls, emails_mcp_config
from preimage.bench.harness_tool import HarnessCall, NoHarnessToolError
from preimage.bench.scenario import CallSpec
from preimage.bench.systems.base import Sandbox

HARNESSES = ("claude-code", "codex")

#: Published MCP servers (as fixtures/mcp_packages.py pins them) by the server name the
#: tasks use, and the tools of each that carry a task's step unchanged.
PASSED_AS_IS = {
    "postgres": ("postgres-mcp", frozenset({"execute_sql", "list_schemas", "list_objects",
                                            "get_object_details", "explain_query"})),
    "kubernetes": ("kubernetes", frozenset({"kubectl_delete", "kubectl_get", "kubectl_apply",
                                            "kubectl_describe", "kubectl_generic"})),
    # the task's IMAP steps, each as emails-mcp's own tools (preimage.bench.harness_email)
    "email": ("emails-mcp", frozenset()),
    # the task's browser steps, each as @playwright/mcp's (preimage.bench.harness_browser)
    "playwright": ("playwright", frozenset()),
}


def without_force(command: str) -> str:
    """``command`` with ``-f`` taken out of every ``rm``'s options (``rm -rf x`` → ``rm -r
    x``): Codex refuses "rm -f style commands" by its own rules before they run, and a
    model told so asks again without it."""

    def drop(match: re.Match[str]) -> str:
        flags = [f"-{o.lstrip('-').replace('f', '')}" for o in match.group(1).split()]
        return "rm" + "".join(f" {f}" for f in flags if f != "-")

    return _RM_OPTIONS.sub(drop, command)


_RM_OPTIONS = re.compile(r"\brm((?:\s+-[a-zA-Z]+)+)")


def shell_call(harness: str, command: str) -> HarnessCall:
    """The harness's shell tool running ``command`` (Codex: :func:`without_force`)."""
    if harness == "codex":
        return HarnessCall("exec_command", {"cmd": without_force(command)})
    return HarnessCall("Bash", {"command": command})


def harness_calls(harness: str, call: CallSpec, searched: set[str]) -> list[HarnessCall]:
    """``call`` as ``harness``'s model makes it (Codex: with a tool search first, once per
    server; ``searched`` holds the servers already searched and is updated).

    Raises :class:`NoHarnessToolError` when no published server's tool carries it.
    """
    if call.is_shell:
        command = call.input.get("command")
        if not isinstance(command, str):
            raise NoHarnessToolError(f"a {call.tool} step without a command line")
        return [shell_call(harness, command)]
    server, tool = call.mcp
    if server == "email":
        steps = emails_mcp_calls(tool, call.input)
    elif server == "playwright":
        steps = playwright_mcp_calls(tool, call.input)
    else:
        known = PASSED_AS_IS.get(server)
        if known is None or tool not in known[1]:
            raise NoHarnessToolError(
                f"{server}/{tool}: no published MCP server's tool carries it")
        steps = [HarnessCall(tool, dict(call.input))]
    if harness != "codex":
        return [dataclasses.replace(c, tool=f"mcp__{server}__{c.tool}") for c in steps]
    out = []
    if server not in searched:
        searched.add(server)
        out.append(HarnessCall("tool_search", {"query": f"{server} {tool}", "limit": 8},
                               kind="tool_search"))
    return out + [dataclasses.replace(c, namespace=f"mcp__{server}") for c in steps]


def mcp_definitions(servers: set[str], sandbox: Sandbox, executable: Any
                    ) -> dict[str, dict[str, Any]]:
    """``{name: {command, args, env}}`` for each server the task calls, configured as its
    documentation says: postgres-mcp with ``DATABASE_URI``, mcp-server-kubernetes with
    ``KUBECONFIG``, emails-mcp with a ``--config_file``, @playwright/mcp with the run's
    profile (``--user-data-dir``) and remote debugging on.  ``executable(pin)`` gives an
    installed server's path."""
    out: dict[str, dict[str, Any]] = {}
    for server in sorted(servers):
        pin = PASSED_AS_IS[server][0]
        env: dict[str, str] = {}
        if server == "postgres":
            v, e = sandbox.variables, sandbox.env
            env["DATABASE_URI"] = (f"postgresql://{e['PGUSER']}:{e['PGPASSWORD']}@{e['PGHOST']}"
                                   f":{e['PGPORT']}/{v['pg_db']}")
        elif server == "kubernetes":
            env["KUBECONFIG"] = sandbox.env.get("KUBECONFIG") or os.environ["KUBECONFIG"]
        args: list[str] = []
        if server == "email":
            args = ["--config_file", str(emails_mcp_config(sandbox))]
        elif server == "playwright":
            args = playwright_mcp_args(sandbox)
        out[server] = {"command": str(executable(pin)), "args": args, "env": env}
    return out


__all__ = ["HARNESSES", "HarnessCall", "NoHarnessToolError", "harness_calls", "mcp_definitions",
           "shell_call", "without_force"]
