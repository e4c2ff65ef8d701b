"""A post-call event with nothing to do is answered by the hook client alone: no service,
no layer — and every event that has something to do still goes the whole way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from preimage.layer.deciding.completion import call_key, pending_dir
from preimage.layer.harnesses import get_harness
from preimage.services.hook_client import nothing_after

POST = {
    "claude-code": {"hook_event_name": "PostToolUse", "tool_name": "Bash",
                    "tool_input": {"command": "ls -la"}, "tool_response": {"stdout": ""},
                    "session_id": "0b7c-4e2a", "tool_use_id": "toolu_01AbC", "cwd": "/"},
    "codex": {"hook_event_name": "PostToolUse", "tool_name": "Bash", "turn_id": "t",
              "tool_input": {"command": "ls -la"}, "tool_response": "",
              "session_id": "019a-77", "tool_use_id": "call_9x", "cwd": "/"},
    "qwen": {"hook_event_name": "PostToolUse", "tool_name": "run_shell_command",
             "tool_input": {"command": "ls -la"}, "tool_response": {},
             "session_id": "qs 1/2", "tool_use_id": "call:7", "cwd": "/"},
}


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "log" / "hook.log"
    monkeypatch.setenv("PREIMAGE_LOG", str(path))
    monkeypatch.delenv("PREIMAGE_SUPERVISOR", raising=False)
    return path


@pytest.mark.parametrize("harness", sorted(POST))
def test_a_post_event_with_a_pre_call_note_goes_the_whole_way(harness: str, log: Path) -> None:
    """The note the pre-call hook leaves (named by the layer's own call_key) is found by the
    client, so that post event reaches the layer; without it, the client answers alone."""
    payload = POST[harness]
    assert nothing_after(harness, json.dumps(payload)) is not None
    event = get_harness(harness).event(json.loads(json.dumps(payload)))
    assert event.phase == "post" and event.call is not None
    note = pending_dir() / f"{call_key(event.call)}.json"
    note.parent.mkdir(parents=True)
    note.write_text("{}")
    assert nothing_after(harness, json.dumps(payload)) is None


@pytest.mark.parametrize("changed", [
    {"tool_name": "mcp__shop__write_query"},    # an MCP answer may name the page it is on
    {"tool_use_id": None},                      # no call id: the note's name is a digest
    {"hook_event_name": "PreToolUse"},          # before a call: always decided
])
def test_events_that_may_have_work_go_the_whole_way(changed: dict[str, object], log: Path) -> None:
    """MCP calls, calls without an id and pre-call events are never answered alone."""
    payload = {**POST["claude-code"], **changed}
    assert nothing_after("claude-code", json.dumps(payload)) is None
    assert nothing_after("gemini", json.dumps({**payload, "hook_event_name": "AfterTool"})) is None


def test_under_a_session_supervisor_every_end_is_marked(log: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Under `preimage session` the end of every call must reach the supervisor."""
    monkeypatch.setenv("PREIMAGE_SUPERVISOR", "/nonexistent.sock")
    assert nothing_after("claude-code", json.dumps(POST["claude-code"])) is None


def test_the_hook_process_answers_a_read_only_call_after_it_alone(home: Path, tmp_path: Path) -> None:
    """Through the real hook process: a read-only call's post event is answered `{}` and
    logged without a decision service; a backed-up call's post event still records its
    completion against its backup."""
    env = {**os.environ, "PREIMAGE_SERVICE": "off"}
    work = tmp_path / "w"
    work.mkdir()
    (work / "notes.txt").write_text("mine")

    def hook(event: str, command: str, use_id: str) -> subprocess.CompletedProcess[str]:
        payload = {"hook_event_name": event, "tool_name": "Bash", "cwd": str(work),
                   "tool_input": {"command": command}, "session_id": "s1",
                   "tool_use_id": use_id, **({"tool_response": {}} if event != "PreToolUse"
                                             else {})}
        return subprocess.run([sys.executable, "-m", "preimage", "hook", "claude-code"],
                              input=json.dumps(payload), capture_output=True, text=True,
                              env=env, timeout=300)

    for event in ("PreToolUse", "PostToolUse"):
        assert hook(event, "ls -la", "t-read").returncode == 0
    pre = hook("PreToolUse", "truncate -s 0 notes.txt", "t-write")
    backup = json.loads(pre.stdout)["hookSpecificOutput"]["additionalContext"]
    assert hook("PostToolUse", "truncate -s 0 notes.txt", "t-write").returncode == 0
    assert json.loads(hook("PostToolUse", "ls -la", "t-read").stdout) == {}
    events = [json.loads(line) for line in Path(os.environ["PREIMAGE_LOG"]).read_text().splitlines()]
    done = {e["tool_use_id"]: e for e in events if e.get("event") == "completed"}
    assert done["t-read"]["path"] == "nothing after" and done["t-read"]["backup_id"] is None
    assert done["t-write"].get("path") is None
    assert done["t-write"]["backup_id"] and done["t-write"]["backup_id"] in backup
