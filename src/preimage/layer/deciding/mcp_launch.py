"""What an MCP server sees when it runs: its definition, environment, options and files.

A server reads its connection from where its own documentation says: postgres-mcp from
``DATABASE_URI`` in its environment before its argument, emails-mcp from the JSON file
``--config_file`` names (relative to the folder it runs in), mcp-server-kubernetes from
the ``KUBECONFIG`` of its environment.  The layer reads the same places, so the system
it backs up is the one the server changes, with the server's own credentials — not the
hook's environment, which a harness does not give its servers' ``env`` entries.

The server's environment is the one it is launched with: the harness's (for a hook,
the environment the hook was given; for ``preimage mcp-proxy``, the proxy's own, which
its upstream inherits) with the definition's ``env`` entries on top.  A relative path
in an argument is read against the folder the server runs in: the workspace for a
harness (Claude Code, Codex and Gemini CLI start stdio servers there), the proxy's own
folder for the proxy.
"""

from __future__ import annotations

import json
import os
from typing import Any

from preimage.layer.call import ToolCall
from preimage.layer.context import Context

Spec = dict[str, Any]


def server_spec(call: ToolCall, ctx: Context) -> Spec:
    """The definition of the MCP server ``call`` goes to (``{}`` when none is known)."""
    from preimage.layer.config import discover_mcp

    mcp = call.mcp_tool
    if mcp is None:
        return {}
    spec = discover_mcp(ctx.workspace, ctx.home, harness=ctx.call.harness,
                        env=ctx.env or None).get(mcp.server)
    return spec if isinstance(spec, dict) else {}


def server_env(spec: Spec, ctx: Context) -> dict[str, str]:
    """The environment the server runs with: the launcher's, then its definition's ``env``."""
    base = dict(ctx.env) if ctx.env else dict(os.environ)
    own = spec.get("env")
    if isinstance(own, dict):
        base.update({str(k): str(v) for k, v in own.items()})
    return base


def server_cwd(spec: Spec, ctx: Context) -> str:
    """The folder the server runs in (recorded by the proxy; else the workspace)."""
    cwd = spec.get("cwd")
    return str(cwd) if isinstance(cwd, str) and cwd else ctx.workspace


def option(spec: Spec, *names: str) -> str | None:
    """The value of ``--name VALUE`` / ``--name=VALUE`` in the server's arguments (last wins)."""
    args = [str(a) for a in spec.get("args") or []]
    found: str | None = None
    for i, a in enumerate(args):
        for name in names:
            if a.startswith(name + "="):
                found = a.split("=", 1)[1]
            elif a == name and i + 1 < len(args):
                found = args[i + 1]
    return found


def launch_words(spec: Spec) -> list[str]:
    """The server's command and arguments, as words."""
    return [str(p) for p in (spec.get("command"), *(spec.get("args") or [])) if p]


def is_server(spec: Spec, *packages: str) -> bool:
    """Whether the server is launched from one of ``packages``: a word of its launch line
    is the package (``npx -y pkg@1.2``, ``uvx pkg``) or its installed executable."""
    for word in launch_words(spec):
        name = "@" + word[1:].split("@", 1)[0] if word.startswith("@") else word.split("@", 1)[0]
        if any(name == p or name.endswith("/" + p) or os.path.basename(name) == p
               for p in packages):
            return True
    return False


def read_json_file(path: str) -> Any:
    """A JSON file's document; ``None`` when it is missing or not JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
