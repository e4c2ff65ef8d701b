"""Codex CLI: ``PreToolUse`` / ``PostToolUse`` command hooks from ``hooks.json``.

Payload (stdin): ``session_id``, ``turn_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, ``model``, ``permission_mode``, ``tool_name``, ``tool_input``,
``tool_use_id``; ``PostToolUse`` adds ``tool_response`` as a *string*.  Tools: ``Bash``
(``{"command"}``, whatever the model called — ``exec_command``, ``shell``), ``apply_patch``
(``{"command": PATCH}``; ``Write``/``Edit`` match it too), MCP tools ``mcp__<server>__<tool>``.

Answer: Codex reads the Claude Code shape but rejects, as an invalid hook output,
``permissionDecision: "allow"`` without ``updatedInput``, ``permissionDecision: "ask"``,
and ``permissionDecisionReason`` without a decision — so ``--approve`` has no effect
here and ``on_failure: ask`` denies (Codex hooks cannot hand a call to the user).
Hooks must be trusted in Codex (``/hooks``) before they run.

Rewrites: Codex runs ``updatedInput`` as given, but runs shell commands inside its
sandbox unless told otherwise, and the sandbox's writable roots (the workspace, ``/tmp``)
leave out the store — so ``rm`` → ``preimage trash`` is answered only when the hook can
tell the commands run unsandboxed (:func:`sandbox_mode` is ``danger-full-access``); the
payload does not say, so it is read from the command line of the Codex process that
ran the hook and from Codex's ``config.toml``.  Anything else keeps the capture.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig
from preimage.layer.deciding.completion import Status, ToolResult
from preimage.layer.decision import Action, Decision
from preimage.layer.harnesses._base import Harness, Scope, _shorten, home
from preimage.layer.harnesses.hook import HookOutcome

_EXIT = re.compile(r"(?:Process exited with code|Exit code:)\s*(-?\d+)")


class Codex(Harness):
    """OpenAI's Codex CLI."""

    name = "codex"
    title = "Codex CLI"
    binary = "codex"
    pre_events = ("PreToolUse",)
    post_events = ("PostToolUse",)

    def rewrite_stopped(self, call: ToolCall, env: Mapping[str, str], pid: int) -> str | None:
        mode = sandbox_mode(pid, env, call.cwd)
        if mode == UNSANDBOXED:
            return None
        return ("Codex runs it in its sandbox (sandbox_mode " + mode + ")" if mode else
                "Codex's sandbox mode cannot be told from its command line and settings")

    def result(self, payload: dict[str, Any], *, failed: bool) -> ToolResult:
        response = payload.get("tool_response")
        text = response if isinstance(response, str) else json.dumps(response, default=str)
        code = _EXIT.search(text or "")
        status: Status = "unknown" if code is None else (
            "ok" if int(code.group(1)) == 0 else "error")
        return ToolResult(status=status, output=_shorten(text))

    def answer(self, decision: Decision, config: LayerConfig, *,
               permission_mode: str | None = None) -> HookOutcome:
        if not self.worth_saying(decision):
            return HookOutcome("{}")
        specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
        out: dict[str, Any] = {"hookSpecificOutput": specific}
        if decision.additional_context:
            specific["additionalContext"] = decision.additional_context
        if decision.action is Action.REWRITE and decision.updated_input is not None:
            specific["permissionDecision"] = "allow"
            specific["permissionDecisionReason"] = "preimage rewrote the call into a reversible form"
            specific["updatedInput"] = decision.updated_input
        if decision.error:
            out["systemMessage"] = self.failure_message(decision)
            if self.refusal(config):
                specific["permissionDecision"] = "deny"
                specific["permissionDecisionReason"] = out["systemMessage"]
                specific.pop("updatedInput", None)
        return HookOutcome(json.dumps(out))

    def settings_path(self, scope: Scope, project: Path) -> Path:
        if scope == "user":
            base = os.environ.get("CODEX_HOME")
            return (Path(base) if base else home() / ".codex") / "hooks.json"
        return project / ".codex" / "hooks.json"


# ------------------------------------------------------------------ Codex's sandbox
UNSANDBOXED = "danger-full-access"
_BYPASS = ("--dangerously-bypass-approvals-and-sandbox", "--yolo")


def codex_argv(pid: int, depth: int = 6) -> list[str] | None:
    """The arguments of the Codex process among ``pid``'s ancestors (the native binary
    that ran the hook), or ``None`` when there is none (``/proc``, Linux)."""
    for _ in range(depth):
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
            pid = int(stat[stat.rindex(b")") + 2:].split()[1])   # the parent's pid
            if pid <= 1:
                return None
            exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
            if exe == "codex":
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    words = fh.read().split(b"\0")
                return [w.decode("utf-8", "surrogateescape") for w in words[1:] if w]
        except (OSError, ValueError, IndexError):
            return None
    return None


def _toml_value(text: str) -> Any:
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text   # Codex reads an unquoted -c value as a string


def _from_argv(argv: Sequence[str]) -> tuple[str | None, str | None, bool]:
    """``(sandbox mode, profile, whether the user config is read)`` from the command line
    (``None``: it sets none; a mode it cannot tell is ``"unknown"``)."""
    mode = profile = None
    user_config = True
    it = iter(argv)
    for word in it:
        if word == "--":
            break
        name, eq, value = word.partition("=")
        if word in _BYPASS:
            return UNSANDBOXED, profile, user_config
        if word in ("--full-auto", "--approve-for-me"):
            mode = "workspace-write"
        elif word == "--ignore-user-config":
            user_config = False
        elif name == "--remote":
            mode = "unknown"   # the commands run on another machine
            if not eq:
                next(it, None)
        elif name in ("--sandbox", "-s"):
            mode = value if eq else next(it, None)
        elif name in ("--profile", "-p"):
            profile = value if eq else next(it, None)
        elif name in ("--config", "-c"):
            pair = value if eq else next(it, "")
            key, _, raw = pair.partition("=")
            if key.strip() == "sandbox_mode":
                got = _toml_value(raw.strip())
                mode = got if isinstance(got, str) else "unknown"
    return mode, profile, user_config


def _config(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def sandbox_mode(pid: int, env: Mapping[str, str], cwd: str) -> str | None:
    """The sandbox Codex runs shell commands in, for the session whose hook process is
    ``pid``: ``danger-full-access`` (none), another mode, or ``None`` when it cannot be told.

    The Codex command line wins (``--dangerously-bypass-approvals-and-sandbox``,
    ``--sandbox``, ``--full-auto``/``--approve-for-me``, ``-c sandbox_mode=…``,
    ``--profile``, ``--ignore-user-config``, ``--remote``), then ``sandbox_mode`` in the
    profile's ``$CODEX_HOME/NAME.config.toml``, its ``[profiles.NAME]`` and the top level
    of ``$CODEX_HOME/config.toml``.  A
    project's ``.codex/config.toml`` can only make the answer sandboxed: whether Codex
    reads it depends on a trust this hook cannot see.
    """
    argv = codex_argv(pid)
    return None if argv is None else sandbox_of(argv, env, cwd)


def sandbox_of(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> str | None:
    """The sandbox mode of a Codex process run with ``argv`` (see :func:`sandbox_mode`)."""
    mode, profile, user_config = _from_argv(argv)
    if mode is None and user_config:
        base = env.get("CODEX_HOME")
        home = Path(base) if base else Path(env.get("HOME") or os.path.expanduser("~")) / ".codex"
        doc = _config(home / "config.toml")
        profile = profile or (doc.get("profile") if isinstance(doc.get("profile"), str) else None)
        profiles = doc.get("profiles") if isinstance(doc.get("profiles"), dict) else {}
        legacy = profiles.get(profile) if profile and isinstance(profiles, dict) else None
        layered = _config(home / f"{profile}.config.toml") if profile else {}
        for layer in (layered, legacy, doc):   # the profile's own file, [profiles.X], the base
            if isinstance(layer, dict) and isinstance(layer.get("sandbox_mode"), str):
                mode = layer["sandbox_mode"]
                break
    if mode == UNSANDBOXED:
        folder = Path(cwd)
        for place in (folder, *folder.parents):
            project = _config(place / ".codex" / "config.toml").get("sandbox_mode")
            if isinstance(project, str) and project != UNSANDBOXED:
                return project
    return mode
