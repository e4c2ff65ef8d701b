"""A post-call event answered before its capture: the decision service answers Claude Code
and Codex first and captures the state after the call once the answer is delivered — the
session's next call waits for that capture, so it never sees the next call's changes."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import preimage
from preimage.engine.call_locks import (
    _lock,
    hold_session,
    mark_late,
    overlapped_since,
    wait_for_session,
    wait_for_sessions,
)
from preimage.engine.undo import post_of
from preimage.layer.harnesses.hook import HookOutcome, handle
from preimage.store.store import Store


def _payload(harness: str, event: str, call: str, command: str, cwd: Path,
             session: str = "s-1") -> str:
    doc: dict[str, Any] = {"hook_event_name": event, "tool_input": {"command": command},
                           "session_id": session, "tool_use_id": call, "cwd": str(cwd)}
    doc["tool_name"] = "run_shell_command" if harness in ("gemini", "qwen") else "Bash"
    if harness == "gemini" and event == "PostToolUse":
        doc["hook_event_name"] = "AfterTool"
    if harness == "gemini" and event == "PreToolUse":
        doc["hook_event_name"] = "BeforeTool"
    if event == "PostToolUse":
        doc["tool_response"] = {"stdout": ""}
    return json.dumps(doc)


def _backup_of(answer: str) -> str:
    text = json.dumps(json.loads(answer))
    return text.split("preimage backup ", 1)[1].split()[0]


def _newest_call_backup(home: Path) -> str:
    """The newest backup a call's pre-call hook took (a harness told after the call
    gets no ID before it)."""
    with Store(home) as st:
        return next(r.id for r in st.catalog.list_backups(None) if r.kind == "layer")


def _in_thread(fn: Any) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.update(result=fn()), daemon=True)
    thread.start()
    return thread, box


@pytest.mark.parametrize("harness", ["claude-code", "codex", "gemini", "qwen"])
def test_the_answer_comes_first_and_the_next_call_waits_for_the_capture(
        harness: str, home: Path, tmp_path: Path) -> None:
    """The post-call answer is given with the capture still to do — Gemini CLI and Qwen
    Code, told after the call, are told the backup and `preimage undo` from the pre-call
    note; until it is done the session's next call that may change anything waits (a
    read-only one does not); once done, undo reverts just the call."""
    work = tmp_path / "w"
    work.mkdir()
    notes = work / "notes.txt"
    notes.write_text("before\n")
    command = "sed -i s/before/after/ notes.txt"
    handle(harness, [], _payload(harness, "PreToolUse", "c1", command, work))
    backup = _newest_call_backup(home)
    notes.write_text("after\n")   # what the call did
    post = handle(harness, [], _payload(harness, "PostToolUse", "c1", command, work),
                  answer_first=True)
    assert post.then is not None
    if harness in ("gemini", "qwen"):
        assert f"`preimage undo {backup}`" in post.stdout
    else:
        assert json.loads(post.stdout) == {}
    with Store(home) as st:
        assert post_of(st, backup) is None   # not captured yet

    quick = handle(harness, ["--timeout", "1"],
                   _payload(harness, "PreToolUse", "c1b", "ls -la", work))
    assert "preimage" not in quick.stdout   # read-only: answered without waiting
    log = (tmp_path / "hook.log").read_text()
    assert "session-wait" not in log

    nxt, box = _in_thread(lambda: handle(
        harness, [], _payload(harness, "PreToolUse", "c2", "truncate -s 0 notes.txt", work)))
    nxt.join(1.0)
    assert nxt.is_alive(), "the next call was decided while the capture after the last ran"

    post.then()
    nxt.join(60)
    assert not nxt.is_alive()
    assert isinstance(box["result"], HookOutcome)
    assert _newest_call_backup(home) != backup   # the next call was backed up
    with Store(home) as st:
        post_row = post_of(st, backup)
        assert post_row is not None
    (done,) = [e for e in map(json.loads, (tmp_path / "hook.log").read_text().splitlines())
               if e["event"] == "completed" and e["tool_use_id"] == "c1"]
    assert done["answered_first"] is True and done["post_backup_id"] == post_row.id
    (work / "later.txt").write_text("made after the call\n")
    result = preimage.undo(backup)
    assert notes.read_text() == "before\n"
    assert (work / "later.txt").read_text() == "made after the call\n"
    assert result.post_id is not None


def test_a_told_harness_s_call_with_nothing_backed_up_is_answered_as_it_is(
        home: Path, tmp_path: Path) -> None:
    """Qwen Code's post-call event of a read-only call (no backup before it) has nothing
    to capture: answered with nothing to do later and no lock left held."""
    work = tmp_path / "w"
    work.mkdir()
    handle("qwen", [], _payload("qwen", "PreToolUse", "r1", "ls -la", work))
    post = handle("qwen", [], _payload("qwen", "PostToolUse", "r1", "ls -la", work),
                  answer_first=True)
    assert post.then is None and "preimage" not in post.stdout
    assert wait_for_session(home, "s-1", 0.0)


def test_an_mcp_call_s_after_event_is_recorded_before_its_answer(home: Path,
                                                                  tmp_path: Path) -> None:
    """An MCP call's after-event may name the page a browser is on, by which the session's
    next call is decided (before any wait): it is recorded before the answer."""
    payload = json.loads(_payload("claude-code", "PostToolUse", "m1", "", tmp_path))
    payload.update(tool_name="mcp__playwright__browser_click",
                   tool_input={"element": "Delete", "ref": "e12"},
                   tool_response=[{"type": "text", "text": "- Page URL: http://127.0.0.1/x"}])
    post = handle("claude-code", [], json.dumps(payload), answer_first=True)
    assert post.then is None


def test_a_session_lock_held_makes_the_wait_give_up_at_its_limit(home: Path,
                                                                  store: Store) -> None:
    """A capture that outlives the call's deadline does not hold the next call forever:
    the wait gives up at its limit; another session does not wait; once let go, no wait
    is needed."""
    other = next(f"s-{i}" for i in range(1000) if _lock(home, f"s-{i}") != _lock(home, "s-9"))
    held = hold_session(home, "s-9", 5.0)
    assert held is not None
    try:
        assert not wait_for_session(home, "s-9", 0.05)
        assert not wait_for_sessions(home, 0.05)
        assert wait_for_session(home, other, 0.0)
    finally:
        os.close(held)
    assert wait_for_session(home, "s-9", 0.0) and wait_for_sessions(home, 0.0)


def test_no_lock_is_held_where_there_is_no_store(tmp_path: Path) -> None:
    """A session's lock lives in the store: where there is none yet, none is made (the
    store's home is the store's to create, 0700) and the capture is not put off."""
    home = tmp_path / "no-store"
    assert hold_session(home, "s-1", 0.1) is None
    assert not home.exists()


def test_restore_and_undo_wait_for_a_capture_after_a_call(home: Path, tmp_path: Path) -> None:
    """While a capture after a call runs (its session's lock held), a restore and an undo of
    the store wait for it: neither writes under a capture still reading, nor reverts a
    call whose after-state is not recorded yet."""
    work = tmp_path / "w"
    work.mkdir()
    (work / "a.txt").write_text("before\n")
    backup = preimage.capture([f"file://{work}"]).id
    (work / "a.txt").write_text("after\n")
    held = hold_session(home, "s-1", 5.0)
    assert held is not None
    restoring, box = _in_thread(lambda: preimage.restore(backup))
    restoring.join(1.0)
    assert restoring.is_alive(), "the restore wrote while a capture after a call ran"
    assert (work / "a.txt").read_text() == "after\n"
    os.close(held)
    restoring.join(60)
    assert not restoring.is_alive() and box["result"].ok
    assert (work / "a.txt").read_text() == "before\n"

    (work / "a.txt").write_text("changed\n")
    after = preimage.capture([f"file://{work}"]).id
    held = hold_session(home, "s-2", 5.0)
    assert held is not None
    undoing, box = _in_thread(lambda: preimage.undo(backup, post=after))
    undoing.join(1.0)
    assert undoing.is_alive(), "the undo ran while a capture after a call ran"
    os.close(held)
    undoing.join(60)
    assert not undoing.is_alive() and (work / "a.txt").read_text() == "before\n"


def test_a_capture_after_a_call_that_outlasts_the_wait_is_marked_overlapped(
        home: Path, tmp_path: Path, cli: Any) -> None:
    """The session's next call gives up waiting (a one-second timeout) and runs beside the
    capture after the last call, which then records the next call's change: that capture
    is marked overlapped, `preimage undo` of the call refuses in one line with nothing
    written and says why, the log shows the delta unknown, and a restore of the call's
    backup still brings the file back."""
    work = tmp_path / "w"
    work.mkdir()
    notes = work / "notes.txt"
    notes.write_text("before\n")
    command = "sed -i s/before/after/ notes.txt"
    backup = _backup_of(handle("claude-code", [], _payload(
        "claude-code", "PreToolUse", "c1", command, work)).stdout)
    notes.write_text("after\n")
    post = handle("claude-code", [], _payload("claude-code", "PostToolUse", "c1", command, work),
                  answer_first=True)
    assert post.then is not None
    nxt = handle("claude-code", ["--timeout", "1"],
                 _payload("claude-code", "PreToolUse", "c2", "truncate -s 0 notes.txt", work))
    assert "preimage backup" in nxt.stdout   # decided and answered, past its wait
    notes.write_text("")                     # the next call runs before the capture ends
    post.then()
    with Store(home) as st:
        assert post_of(st, backup) is None
        (late,) = [r for r in st.catalog.list_backups(None) if r.parent_id == backup]
        assert late.status == "overlapped"
    events = [json.loads(x)["event"] for x in (tmp_path / "hook.log").read_text().splitlines()]
    assert "session-wait" in events and "overlapped" in events
    r = cli("undo", backup)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "cannot be told from what the next one did" in r.stderr
    assert f"preimage restore {backup}" in r.stderr
    assert notes.read_text() == ""           # nothing written
    (entry,) = [e for e in preimage.timeline() if e.backup_id == backup]
    assert "delta unknown" in entry.delta
    assert preimage.restore(backup).ok and notes.read_text() == "before\n"


def test_a_late_mark_counts_only_for_a_capture_it_ran_beside(home: Path, store: Store) -> None:
    """A next call that gave up while no capture of its session held the lock takes its
    mark back at once; one left by a wait on a lock another session held is older than
    the session's next capture, which drops it instead of taking it for its own."""
    mark_late(home, "s-1")
    assert not list((home / "locks" / "sessions").glob("*.late"))
    held = hold_session(home, "s-1", 5.0)
    assert held is not None
    mark_late(home, "s-1")          # the lock is held: the mark stays
    os.close(held)
    assert len(list((home / "locks" / "sessions").glob("*.late"))) == 1
    assert not overlapped_since(home, "s-1", time.time() + 1.0)   # a capture begun later
    assert not list((home / "locks" / "sessions").glob("*.late"))
    held = hold_session(home, "s-1", 5.0)
    assert held is not None
    started = time.time() - 1.0
    mark_late(home, "s-1")
    assert overlapped_since(home, "s-1", started)
    os.close(held)
