"""MCP server definitions, read from each harness's own configuration.

A user tells their harness how to start an MCP server once; the layer reads the same
definition to learn what the server talks to (a database URL or file in its arguments
or environment, a browser profile …), so nobody has to repeat it in preimage's
``config.yaml``.  Every definition is read into one shape::

    {"command": "npx", "args": ["-y", "server", "postgresql://…"], "env": {…},
     "url": "http://…" (remote servers), "harness": "codex", "source": "/path/config.toml"}

============  =========================================================================
harness       files (user, then project; a later file wins for the same server name)
============  =========================================================================
claude-code   ``~/.claude.json`` (``mcpServers``, and ``projects[<dir>].mcpServers``;
              ``$CLAUDE_CONFIG_DIR/.claude.json`` when set), ``.mcp.json``
codex         ``$CODEX_HOME/config.toml`` (``~/.codex``), ``.codex/config.toml``:
              ``[mcp_servers.<name>]`` ``command``/``args``/``env``/``url``
gemini        ``system-defaults.json`` (``$GEMINI_CLI_SYSTEM_DEFAULTS_PATH``, else beside
              the system settings), ``~/.gemini/settings.json`` (``~`` is
              ``$GEMINI_CLI_HOME`` when set), ``.gemini/settings.json``, then the system
              settings (``$GEMINI_CLI_SYSTEM_SETTINGS_PATH``,
              ``/etc/gemini-cli/settings.json``), which win: ``mcpServers``
              ``command``/``args``/``env``/``url``/``httpUrl``
qwen          the same files of Qwen Code (a Gemini CLI fork): its system defaults
              (``$QWEN_CODE_SYSTEM_DEFAULTS_PATH``), ``$QWEN_HOME/settings.json``
              (``~/.qwen``), ``.qwen/settings.json``, its system settings
              (``$QWEN_CODE_SYSTEM_SETTINGS_PATH``, ``/etc/qwen-code/settings.json``)
opencode      ``$XDG_CONFIG_HOME/opencode/opencode.json(c)``, ``$OPENCODE_CONFIG``,
              ``opencode.json(c)`` and ``.opencode/opencode.json(c)``: ``mcp.<name>``
              ``command`` (a list: the program and its arguments)/``environment``/``url``
kilo          ``$KILO_CONFIG_DIR`` (``$XDG_CONFIG_HOME/kilo``) ``kilo.json(c)``/
              ``opencode.json(c)``, ``$KILO_CONFIG``, and each of those names in the
              project, its ``.kilo/`` and ``.kilocode/``: ``mcp.<name>`` as OpenCode's
============  =========================================================================

Project files are looked for in the workspace and each folder above it.  Variables in
values are expanded the way each harness does (``${VAR}``, ``${VAR:-default}``,
``$VAR``; OpenCode's ``{env:VAR}``) from the call's environment.

When the harness that made the call is known its definitions win; when it is not
(the MCP proxy, the Python API) and two harnesses define the same name differently,
the name is left out — the layer then says the server's system is unknown rather
than back up the wrong one.  A server this process started itself (``preimage
mcp-proxy``'s upstream, :func:`remember_launch`) is known best and wins over all.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

Spec = dict[str, Any]
ORDER = ("claude-code", "codex", "gemini", "qwen", "opencode", "kilo")
_OPENCODE_SHAPE = frozenset({"opencode", "kilo"})   # Kilo Code CLI is an OpenCode fork
_launched: dict[str, Spec] = {}


def remember_launch(name: str, command: list[str] | None = None, url: str | None = None,
                    *, cwd: str | None = None) -> None:
    """Record how this process started (or reached) MCP server ``name``.

    The server inherits this process's environment whole (``env`` holds no entries of
    its own: :func:`preimage.layer.deciding.mcp_launch.server_env` reads the layer's, which is
    this process's) and runs in ``cwd``.
    """
    _launched[name] = {"command": command[0] if command else None,
                       "args": list(command[1:]) if command else [], "env": {}, "url": url,
                       "cwd": cwd, "harness": "mcp-proxy", "source": "preimage mcp-proxy"}


def discover(workspace: str, home: str, *, harness: str | None = None,
             env: Mapping[str, str] | None = None) -> dict[str, Spec]:
    """Every MCP server definition the harnesses hold for ``workspace``, by name."""
    env = os.environ if env is None else env
    per: dict[str, dict[str, Spec]] = {h: read(h, workspace, home, env) for h in ORDER}
    if harness in per:
        merged: dict[str, Spec] = {}
        for h in (*[o for o in ORDER if o != harness], harness):
            merged.update(per[h])
        return {**merged, **_launched}
    out: dict[str, Spec] = {}
    clashing: set[str] = set()
    for specs in per.values():
        for name, spec in specs.items():
            if name in out and _launch(out[name]) != _launch(spec):
                clashing.add(name)
            out.setdefault(name, spec)
    return {**{n: s for n, s in out.items() if n not in clashing}, **_launched}


def server_names(harness: str, workspace: str, home: str,
                 env: Mapping[str, str] | None = None) -> list[str]:
    """The names of the MCP servers ``harness`` itself is configured with."""
    return list(read(harness, workspace, home, os.environ if env is None else env))


def read(harness: str, workspace: str, home: str, env: Mapping[str, str]) -> dict[str, Spec]:
    """The definitions in one harness's files (a later file wins for the same name)."""
    reader = {"claude-code": _claude, "codex": _codex, "gemini": _gemini, "qwen": _qwen,
              "opencode": _opencode, "kilo": _kilo}.get(harness)
    out: dict[str, Spec] = {}
    if reader is None:
        return out
    for path, name, raw in reader(Path(workspace), Path(home), env):
        spec = _normalise(harness, raw, env)
        if spec is not None:
            out[name] = {**spec, "harness": harness, "source": str(path)}
    return out


# ------------------------------------------------------------------ per harness
Found = Iterator[tuple[Path, str, dict[str, Any]]]


def _claude(workspace: Path, home: Path, env: Mapping[str, str]) -> Found:
    base = env.get("CLAUDE_CONFIG_DIR")
    user = (Path(base) if base else home) / ".claude.json"
    doc = _load_json(user)
    yield from _entries(user, doc.get("mcpServers"))
    projects = doc.get("projects")
    if isinstance(projects, dict):
        for folder in reversed(_upwards(workspace)):
            yield from _entries(user, (projects.get(str(folder)) or {}).get("mcpServers"))
    for folder in reversed(_upwards(workspace)):
        path = folder / ".mcp.json"
        yield from _entries(path, _load_json(path).get("mcpServers"))


def _codex(workspace: Path, home: Path, env: Mapping[str, str]) -> Found:
    base = env.get("CODEX_HOME")
    files = [(Path(base) if base else home / ".codex") / "config.toml"]
    files += [f / ".codex" / "config.toml" for f in reversed(_upwards(workspace))]
    for path in files:
        yield from _entries(path, _load_toml(path).get("mcp_servers"))


def gemini_home(env: Mapping[str, str], home: Path) -> Path:
    """Gemini CLI's global folder: ``.gemini`` in ``$GEMINI_CLI_HOME``, else in the home."""
    return Path(env.get("GEMINI_CLI_HOME") or home) / ".gemini"


def _gemini(workspace: Path, home: Path, env: Mapping[str, str]) -> Found:
    yield from _gemini_family(workspace, home, ".gemini", gemini_home(env, home),
                              env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
                              or "/etc/gemini-cli/settings.json",
                              env.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH"))


def _gemini_family(workspace: Path, home: Path, folder: str, user: Path, system: str,
                   defaults: str | None) -> Found:
    """Gemini CLI's files, and its forks': merged lowest first — the system defaults, the
    user's, the workspace's (not when the workspace is the home), the system settings."""
    files = [Path(defaults) if defaults else Path(system).parent / "system-defaults.json",
             user / "settings.json"]
    files += [f / folder / "settings.json" for f in reversed(_upwards(workspace)) if f != home]
    files.append(Path(system))
    for path in files:
        yield from _entries(path, _load_json(path).get("mcpServers"))


def qwen_home(env: Mapping[str, str], home: Path) -> Path:
    """Qwen Code's global folder: ``$QWEN_HOME`` (``~`` expanded, a relative one taken
    against the current folder; empty counts as unset), else ``~/.qwen``."""
    base = env.get("QWEN_HOME")
    if not base:
        return home / ".qwen"
    if base == "~" or base.startswith("~/"):
        return home / base[2:]
    return Path(os.path.abspath(base))


def _qwen(workspace: Path, home: Path, env: Mapping[str, str]) -> Found:
    yield from _gemini_family(workspace, home, ".qwen", qwen_home(env, home),
                              env.get("QWEN_CODE_SYSTEM_SETTINGS_PATH")
                              or "/etc/qwen-code/settings.json",
                              env.get("QWEN_CODE_SYSTEM_DEFAULTS_PATH"))


def _opencode(workspace: Path, home: Path, env: Mapping[str, str]) -> Found:
    base = env.get("XDG_CONFIG_HOME")
    folder = (Path(base) if base else home / ".config") / "opencode"
    files = [folder / n for n in ("config.json", "opencode.json", "opencode.jsonc")]
    if env.get("OPENCODE_CONFIG"):
        files.append(Path(env["OPENCODE_CONFIG"]))
    for f in reversed(_upwards(workspace)):
        files += [f / "opencode.json", f / "opencode.jsonc",
                  f / ".opencode" / "opencode.json", f / ".opencode" / "opencode.jsonc"]
    for path in files:
        yield from _entries(path, _load_json(path).get("mcp"))


# Kilo Code CLI's settings files: these names in its global folder (``config.json`` there
# only), and in each project folder, its ``.kilo/`` and its older ``.kilocode/``.
KILO_CONFIG_NAMES = ("config.json", "kilo.json", "kilo.jsonc", "opencode.json", "opencode.jsonc")
KILO_PROJECT_FOLDERS = (".kilo", ".kilocode")


def kilo_global_folder(env: Mapping[str, str], home: Path) -> Path:
    """Kilo Code CLI's global folder: ``$KILO_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/kilo``."""
    if env.get("KILO_CONFIG_DIR"):
        return Path(env["KILO_CONFIG_DIR"])
    base = env.get("XDG_CONFIG_HOME")
    return (Path(base) if base else home / ".config") / "kilo"


def kilo_config_files(workspace: Path, env: Mapping[str, str], home: Path) -> list[Path]:
    """Every settings file Kilo Code CLI may read for ``workspace``, outermost first."""
    files = [kilo_global_folder(env, home) / n for n in KILO_CONFIG_NAMES]
    if env.get("KILO_CONFIG"):
        files.append(Path(env["KILO_CONFIG"]))
    for f in reversed(_upwards(workspace)):
        files += [f / n for n in KILO_CONFIG_NAMES[1:]]
        files += [f / d / n for d in KILO_PROJECT_FOLDERS for n in KILO_CONFIG_NAMES[1:]]
    return files


def _kilo(workspace: Path, home: Path, env: Mapping[str, str]) -> Found:
    for path in kilo_config_files(workspace, env, home):
        yield from _entries(path, _load_json(path).get("mcp"))


# ------------------------------------------------------------------ shape
def _normalise(harness: str, raw: dict[str, Any], env: Mapping[str, str]) -> Spec | None:
    """``command``/``args``/``env``/``url`` from one harness's entry (``None``: disabled)."""
    if raw.get("enabled") is False or raw.get("disabled") is True:
        return None
    if harness in _OPENCODE_SHAPE:
        command = raw.get("command")
        argv = [str(a) for a in command] if isinstance(command, list) else (
            [command] if isinstance(command, str) else [])
        spec: Spec = {"command": argv[0] if argv else None, "args": argv[1:],
                      "env": raw.get("environment"), "url": raw.get("url")}
    else:
        spec = {"command": raw.get("command"), "args": raw.get("args"), "env": raw.get("env"),
                "url": raw.get("url") or raw.get("httpUrl")}
    expand = _expand_opencode if harness in _OPENCODE_SHAPE else _expand_shell
    args = spec["args"] if isinstance(spec["args"], list) else []
    variables = spec["env"] if isinstance(spec["env"], dict) else {}
    return {
        "command": expand(str(spec["command"]), env) if spec["command"] else None,
        "args": [expand(str(a), env) for a in args if isinstance(a, (str, int, float))],
        "env": {str(k): expand(str(v), env) for k, v in variables.items()
                if isinstance(v, (str, int, float))},
        "url": expand(str(spec["url"]), env) if spec["url"] else None,
    }


_SHELL_VAR = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)")
_OPENCODE_VAR = re.compile(r"\{env:(\w+)\}")


def _expand_shell(text: str, env: Mapping[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        return env.get(name) or (m.group(2) or "")
    return _SHELL_VAR.sub(one, text)


def _expand_opencode(text: str, env: Mapping[str, str]) -> str:
    return _OPENCODE_VAR.sub(lambda m: env.get(m.group(1), ""), text)


def _launch(spec: Spec) -> tuple[Any, ...]:
    return (spec.get("command"), tuple(spec.get("args") or ()),
            tuple(sorted((spec.get("env") or {}).items())), spec.get("url"))


# ------------------------------------------------------------------ files
def _entries(path: Path, servers: Any) -> Found:
    if isinstance(servers, dict):
        for name, raw in servers.items():
            if isinstance(raw, dict):
                yield path, str(name), raw


def _upwards(folder: Path) -> list[Path]:
    """``folder`` and every folder above it, nearest first."""
    return [folder, *folder.parents]


def _load_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(strip_jsonc(path.read_text()))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _load_toml(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def strip_jsonc(text: str) -> str:
    """JSON with ``//`` and ``/* */`` comments and trailing commas, as plain JSON."""
    out: list[str] = []
    comma: int | None = None   # where in ``out`` a comma waits that may be trailing
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            comma, i = None, j + 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        if c in "}]" and comma is not None:
            out[comma] = ""
        if c == ",":
            comma = len(out)
        elif not c.isspace():
            comma = None
        out.append(c)
        i += 1
    return "".join(out)
