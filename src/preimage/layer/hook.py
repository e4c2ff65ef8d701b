"""The ``PreToolUse`` hook protocol (Claude Code; Codex reads the same shape).

Input on stdin: ``{"hook_event_name": "PreToolUse", "tool_name", "tool_input",
"cwd", "session_id", "tool_use_id", …}``.  Output on stdout, always one JSON
object and exit code 0 — a hook that crashes or hangs must never stop the
agent:

* nothing to protect → ``{}`` (the harness goes on as usual);
* backed up → ``hookSpecificOutput.additionalContext`` naming the backup ID
  (the harness's own permission rules still decide; ``approve`` adds
  ``permissionDecision: "allow"``);
* rewritten → ``updatedInput`` with ``permissionDecision: "ask"``: the user
  sees and approves the rewritten command, so a hook never approves a
  destructive call by itself (Claude Code applies ``updatedInput`` with
  ``allow`` or ``ask``; ``allow`` would also skip the user's own prompt).
  ``--approve``, or a session already in ``bypassPermissions`` mode, answers
  ``allow``;
* backup failed (store full or unwritable, target unreachable) →
  ``additionalContext`` and a ``systemMessage`` saying the call is NOT
  protected; ``on_failure: ask|deny`` turns that into a question or a refusal.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig
from preimage.layer.decision import Action, Decision


def log_path() -> Path:
    """``$PREIMAGE_LOG`` or ``hook.log`` in the user log directory."""
    env = os.environ.get("PREIMAGE_LOG")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_log_dir("preimage", appauthor=False)) / "hook.log"


def log(event: dict[str, Any]) -> None:
    """Append one JSON line to the hook log (created 0600, secrets redacted); a log that
    cannot be written is skipped."""
    from preimage._redact import redact_value

    try:
        path = log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(redact_value({"time": time.time(), **event}), default=str)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a") as fh:
            fh.write(line + "\n")
    except (OSError, ValueError):
        pass


def answer(decision: Decision, config: LayerConfig, *,
           permission_mode: str | None = None) -> dict[str, Any]:
    """The hook's JSON answer for ``decision`` (``permission_mode`` from the payload)."""
    changes = any(f.changes_state for f in decision.findings)
    if decision.action is Action.PASS and not decision.error and not (changes and decision.notes):
        return {}
    specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
    out: dict[str, Any] = {"hookSpecificOutput": specific}
    context = decision.additional_context
    if context:
        specific["additionalContext"] = context
    if decision.action is Action.REWRITE and decision.updated_input is not None:
        auto = config.approve or permission_mode == "bypassPermissions"
        specific["permissionDecision"] = "allow" if auto else "ask"
        specific["permissionDecisionReason"] = "preimage rewrote the call into a reversible form"
        specific["updatedInput"] = decision.updated_input
    elif decision.protected and config.approve:
        specific["permissionDecision"] = "allow"
        specific["permissionDecisionReason"] = f"backed up as {decision.backup_id}"
    if decision.error:
        out["systemMessage"] = f"preimage: this call is NOT backed up — {decision.error}"
        if config.on_failure != "allow":
            specific["permissionDecision"] = config.on_failure
            specific["permissionDecisionReason"] = out["systemMessage"]
            specific.pop("updatedInput", None)
    return out


@dataclass(frozen=True)
class HookOutcome:
    """What a hook process prints and how it exits."""

    stdout: str
    stderr: str = ""
    exit_code: int = 0


def _hook_options(args: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="preimage hook", add_help=False, exit_on_error=False)
    parser.add_argument("--mode")
    parser.add_argument("--policy")
    parser.add_argument("--workspace")
    parser.add_argument("--approve", action="store_true", default=None)
    parser.add_argument("--on-failure", dest="on_failure", choices=["allow", "ask", "deny"])
    parser.add_argument("--timeout", type=float)
    return parser.parse_args(list(args))


def handle(harness: str, args: Sequence[str], stdin_text: str, *,
           env: Mapping[str, str] | None = None, cwd: str | None = None) -> HookOutcome:
    """One hook call, start to finish, as a value: never raises, never exits.

    ``harness`` names the payload format (``claude-code``, ``codex``), ``args``
    are the options after ``preimage hook HARNESS`` (``--mode``, ``--policy``,
    ``--workspace``, ``--approve``, ``--on-failure``, ``--timeout``) and
    ``stdin_text`` the payload.  Both the in-process hook and a resident
    decision service answer through this one function; the service passes the
    calling hook process's ``env`` (what command lines expand in) and ``cwd``
    (for a payload without one and a relative ``--workspace``).
    """
    try:
        opts = _hook_options(args)
        cfg = LayerConfig.load(
            mode=opts.mode, policy=opts.policy, approve=opts.approve,
            on_failure=opts.on_failure, timeout=opts.timeout,
            workspace=os.path.abspath(os.path.join(cwd or os.getcwd(), opts.workspace))
            if opts.workspace else None,
        )
    except (argparse.ArgumentError, Exception) as exc:  # bad settings: answer, never crash
        log({"event": "config-error", "error": str(exc)})
        message = {"systemMessage": f"preimage: settings unreadable, nothing backed up — {exc}"}
        return HookOutcome(json.dumps(message))
    return HookOutcome(json.dumps(run_hook(stdin_text, config=cfg, harness=harness, env=env,
                                           cwd=cwd)))


def run_hook(stdin_text: str, *, config: LayerConfig | None = None,
             harness: str = "claude-code", env: Mapping[str, str] | None = None,
             cwd: str | None = None) -> dict[str, Any]:
    """Read one hook payload, decide, back up, and return the JSON answer (never raises)."""
    try:
        payload = json.loads(stdin_text) if stdin_text.strip() else None
    except (ValueError, RecursionError) as exc:   # a payload nested past the parser's depth too
        log({"event": "malformed", "error": str(exc), "input": stdin_text[:500]})
        return {}
    event = payload.get("hook_event_name") if isinstance(payload, dict) else None
    if event not in (None, "PreToolUse"):
        log({"event": "ignored", "hook_event_name": event})
        return {}
    try:
        call = ToolCall.from_hook_payload(payload, harness=harness)
        if cwd and isinstance(payload, dict) and not payload.get("cwd"):
            call.cwd = cwd
    except ValueError as exc:
        log({"event": "malformed", "error": str(exc), "input": str(payload)[:500]})
        return {}
    try:
        cfg = config or LayerConfig.load()
    except Exception as exc:  # a broken config file must not stop the agent
        log({"event": "config-error", "error": str(exc)})
        return {"systemMessage": f"preimage: settings unreadable, nothing backed up — {exc}"}
    decision = _decide_with_deadline(call, cfg, env)
    log({"event": "decision", "tool": call.tool, "session": call.session_id,
         **{k: v for k, v in decision.to_dict().items() if k != "findings"}})
    mode = payload.get("permission_mode") if isinstance(payload, dict) else None
    return answer(decision, cfg, permission_mode=mode if isinstance(mode, str) else None)


def _decide_with_deadline(call: ToolCall, config: LayerConfig,
                          env: Mapping[str, str] | None = None) -> Decision:
    from preimage.layer.layer import BackupLayer

    box: dict[str, Decision] = {}

    def work() -> None:
        try:
            box["d"] = BackupLayer(config=config,
                                   env=dict(env) if env is not None else None).before(call)
        except Exception as exc:  # never let the harness see a traceback
            box["d"] = Decision(Action.PASS, None, error=f"internal error: {exc}")

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(config.timeout)
    if "d" in box:
        return box["d"]
    return Decision(Action.PASS, None, error=f"the backup did not finish within "
                    f"{config.timeout:.0f} s (the store or a server is slow or locked); the call "
                    "runs unprotected")
