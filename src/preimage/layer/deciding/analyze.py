"""Turning a tool call into findings: parse, match rules, run extractors."""

from __future__ import annotations

import re

from preimage.layer.call import ToolCall
from preimage.layer.context import Context
from preimage.layer.deciding import (  # noqa: F401  (importing registers the extractors)
    ex_archive,
    ex_browser,
    ex_files,
    ex_k8s,
    ex_mail,
    ex_sql,
    ex_text,
    ex_tools,
    ex_vcs,
    mcp_kubernetes,
)
from preimage.layer.deciding.extract import (
    run_rule,
    unknown,
)
from preimage.layer.deciding.rules import RuleSet
from preimage.layer.decision import Finding
from preimage.layer.reading.shell import parse

_KIND_HINTS = (
    ("postgres", r"postgres|\bpg\b|supabase|neon|timescale"),
    ("mysql", r"mysql|maria"),
    ("sqlite", r"sqlite"),
    ("kubernetes", r"kube|k8s|kubectl|helm"),
    ("email", r"mail|imap|inbox|gmail|outlook"),
    ("browser", r"playwright|browser|puppeteer|chrome"),
)


# MCP servers known by their package, whatever the user named them.
_KNOWN_SERVERS = (
    ("emails-mcp", ("emails-mcp",)),
    ("postgres", ("postgres-mcp",)),
    ("kubernetes", ("mcp-server-kubernetes",)),
    ("browser", ("@playwright/mcp", "playwright-mcp")),
)


def mcp_kind(call: ToolCall, ctx: Context) -> str | None:
    """What an MCP server talks to: configured, else guessed from its and the tool's names,
    else from how the harness starts it (its command, arguments and URL)."""
    mcp = call.mcp_tool
    if mcp is None:
        return None
    conf = ctx.config.mcp.get(mcp.server)
    if conf and conf.kind:
        return conf.kind
    if conf and conf.target:
        scheme = conf.target.split(":", 1)[0]
        for kind, rx in _KIND_HINTS:
            if re.search(rx, scheme):
                return kind
    from preimage.layer.deciding.mcp_launch import is_server, server_spec

    spec = server_spec(call, ctx)
    for kind, packages in _KNOWN_SERVERS:   # a server whose tools the layer models exactly
        if is_server(spec, *packages):
            return kind
    for text in (mcp.server, mcp.tool):
        for kind, rx in _KIND_HINTS:
            if re.search(rx, text, re.I):
                return kind
    if spec:
        launch = " ".join(str(p) for p in (spec.get("command"), *spec.get("args", []),
                                           spec.get("url")) if p)
        for kind, rx in _KIND_HINTS:
            if re.search(rx, launch, re.I):
                return kind
    return None


def analyze(call: ToolCall, ctx: Context, rules: RuleSet) -> tuple[list[Finding], list[str]]:
    """The findings of a call and notes about how it was read."""
    from preimage.layer.deciding.ex_files import redirect_finding, wrapper_files_finding

    if call.command is not None and call.mcp_tool is None and (
            call.is_shell or call.tool.lower() in ("bash", "shell")):
        parsed = parse(call.command, cwd=call.workdir, env=ctx.env)
        findings: list[Finding] = []
        for cmd in parsed.commands:
            if cmd.words:
                rule = rules.match_command(cmd)
                if rule is None:
                    findings.append(unknown(cmd, None, f"no rule knows `{cmd.name}`"))
                else:
                    findings.append(run_rule(cmd, rule, ctx))
            redirect = redirect_finding(cmd, ctx)
            if redirect is not None:
                findings.append(redirect)
            if cmd.creates:
                findings.append(wrapper_files_finding(cmd, ctx))
        return findings, parsed.notes
    rule = rules.match_tool(call, mcp_kind(call, ctx))
    if rule is None:
        what = f"MCP tool {call.mcp_tool.tool!r} of server {call.mcp_tool.server!r}" \
            if call.mcp_tool else f"tool {call.tool!r}"
        return [unknown(call, None, f"no rule knows the {what}")], []
    return [run_rule(call, rule, ctx)], []
