"""The layer's settings: mode, policy, model, and where MCP servers and sites point.

Read, later ones winning, from ``<config dir>/config.yaml`` (the config dir
is ``$PREIMAGE_CONFIG_DIR`` or ``platformdirs.user_config_dir("preimage")``),
the environment (``PREIMAGE_MODE``, ``PREIMAGE_POLICY``, ``PREIMAGE_MODEL``,
``PREIMAGE_WORKSPACE``), and command-line options.  MCP servers the config
does not name are looked up in the harnesses' own MCP settings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from preimage.interface.errors import UsageError


class Mode(StrEnum):
    """How much the layer captures."""

    FULL = "full"                      # every state-changing call
    HIGH_IMPACT = "high-impact"        # only calls that delete, truncate, overwrite or reset
    BEYOND_REQUEST = "beyond-request"  # only calls reaching past what they name or the workspace
    HUMAN_WORK = "human-work"          # skip state a tool can regenerate (caches, builds, envs)


class McpServer(BaseModel):
    """What an MCP server talks to: its kind and the target URI of its system."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["postgres", "mysql", "sqlite", "kubernetes", "email", "browser"] | None = None
    target: str | None = Field(None, description="postgresql://…, imap://…, k8s://ctx, …")
    profile: str | None = Field(None, description="browser profile directory (browser kind)")


class Site(BaseModel):
    """A web application's origin read through a site adapter, with the adapter's parameters."""

    model_config = ConfigDict(extra="forbid")

    adapter: str = Field(description="site adapter name: web+<adapter>://")
    params: dict[str, str] = Field(
        default_factory=dict, description="target parameters the adapter needs (Trac: env)"
    )

    @classmethod
    def parse(cls, value: str | Site) -> Site:
        """``"trac"``, ``"trac?env=/srv/trac"`` or a :class:`Site`."""
        if isinstance(value, Site):
            return value
        from urllib.parse import parse_qsl

        name, _, query = value.partition("?")
        return cls(adapter=name.strip(), params=dict(parse_qsl(query)))


class LayerConfig(BaseModel):
    """Every setting of the backup layer."""

    model_config = ConfigDict(extra="forbid")

    mode: Mode = Mode.FULL
    policy: str = Field("", description="plain-words policy, e.g. 'never back up node_modules'")
    model: str | None = Field(None, description="litellm model name; tier 4 is off when unset")
    learn: bool = Field(True, description="save what the model decides as a learned rule")
    on_failure: Literal["allow", "ask", "deny"] = "ask"
    approve: bool = Field(False, description="answer 'allow' to the harness for backed-up calls")
    observe: bool = Field(
        False, description="run each shell call supervised (preimage run) where the harness "
        "lets it run unasked; see layer.harnesses.observed_rewrite")
    timeout: float = Field(45.0, description="seconds the hook may spend before it lets the call run")
    workspace: str | None = None
    mcp: dict[str, McpServer] = Field(default_factory=dict)
    sites: dict[str, str | Site] = Field(
        default_factory=dict,
        description="origin → site adapter name ('trac', 'trac?env=/srv/trac') or {adapter, params}",
    )
    browser_profile: str | None = None
    workspace_snapshot_home: bool = Field(
        False, description="allow a workspace snapshot of the whole home directory"
    )

    def site(self, origin: str) -> Site | None:
        """The site adapter configured for ``origin`` (``scheme://host:port``)."""
        value = next((v for k, v in self.sites.items() if k.rstrip("/") == origin), None)
        return Site.parse(value) if value else None

    @classmethod
    def load(cls, **overrides: Any) -> LayerConfig:
        """Config file, then environment, then ``overrides`` (``None`` values ignored)."""
        data: dict[str, Any] = {}
        path = config_dir() / "config.yaml"
        if path.is_file():
            try:
                loaded = yaml.safe_load(path.read_text()) or {}
            except (OSError, yaml.YAMLError) as exc:
                raise UsageError(f"cannot read {path}: {exc}; fix or remove it") from exc
            if not isinstance(loaded, dict):
                raise UsageError(f"{path} must hold a mapping of settings")
            data.update(loaded)
        for key, var in (("mode", "PREIMAGE_MODE"), ("policy", "PREIMAGE_POLICY"),
                         ("model", "PREIMAGE_MODEL"), ("workspace", "PREIMAGE_WORKSPACE")):
            if os.environ.get(var):
                data[key] = os.environ[var]
        data.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise UsageError(f"invalid preimage layer settings: {exc}") from exc


def config_dir() -> Path:
    """``$PREIMAGE_CONFIG_DIR`` or the platform's user config directory for preimage."""
    env = os.environ.get("PREIMAGE_CONFIG_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("preimage", appauthor=False))


def log_path() -> Path:
    """``$PREIMAGE_LOG`` or ``hook.log`` in the user log directory."""
    env = os.environ.get("PREIMAGE_LOG")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_log_dir("preimage", appauthor=False)) / "hook.log"


def rules_dir() -> Path:
    """Where user rules live (``rules.d`` in the config directory)."""
    return config_dir() / "rules.d"


def discover_mcp(workspace: str, home: str, *, harness: str | None = None,
                 env: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """MCP server definitions (command, args, env, url) from the harnesses' own settings.

    Claude Code's ``.mcp.json`` and ``~/.claude.json``, Codex's ``config.toml``, Gemini
    CLI's ``settings.json`` and OpenCode's ``opencode.json`` (see
    :mod:`preimage.layer.mcp_servers`); the calling ``harness``'s own win.
    """
    from preimage.layer.mcp_servers import discover

    return discover(workspace, home, harness=harness, env=env)
