"""The hook transport: one harness payload in, that harness's answer out.

:func:`handle` is the single entry every hook process (and the resident decision
service) answers through.  It picks the harness's adapter
(:mod:`preimage.layer.harnesses`), reads the payload into a harness-neutral event,
and then

* before a tool call: :meth:`BackupLayer.before` decides and backs up, within
  ``timeout`` seconds; the adapter writes the decision in the harness's terms —
  nothing to say, the backup ID for the model, a rewritten input (which Claude Code
  shows the user to approve, unless ``--approve`` or the session bypasses
  permissions; harnesses that cannot ask apply it), or (when the backup failed) a
  message saying the call is NOT protected, turned into a refusal by
  ``on_failure: deny`` (or ``ask`` where the harness can ask);
* after it: :meth:`BackupLayer.after` records how the call ended against the
  backup taken before it.

It never raises and never hangs the harness: settings or a payload it cannot read
are answered with a visible message, and every decision goes to the hook log.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig, log_path
from preimage.layer.decision import Action, Decision

if TYPE_CHECKING:
    from preimage.layer.deciding.completion import Completion, ToolResult
    from preimage.layer.harnesses._base import Harness, HookEvent


def log_line(event: dict[str, Any]) -> str:
    """``event`` as the hook log's JSON line (stamped with the time, secrets redacted)."""
    from preimage.interface.redact import redact_value

    return json.dumps(redact_value({"time": time.time(), **event}), default=str)


#: The hook log is renamed to ``hook.log.1`` (replacing the one before) past this size:
#: a line or four per call would otherwise grow it for as long as agents run.
LOG_LIMIT = 16 << 20


def log(event: dict[str, Any]) -> None:
    """Append one JSON line to the hook log (created 0600, secrets redacted); a log that
    cannot be written is skipped."""
    try:
        path = log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        line = log_line(event)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a") as fh:
            fh.write(line + "\n")
            fh.flush()
            mine = os.fstat(fd)
            if mine.st_size > LOG_LIMIT:
                _rotate(path, mine)
    except (OSError, ValueError):
        pass


def _rotate(path: Path, mine: os.stat_result) -> None:
    """Rename the full log ``path`` (open here as ``mine``) to ``….1``, unless another
    hook already did: then the name is a new log's, which must stay."""
    now = os.stat(path)
    if (now.st_ino, now.st_dev) == (mine.st_ino, mine.st_dev):
        os.replace(path, path.with_name(path.name + ".1"))


def answer(decision: Decision, config: LayerConfig, *, permission_mode: str | None = None,
           harness: str = "claude-code") -> dict[str, Any]:
    """``harness``'s JSON answer to a pre-call hook for ``decision`` (``permission_mode``
    from the payload, where the harness sends one)."""
    from preimage.layer.harnesses import get_harness

    adapter = get_harness(harness)
    doc: dict[str, Any] = json.loads(
        adapter.answer(decision, config, permission_mode=permission_mode).stdout)
    return doc


@dataclass(frozen=True)
class HookOutcome:
    """What a hook process prints and how it exits; ``then``, work its caller runs once
    the answer is delivered (see ``handle``'s ``answer_first``)."""

    stdout: str
    stderr: str = ""
    exit_code: int = 0
    then: Callable[[], None] | None = field(default=None, compare=False)


@functools.cache
def _hook_parser() -> argparse.ArgumentParser:
    """Built once (a process answers many calls in the decision service): parsing does not
    change it."""
    parser = argparse.ArgumentParser(prog="preimage hook", add_help=False, exit_on_error=False)
    parser.add_argument("--mode")
    parser.add_argument("--policy")
    parser.add_argument("--workspace")
    parser.add_argument("--approve", action="store_true", default=None)
    parser.add_argument("--on-failure", dest="on_failure", choices=["allow", "ask", "deny"])
    parser.add_argument("--timeout", type=float)
    return parser


def _hook_options(args: Sequence[str]) -> argparse.Namespace:
    return _hook_parser().parse_args(list(args))


def handle(harness: str, args: Sequence[str], stdin_text: str, *,
           env: Mapping[str, str] | None = None, cwd: str | None = None,
           pid: int | None = None, answer_first: bool = False) -> HookOutcome:
    """One hook call, start to finish, as a value: never raises, never exits.

    ``harness`` names the payload format (``claude-code``, ``codex``, ``gemini``,
    ``opencode``; see :mod:`preimage.layer.harnesses`), ``args`` are the options after
    ``preimage hook HARNESS`` (``--mode``, ``--policy``, ``--workspace``, ``--approve``,
    ``--on-failure``, ``--timeout``) and ``stdin_text`` the payload.  Before a tool call
    the layer decides and backs up; after it, :meth:`BackupLayer.after` records how the
    call ended against that backup.  Both the in-process hook and a resident decision
    service answer through this one function; the service passes the calling hook
    process's ``env`` (what command lines expand in) and ``cwd`` (for a payload without
    one and a relative ``--workspace``) and ``pid`` (the hook process, whose ancestors
    are the harness; default: this process).

    ``answer_first`` (the decision service's call processes): a post-call event whose
    answer does not depend on it (and not an MCP call's, whose after-event may say which
    page the next call acts on) is answered before the capture after the call, which is
    left in the outcome's ``then`` for the caller to run once the answer is delivered —
    the session's lock held from before the answer until that capture is done, and every
    pre-call event of the session that may change anything answered only once it is, so
    the capture still sees the state the call left and nothing of the next call.
    """
    from preimage.layer.harnesses import get_harness

    try:
        adapter = get_harness(harness)
    except Exception as exc:  # an unknown harness name: say so on stderr, decide nothing
        log({"event": "unknown-harness", "harness": harness})
        return HookOutcome("{}", f"preimage: {exc}\n", 0)
    cfg: LayerConfig | None = None
    unread: str | None = None   # why the settings could not be read
    on_failure = None
    try:
        opts = _hook_options(args)
        on_failure = opts.on_failure
        cfg = LayerConfig.load(
            mode=opts.mode, policy=opts.policy, approve=opts.approve,
            on_failure=opts.on_failure, timeout=opts.timeout,
            workspace=os.path.abspath(os.path.join(cwd or os.getcwd(), opts.workspace))
            if opts.workspace else None,
        )
    except (argparse.ArgumentError, Exception) as exc:  # bad settings: answer, never crash
        log({"event": "config-error", "error": str(exc)})
        unread = f"settings unreadable, nothing backed up — {exc}"
    try:
        payload = json.loads(stdin_text) if stdin_text.strip() else None
        event = adapter.event(payload)
    except (ValueError, RecursionError) as exc:   # a payload nested past the parser's depth too
        log({"event": "malformed", "harness": harness, "error": str(exc),
             "input": stdin_text[:500]})
        return adapter.answer_unread(
            f"could not read the hook payload ({exc}); nothing was backed up", cfg)
    if cfg is None:
        return _unread_settings(adapter, event, unread or "settings unreadable", on_failure)
    if event.phase == "other" or event.call is None:
        log({"event": "ignored", "harness": harness, "hook_event_name": event.name})
        return HookOutcome("{}")
    if cwd and isinstance(payload, dict) and not payload.get("cwd"):
        event.call.cwd = cwd
    if event.phase == "post":
        # not an MCP call (each adapter names one mcp__<server>__<tool>): its after-event
        # may name the page a browser is on, which the session's next call is decided by
        if answer_first and event.call.session_id and not cfg.observe \
                and not event.call.tool.startswith("mcp__"):
            later = _after_the_answer(adapter, event.call, event.result, cfg, env, cwd)
            if later is not None:
                return later
        return adapter.answer_after(_after(event.call, event.result, cfg, env, cwd))
    seen_env = env if env is not None else os.environ
    event.call.rewrite_stopped = adapter.rewrite_stopped(event.call, seen_env, pid or os.getpid())
    event.call.runs_rewrites = event.call.rewrite_stopped is None and adapter.applies_rewrites
    decision = _decide_with_deadline(event.call, cfg, env, cwd)
    if event.call.session_id and not (decision.action is Action.PASS and not any(
            f.changes_state for f in decision.findings)):
        # a call that may change anything runs only once the capture after the session's
        # previous call (made after its hook answered) is done; a read-only one need not
        _wait_for_session(event.call.session_id, cfg.timeout, env, cwd)
    if cfg.observe:
        from preimage.layer.harnesses.observed_rewrite import supervised_form

        supervised_form(event.call, decision, cfg, harness=harness,
                        permission_mode=event.permission_mode,
                        env=env if env is not None else os.environ)
    log({"event": "decision", "harness": harness, "tool": event.call.tool,
         "session": event.call.session_id, "tool_use_id": event.call.tool_use_id,
         **{k: v for k, v in decision.to_dict().items() if k != "findings"}})
    from preimage.layer.deciding.completion import remember

    rewritten = None
    if decision.updated_input is not None and not event.call.tool_use_id:
        # No call id (Gemini CLI): the after-event names the call by its input, which is
        # then the rewritten one (or the original, where the harness did not apply it).
        rewritten = replace(event.call, input=decision.updated_input)
    remember(event.call, backup_id=decision.backup_id, error=decision.error,
             targets=decision.targets, also=rewritten)
    outcome = adapter.answer(decision, cfg, permission_mode=event.permission_mode)
    if decision.backup_id is None and decision.error is None and not cfg.observe \
            and not event.call.tool.startswith("mcp__") and outcome.exit_code == 0:
        # no note was left (see remember): the post-call event has nothing to record; an
        # MCP call's may still name the page it is on
        outcome = replace(outcome, stdout=adapter.nothing_after(outcome.stdout))
    return outcome


def _session_home(env: Mapping[str, str] | None, cwd: str | None) -> Path:
    """The store whose ``locks/sessions`` the hook's session locks live in."""
    from preimage.store.store import default_home

    return hook_home(env, cwd) or default_home()


def _wait_for_session(session: str, within: float, env: Mapping[str, str] | None,
                      cwd: str | None) -> None:
    from preimage.engine.call_locks import mark_late, wait_for_session

    home = _session_home(env, cwd)
    if not wait_for_session(home, session, within):
        mark_late(home, session)
        log({"event": "session-wait", "session": session,
             "error": f"the capture after the session's previous call still ran after "
                      f"{within:g} s; this call is answered without waiting for it, and "
                      "that capture is marked overlapped (undo of its call refuses)"})


def _after_the_answer(adapter: Harness, call: ToolCall, result: ToolResult | None,
                      config: LayerConfig, env: Mapping[str, str] | None,
                      cwd: str | None) -> HookOutcome | None:
    """The post-call answer now, the capture after the call in its ``then`` (see
    :func:`handle`); ``None`` when the session's lock could not be taken (and the call's
    completion is still to make).

    A harness whose answer says which undo the call allows (``answer_after_tells``) is
    told from the pre-call note: the backup, and ``preimage undo`` of it — the undo the
    capture after the call is there for (an undo asked for before that capture is done
    waits for it; should it fail, the undo says so and names ``preimage restore``).  Its
    call with no backup, or whose lock could not be taken, is answered once recorded."""
    from preimage.engine.call_locks import hold_session, overlapped_since
    from preimage.layer.deciding.completion import Completion, ToolResult, complete

    assert call.session_id is not None
    session = call.session_id
    home = _session_home(env, cwd)
    first = complete(call, result or ToolResult()) if adapter.answer_after_tells else None
    held = None
    if first is None or first.backup_id is not None:   # a capture after the call to make
        held = hold_session(home, session, config.timeout)
    if held is None:
        if first is None:
            return None
        return adapter.answer_after(_after(call, result, config, env, cwd, completion=first))
    started = time.time()   # from here on the capture is the session's, done or not
    answered = adapter.answer_after(
        Completion(tool=call.tool, status="unknown") if first is None
        else replace(first, post_pending=True))

    def then() -> None:
        try:
            done = _after(call, result, config, env, cwd, answered_first=True,
                          completion=first)
            if overlapped_since(home, session, started):
                _mark_overlapped(home, done)
        finally:
            os.close(held)

    return replace(answered, then=then)


def _mark_overlapped(home: Path, done: Completion) -> None:
    """The session's next call ran while the capture after ``done``'s call did: that
    capture may hold the next call's changes, so its backup is marked ``overlapped`` —
    ``preimage undo`` of the call then refuses, saying why (never raises)."""
    if done.post_backup_id is None:
        return
    try:
        from preimage.store.store import Store

        with Store(home) as st:
            st.catalog.set_status(done.post_backup_id, "overlapped", only_if="complete")
    except Exception as exc:  # recording must never disturb the agent
        log({"event": "after-error", "error": f"could not mark {done.post_backup_id} "
                                              f"overlapped: {exc}"})
        return
    log({"event": "overlapped", "session": done.session_id, "backup_id": done.backup_id,
         "post_backup_id": done.post_backup_id,
         "error": "the session's next call ran while the state after this one was captured "
                  "(past the hook's timeout); undo of this call refuses — restore its "
                  "backup instead"})


def _unread_settings(adapter: Harness, event: HookEvent, message: str,
                     on_failure: str | None) -> HookOutcome:
    """The answer when the settings could not be read: before a call, as for a failed
    backup — ``on_failure`` from the command line, else the default ``ask`` (a harness
    that cannot ask refuses); after a call or for any other event, a visible message."""
    from preimage.layer.deciding.completion import remember, take

    if event.phase != "pre" or event.call is None:
        if event.phase == "post" and event.call is not None:
            take(event.call)
        return adapter.answer_unread(message, None)
    # A note, as for any failed backup, so the post-call event is not taken for one with
    # nothing to do (the hook's client answers those alone) and says it again.
    remember(event.call, backup_id=None, error=message, targets=[])
    fallback = LayerConfig(on_failure=on_failure or "ask")
    return adapter.answer(Decision(action=Action.PASS, tier=None, error=message), fallback)


def run_hook(stdin_text: str, *, config: LayerConfig | None = None,
             harness: str = "claude-code", env: Mapping[str, str] | None = None,
             cwd: str | None = None) -> dict[str, Any]:
    """A pre-call payload in, ``harness``'s JSON answer out (never raises).

    A convenience over the same steps as :func:`handle` for tests and embedding;
    ``config`` replaces the settings file and environment.
    """
    from preimage.layer.harnesses import get_harness

    adapter = get_harness(harness)
    try:
        payload = json.loads(stdin_text) if stdin_text.strip() else None
        event = adapter.event(payload)
    except Exception as exc:
        return {"systemMessage": f"preimage: could not read the hook call ({exc}); "
                                 "nothing was backed up"}
    try:
        cfg = config or LayerConfig.load()
    except Exception as exc:
        answer = _unread_settings(adapter, event,
                                  f"settings unreadable, nothing backed up — {exc}", None)
        return json.loads(answer.stdout)  # type: ignore[no-any-return]
    if event.phase != "pre" or event.call is None:
        return {}
    if cwd and isinstance(payload, dict) and not payload.get("cwd"):
        event.call.cwd = cwd
    decision = _decide_with_deadline(event.call, cfg, env, cwd)
    if cfg.observe:
        from preimage.layer.harnesses.observed_rewrite import supervised_form

        supervised_form(event.call, decision, cfg, harness=harness,
                        permission_mode=event.permission_mode,
                        env=env if env is not None else os.environ)
    doc: dict[str, Any] = json.loads(
        adapter.answer(decision, cfg, permission_mode=event.permission_mode).stdout)
    return doc


def _after(call: ToolCall, result: ToolResult | None, config: LayerConfig,
           env: Mapping[str, str] | None = None, cwd: str | None = None, *,
           answered_first: bool = False, completion: Completion | None = None) -> Completion:
    """Hand a finished call to the layer and log its completion (never raises);
    ``answered_first``: the hook had answered before (the log says so); ``completion``:
    made of the pre-call note already (its note taken)."""
    from preimage.layer.deciding.completion import ToolResult, complete

    done = result or ToolResult()
    try:
        from preimage.layer.deciding.backup_layer import BackupLayer

        layer = BackupLayer(config=config, env=dict(env) if env is not None else None,
                            home=hook_home(env, cwd))
        completion = layer.after(call, done, completion=completion)
    except Exception as exc:  # recording must never disturb the agent
        log({"event": "after-error", "error": str(exc)})
        completion = completion or complete(call, done)
    log({"event": "completed", "harness": call.harness, **completion.to_dict(),
         **({"answered_first": True} if answered_first else {})})
    return completion


def hook_home(env: Mapping[str, str] | None, cwd: str | None) -> Path | None:
    """The store the hook process was given: ``PREIMAGE_HOME`` of its environment ``env``,
    a relative one taken against the hook's working directory ``cwd``.  ``None`` (this
    process's own default) when the hook runs in this process or names no home — a
    decision service shares every setting that picks the default with its clients."""
    value = env.get("PREIMAGE_HOME") if env is not None else None
    if not value:
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() or not cwd else Path(cwd) / path


#: Seconds the hook waits, after its timeout, for a capture to stop and mark itself
#: abandoned (a capture blocked in a server call is left to the next ``prune``).
ABANDON_GRACE = 5.0


def _decide_with_deadline(call: ToolCall, config: LayerConfig,
                          env: Mapping[str, str] | None = None,
                          cwd: str | None = None) -> Decision:
    from preimage.engine.deadline import given_up_when
    from preimage.layer.deciding.backup_layer import BackupLayer

    box: dict[str, Decision] = {}
    given_up = threading.Event()

    def work() -> None:
        try:
            with given_up_when(given_up):
                box["d"] = BackupLayer(config=config, env=dict(env) if env is not None else None,
                                       home=hook_home(env, cwd)).before(call)
        except Exception as exc:  # never let the harness see a traceback
            box["d"] = Decision(Action.PASS, None, error=f"internal error: {exc}")

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(config.timeout)
    if "d" in box:
        return box["d"]
    # The call runs now: a capture still going on would read its changes.  It stops at
    # its next blob or before it completes, is marked abandoned and reclaims what it
    # wrote; a short grace lets it do so before this (maybe exiting) process answers.
    given_up.set()
    worker.join(ABANDON_GRACE)
    return Decision(Action.PASS, None, error=f"the backup did not finish within "
                    f"{config.timeout:g} s (the store or a server is slow or locked) and was "
                    "abandoned; the call runs unprotected")
