"""The hook transport: one harness payload in, that harness's answer out.

:func:`handle` is the single entry every hook process (and the resident decision
service) answers through.  It picks the harness's adapter
(:mod:`preimage.layer.harnesses`), reads the payload into a harness-neutral event,
and then

* before a tool call: :meth:`BackupLayer.before` decides and backs up, within
  ``timeout`` seconds; the adapter writes the decision in the harness's terms —
  nothing to say, the backup ID for the model, a rewritten input, or (when the
  backup failed) a message saying the call is NOT protected, turned into a
  refusal by ``on_failure: deny`` (or ``ask`` where the harness can ask);
* after it: :meth:`BackupLayer.after` records how the call ended against the
  backup taken before it.

It never raises and never hangs the harness: settings or a payload it cannot read
are answered with a visible message, and every decision goes to the hook log.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig
from preimage.layer.decision import Action, Decision

if TYPE_CHECKING:
    from preimage.layer.completion import Completion, ToolResult


def log_path() -> Path:
    """``$PREIMAGE_LOG`` or ``hook.log`` in the user log directory."""
    env = os.environ.get("PREIMAGE_LOG")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_log_dir("preimage", appauthor=False)) / "hook.log"


def log(event: dict[str, Any]) -> None:
    """Append one JSON line to the hook log; a log that cannot be written is skipped."""
    try:
        path = log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as fh:
            fh.write(json.dumps({"time": time.time(), **event}, default=str) + "\n")
    except OSError:
        pass


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


def handle(harness: str, args: Sequence[str], stdin_text: str) -> HookOutcome:
    """One hook call, start to finish, as a value: never raises, never exits.

    ``harness`` names the payload format (``claude-code``, ``codex``, ``gemini``,
    ``opencode``; see :mod:`preimage.layer.harnesses`), ``args`` are the options after
    ``preimage hook HARNESS`` (``--mode``, ``--policy``, ``--workspace``, ``--approve``,
    ``--on-failure``, ``--timeout``) and ``stdin_text`` the payload.  Before a tool call
    the layer decides and backs up; after it, :meth:`BackupLayer.after` records how the
    call ended against that backup.  Both the in-process hook and a resident decision
    service answer through this one function.
    """
    from preimage.layer.harnesses import get_harness

    try:
        adapter = get_harness(harness)
    except Exception as exc:  # an unknown harness name: say so on stderr, decide nothing
        log({"event": "unknown-harness", "harness": harness})
        return HookOutcome("{}", f"preimage: {exc}\n", 0)
    cfg: LayerConfig | None = None
    try:
        opts = _hook_options(args)
        cfg = LayerConfig.load(
            mode=opts.mode, policy=opts.policy, approve=opts.approve,
            on_failure=opts.on_failure, timeout=opts.timeout,
            workspace=os.path.abspath(opts.workspace) if opts.workspace else None,
        )
    except (argparse.ArgumentError, Exception) as exc:  # bad settings: answer, never crash
        log({"event": "config-error", "error": str(exc)})
        return adapter.answer_unread(f"settings unreadable, nothing backed up — {exc}", cfg)
    try:
        payload = json.loads(stdin_text) if stdin_text.strip() else None
        event = adapter.event(payload)
    except ValueError as exc:
        log({"event": "malformed", "harness": harness, "error": str(exc),
             "input": stdin_text[:500]})
        return adapter.answer_unread(
            f"could not read the hook payload ({exc}); nothing was backed up", cfg)
    if event.phase == "other" or event.call is None:
        log({"event": "ignored", "harness": harness, "hook_event_name": event.name})
        return HookOutcome("{}")
    if event.phase == "post":
        return adapter.answer_after(_after(event.call, event.result, cfg))
    decision = _decide_with_deadline(event.call, cfg)
    log({"event": "decision", "harness": harness, "tool": event.call.tool,
         "session": event.call.session_id, "tool_use_id": event.call.tool_use_id,
         **{k: v for k, v in decision.to_dict().items() if k != "findings"}})
    from preimage.layer.completion import remember

    remember(event.call, backup_id=decision.backup_id, error=decision.error,
             targets=decision.targets)
    return adapter.answer(decision, cfg)


def run_hook(stdin_text: str, *, config: LayerConfig | None = None,
             harness: str = "claude-code") -> dict[str, Any]:
    """A Claude Code ``PreToolUse`` payload in, its JSON answer out (never raises).

    A convenience over :func:`handle` for tests and embedding; ``config`` replaces the
    settings file and environment.
    """
    from preimage.layer.harnesses import get_harness
    from preimage.layer.harnesses.claude_code import ClaudeCode

    adapter = get_harness(harness)
    try:
        payload = json.loads(stdin_text) if stdin_text.strip() else None
        event = adapter.event(payload)
        cfg = config or LayerConfig.load()
    except Exception as exc:
        return {"systemMessage": f"preimage: could not read the hook call ({exc}); "
                                 "nothing was backed up"}
    if event.phase != "pre" or event.call is None:
        return {}
    decision = _decide_with_deadline(event.call, cfg)
    if isinstance(adapter, ClaudeCode):
        return adapter.answer_doc(decision, cfg)
    answer: dict[str, Any] = json.loads(adapter.answer(decision, cfg).stdout)
    return answer


def _after(call: ToolCall, result: ToolResult | None, config: LayerConfig) -> Completion:
    """Hand a finished call to the layer and log its completion (never raises)."""
    from preimage.layer.completion import ToolResult, complete

    done = result or ToolResult()
    try:
        from preimage.layer.layer import BackupLayer

        completion = BackupLayer(config=config).after(call, done)
    except Exception as exc:  # recording must never disturb the agent
        log({"event": "after-error", "error": str(exc)})
        completion = complete(call, done)
    log({"event": "completed", "harness": call.harness, **completion.to_dict()})
    return completion


def _decide_with_deadline(call: ToolCall, config: LayerConfig) -> Decision:
    from preimage.layer.layer import BackupLayer

    box: dict[str, Decision] = {}

    def work() -> None:
        try:
            box["d"] = BackupLayer(config=config).before(call)
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
