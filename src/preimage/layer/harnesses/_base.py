"""What every harness adapter has: reading its payload, answering it, where it is installed."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig
from preimage.layer.deciding.completion import Completion, ToolResult
from preimage.layer.decision import Action, Decision
from preimage.layer.harnesses.hook import HookOutcome

Phase = Literal["pre", "post", "other"]
Scope = Literal["project", "user", "local"]


@dataclass
class HookEvent:
    """One hook call: before a tool call (``pre``), after it (``post``), or anything else."""

    phase: Phase
    name: str
    call: ToolCall | None = None
    result: ToolResult | None = None
    permission_mode: str | None = None   # the harness's own, where it says (Claude Code)


class Harness:
    """An agent harness's hook protocol.  Subclasses set the names and override the answers."""

    name: ClassVar[str]
    title: ClassVar[str]
    binary: ClassVar[str]                 # the executable a user runs
    pre_events: ClassVar[tuple[str, ...]]
    post_events: ClassVar[tuple[str, ...]]
    failure_events: ClassVar[tuple[str, ...]] = ()   # post events that mean the tool failed
    can_ask: ClassVar[bool] = False       # whether the hook can hand the call to the user
    applies_rewrites: ClassVar[bool] = True   # whether it runs a rewritten input as given
    settings_comments: ClassVar[bool] = False  # whether its JSON settings may hold comments
    # whether its post-call answer tells the model which undo the call allows (answered
    # first by the decision service, it is told from the pre-call note)
    answer_after_tells: ClassVar[bool] = False

    def nothing_after(self, answer: str) -> str:
        """The pre-call ``answer`` for a call that left no note for its post-call event
        (no backup, no failure): a harness whose hook can skip that event when told so
        (a plugin) says it in the answer; the others answer as they are."""
        return answer

    # ------------------------------------------------------------ reading
    def event(self, payload: Any) -> HookEvent:
        """The event a payload describes.  Raises :class:`ValueError` on a malformed payload."""
        if not isinstance(payload, dict):
            raise ValueError(f"hook payload is {type(payload).__name__}, not a JSON object")
        name = payload.get("hook_event_name")
        if name is None and self.pre_events:
            name = self.pre_events[0]
        if name in self.pre_events:
            mode = payload.get("permission_mode")
            return HookEvent("pre", str(name), self.call(payload),
                             permission_mode=mode if isinstance(mode, str) else None)
        if name in self.post_events or name in self.failure_events:
            return HookEvent("post", str(name), self.call(payload),
                             self.result(payload, failed=name in self.failure_events))
        return HookEvent("other", str(name))

    def call(self, payload: dict[str, Any]) -> ToolCall:
        """The harness-neutral call in a payload with ``tool_name`` and ``tool_input``."""
        return ToolCall.from_hook_payload(payload, harness=self.name)

    def result(self, payload: dict[str, Any], *, failed: bool) -> ToolResult:
        """How the call ended, from a post-call payload."""
        response = payload.get("tool_response")
        duration = payload.get("duration_ms")
        error = payload.get("error")
        return ToolResult(
            status="error" if failed else "ok",
            duration_ms=float(duration) if isinstance(duration, (int, float)) else None,
            output=_shorten(response),
            error=str(error) if failed and error else None,
        )

    def rewrite_stopped(self, call: ToolCall, env: Mapping[str, str], pid: int) -> str | None:
        """Why ``call``, seen by hook process ``pid`` with environment ``env``, may not run
        a rewritten input as given though the harness applies rewrites (its sandbox may
        confine the command away from the store); ``None``: it runs it.  A rewrite such as
        ``rm`` → ``preimage trash`` takes no copy, so a harness that could not run it would
        lose the state; the reason reaches the model with the backup taken instead."""
        return None

    # ------------------------------------------------------------ answering
    def answer(self, decision: Decision, config: LayerConfig, *,
               permission_mode: str | None = None) -> HookOutcome:
        """The harness's answer to a pre-call hook."""
        raise NotImplementedError

    def answer_after(self, completion: Completion) -> HookOutcome:
        """The harness's answer to a post-call hook (nothing to say, by default)."""
        return HookOutcome("{}")

    def answer_unread(self, message: str, config: LayerConfig | None) -> HookOutcome:
        """The answer when the payload or the settings could not be read: say so, visibly."""
        return HookOutcome(json.dumps({"systemMessage": f"preimage: {message}"}))

    def refusal(self, config: LayerConfig) -> str | None:
        """``deny`` or ``ask`` for a call whose backup failed, as this harness can express it."""
        if config.on_failure == "allow":
            return None
        if config.on_failure == "ask" and not self.can_ask:
            return "deny"
        return config.on_failure

    @staticmethod
    def failure_message(decision: Decision) -> str:
        """What the user and the model are told when the backup failed."""
        return f"preimage: this call is NOT backed up — {decision.error}"

    @staticmethod
    def worth_saying(decision: Decision) -> bool:
        """Whether a decision has anything to tell the harness."""
        changes = any(f.changes_state for f in decision.findings)
        return not (decision.action is Action.PASS and not decision.error
                    and not (changes and decision.notes))

    # ------------------------------------------------------------ installing
    def settings_path(self, scope: Scope, project: Path) -> Path:
        """The file ``install`` edits for ``scope``."""
        raise NotImplementedError

    def scopes(self) -> tuple[Scope, ...]:
        """The scopes this harness reads hooks from."""
        return ("project", "user")


def _shorten(value: Any, limit: int = 2000) -> str:
    """The start of a tool's answer (for the log), plus the last ``Page URL`` line the
    answer names when it lies beyond the cut: the layer reads the browser's page from it
    after each call, and @playwright/mcp puts it after results of any length."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) <= limit:
        return text
    from preimage.layer.deciding.mcp_playwright import page_url_of

    head = text[:limit] + f"… ({len(text)} chars)"
    url = page_url_of(text)
    return head if url is None or url == page_url_of(head) else f"{head}\n- Page URL: {url}"


def home() -> Path:
    """The user's home directory (``$HOME`` first, as the harnesses read it)."""
    return Path(os.environ.get("HOME") or os.path.expanduser("~"))
