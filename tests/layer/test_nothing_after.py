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


GEMINI: dict[str, object] = {"hook_event_name": "AfterTool", "tool_name": "run_shell_command",
          "tool_input": {"command": "rm -r build", "dir_path": "sub"},
          "tool_response": {"llmContent": ""}, "session_id": "g-5e1", "cwd": "/"}


def test_gemini_without_call_ids_is_answered_alone_only_when_its_session_left_no_note(
        log: Path) -> None:
    """Gemini CLI names no call: its note's name ends in a digest of the mapped tool and
    input. A note of this session — whichever call it is for, written or being written —
    sends the event the whole way; another session's note does not; an MCP call and an
    event with a call id always go."""
    assert nothing_after("gemini", json.dumps(GEMINI)) is not None
    event = get_harness("gemini").event(json.loads(json.dumps(GEMINI)))
    assert event.phase == "post" and event.call is not None
    mine = pending_dir() / f"{call_key(event.call)}.json"
    other = event.call.__class__(**{**vars(event.call), "session_id": "g-other"})
    pending_dir().mkdir(parents=True)
    (pending_dir() / f"{call_key(other)}.json").write_text("{}")
    assert nothing_after("gemini", json.dumps(GEMINI)) is not None
    for name in (mine.name, f".{mine.name}.123.tmp"):
        (pending_dir() / name).write_text("{}")
        assert nothing_after("gemini", json.dumps(GEMINI)) is None
        (pending_dir() / name).unlink()
    for changed in ({"mcp_context": {"server_name": "shop"}}, {"tool_use_id": "x"},
                    {"tool_name": "mcp_shop_write_query"}):
        assert nothing_after("gemini", json.dumps({**GEMINI, **changed})) is None


def test_the_compiled_client_agrees_on_gemini(log: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled client answers the same Gemini events alone, and sends the one with a
    note on (with no service here, to the Python client it hands over to)."""
    from preimage.services.compiled_client import ensure_client

    monkeypatch.setenv("PREIMAGE_CACHE_DIR", str(tmp_path / "cache"))
    binary, why = ensure_client()
    assert binary is not None, why
    preimage = str(Path(sys.executable).parent / "preimage")
    event = get_harness("gemini").event(json.loads(json.dumps(GEMINI)))
    assert event.call is not None
    env = {**os.environ, "PREIMAGE_SERVICE": "off"}

    def client(payload: dict[str, object]) -> list[dict[str, object]]:
        before = log.read_text().splitlines() if log.exists() else []
        ran = subprocess.run([str(binary), preimage, "hook", "gemini"],
                             input=json.dumps(payload), capture_output=True, text=True,
                             env=env, timeout=300)
        assert ran.returncode == 0, ran.stderr
        return [json.loads(x) for x in log.read_text().splitlines()[len(before):]]

    alone = client(GEMINI)
    assert [(e["path"], e.get("client")) for e in alone] == [("nothing after", "compiled")]
    pending_dir().mkdir(parents=True, exist_ok=True)
    (pending_dir() / f"{call_key(event.call)}.json").write_text(json.dumps(
        {"backup_id": None, "error": "the store was full", "targets": [], "tool": "Bash"}))
    whole = client(GEMINI)
    assert all(e.get("path") != "nothing after" for e in whole)
    assert any(e.get("event") == "completed" and e.get("error") == "the store was full"
               for e in whole)
