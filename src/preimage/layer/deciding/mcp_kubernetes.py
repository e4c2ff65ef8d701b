"""mcp-server-kubernetes 4.1.6: ``kubectl_generic`` and ``exec_in_pod``, read as they run.

``kubectl_generic`` runs ``kubectl COMMAND [SUBCOMMAND] [TYPE] [NAME] [--all-namespaces]
[--namespace=NS] [--FLAG[=VALUE]…] [ARGS…] [--context CTX]`` (the server's
``dist/tools/kubectl-generic.js`` builds exactly that argument list): the layer builds the
same line and reads it with the shell rules for ``kubectl`` — a ``get`` is read only, a
``delete``, ``label``, ``drain`` or ``rollout restart`` captures what the same command
typed in a terminal would — with the server's kubeconfig travelling in the targets.

``exec_in_pod`` runs any command in a container.  Whatever it changes lives in the
container's file system, in its volumes or beyond it (a database the pod serves, the API
through the pod's service account): nothing preimage captures holds that.  The layer does
not pretend: the finding is *uncapturable*, so the decision fails as a backup that could
not be taken does — asked (Claude Code) or refused, or let through saying it is NOT backed
up under ``on_failure: allow`` — and says why, instead of snapshotting a workspace that
holds none of it.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from typing import Any

from preimage.layer.call import ToolCall
from preimage.layer.context import Context
from preimage.layer.deciding.ex_k8s import server_kubeconfig, with_kubeconfig
from preimage.layer.deciding.extract import finding, tool_extractor, unknown
from preimage.layer.deciding.rules import Rule
from preimage.layer.decision import Finding, Impact

EXEC_UNKNOWN = ("exec_in_pod runs a command inside a container: what it changes (the "
                "container's files, its volumes, what the pod reaches) is not something "
                "preimage can capture")


def generic_argv(a: dict[str, Any]) -> list[str]:
    """The kubectl arguments mcp-server-kubernetes 4.1.6 runs for ``kubectl_generic``."""
    argv = ["kubectl", str(a.get("command") or "")]
    for key in ("subCommand", "resourceType", "name"):
        if a.get(key):
            argv.append(str(a[key]))
    if a.get("allNamespaces"):
        argv.append("--all-namespaces")
    elif a.get("namespace"):
        argv.append(f"--namespace={a['namespace']}")
    if a.get("outputFormat"):
        argv.append(f"-o={a['outputFormat']}")
    flags = a.get("flags")
    if isinstance(flags, dict):
        for key, value in flags.items():
            if value is True:
                argv.append(f"--{key}")
            elif value is not False and value is not None:
                argv.append(f"--{key}={value}")
    args = a.get("args")
    if isinstance(args, list):
        argv += [str(x) for x in args]
    if a.get("context"):
        argv += ["--context", str(a["context"])]
    return argv


@tool_extractor("mcp_kubectl_generic")
def mcp_kubectl_generic(call: ToolCall, rule: Rule, ctx: Context) -> Finding:
    """``kubectl_generic``: the kubectl line it runs, read by the shell rules."""
    from preimage.layer.deciding.extract import run_rule
    from preimage.layer.deciding.rules import load_rules
    from preimage.layer.reading.shell import parse

    if not call.input.get("command"):
        return unknown(call, rule, "kubectl_generic names no kubectl command")
    got = server_kubeconfig(call, rule, ctx)
    if isinstance(got, Finding):
        return got
    env, own = got
    line = shlex.join(generic_argv(call.input))
    commands = [c for c in parse(line, cwd=ctx.workspace, env=env).commands if c.words]
    shell_rule = load_rules().match_command(commands[0]) if len(commands) == 1 else None
    if shell_rule is None:
        return unknown(call, rule, f"no rule knows `{line}`")
    read = run_rule(commands[0], shell_rule, ctx)
    if read.unknown:
        return unknown(call, rule, "; ".join(read.notes) or f"cannot read `{line}`")
    return finding(call, rule, tier=read.tier, impact=read.impact, wide=read.wide,
                   notes=[*read.notes, f"read as `{line}`"], outside_workspace=True,
                   targets=[replace(t, uri=with_kubeconfig(t.uri, own)) if own else t
                            for t in read.targets])


@tool_extractor("mcp_exec_in_pod")
def mcp_exec_in_pod(call: ToolCall, rule: Rule, ctx: Context) -> Finding:
    """``exec_in_pod``: a change no backup can hold — asked or refused, saying why."""
    got = finding(call, rule, impact=Impact.HIGH, outside_workspace=True)
    got.uncapturable = EXEC_UNKNOWN
    return got


__all__ = ["EXEC_UNKNOWN", "generic_argv", "mcp_exec_in_pod", "mcp_kubectl_generic"]
