"""Undo one mail call on a real Dovecot: messages by identity, flags as sets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import preimage
from preimage import Store
from preimage.engine.undo import capture_after

from .conftest import date_of, make_message

pytestmark = pytest.mark.imap


def test_bulk_move_undone_later_flags_and_new_mail_kept(account: Any, tmp_path: Path) -> None:
    """The agent moves five messages to Trash and marks two others read; then a person
    flags two messages in INBOX (one the agent marked) and new mail arrives.  The undo
    moves the five back, clears only the \\Seen the agent set, and keeps the person's
    flags and the new message."""
    account.seed({
        "INBOX": [(make_message(n), [], date_of(n)) for n in range(1, 11)],
        "Trash": [],
    })
    with Store(tmp_path / "home") as store:
        pre = preimage.capture([account.uri()], store=store, kind="layer", session="m")
        c = account.client()
        try:
            c.select_folder("INBOX")
            uids = sorted(c.search("ALL"))
            c.move(uids[:5], "Trash")
            c.add_flags(uids[5:7], [b"\\Seen"])
        finally:
            c.logout()
        capture_after(pre.id, store=store)
        c = account.client()
        try:  # a person, after the agent
            c.select_folder("INBOX")
            c.add_flags(uids[6:8], [b"\\Flagged"])
            c.append("INBOX", make_message(99), flags=[], msg_time=date_of(99))
        finally:
            c.logout()
        result = preimage.undo(pre.id, store=store)
    assert result.ok and result.conflicts == 0, result.to_dict()["plans"]
    state = account.state()
    assert len(state["Trash"]) == 0
    inbox = {row[0]: row[2] for row in state["INBOX"]}
    assert len(inbox) == 11
    assert inbox["Message-ID: <msg-6@example.org>"] == ()
    assert inbox["Message-ID: <msg-7@example.org>"] == ("\\Flagged",)
    assert inbox["Message-ID: <msg-8@example.org>"] == ("\\Flagged",)
    assert "Message-ID: <msg-99@example.org>" in inbox


def _hook(event: str, tool: str, args: dict[str, Any], env: dict[str, str], cwd: Path,
          **extra: Any) -> Any:
    """One Claude Code hook event, through `preimage hook` in its own process."""
    payload = json.dumps({"hook_event_name": event, "tool_name": tool, "tool_input": args,
                          "cwd": str(cwd), "session_id": "mail-1", "tool_use_id": "toolu_mail",
                          **extra})
    proc = subprocess.run([sys.executable, "-m", "preimage", "hook", "claude-code"],
                          input=payload, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def test_hook_flow_bulk_move_undone_by_call_id(
    account: Any, tmp_path: Path, home: Path, cli: Callable[..., Any]
) -> None:
    """An email MCP call through the hook processes: PreToolUse backs up INBOX and Trash,
    the server moves the messages, PostToolUse captures both again; after a person flags
    a message in Trash and new mail arrives, `preimage undo` by the call's id moves the
    agent's messages back and keeps the rest (`preimage log` shows the call's delta)."""
    account.seed({
        "INBOX": [(make_message(n), [], date_of(n)) for n in range(1, 7)],
        "Trash": [(make_message(50), ["\\Seen"], date_of(50))],
    })
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.yaml").write_text(json.dumps(
        {"mcp": {"email": {"kind": "email", "target": account.uri()}}}))
    env = {**os.environ, "PREIMAGE_HOME": str(home), "PREIMAGE_CONFIG_DIR": str(config)}
    c = account.client()
    try:
        c.select_folder("INBOX")
        uids = sorted(c.search("ALL"))
    finally:
        c.logout()
    tool = "mcp__email__move_messages"
    args = {"folder": "INBOX", "uids": uids[:4], "destination": "Trash"}
    answer = _hook("PreToolUse", tool, args, env, tmp_path)
    assert "preimage backup" in json.dumps(answer)
    c = account.client()
    try:  # what the email MCP server does for the call
        c.select_folder("INBOX")
        c.move(uids[:4], "Trash")
    finally:
        c.logout()
    _hook("PostToolUse", tool, args, env, tmp_path, tool_response={"moved": 4})
    c = account.client()
    try:  # a person, after the agent
        c.select_folder("Trash")
        c.add_flags(c.search(["HEADER", "Message-ID", "<msg-50@example.org>"]), [b"\\Flagged"])
        c.append("INBOX", make_message(99), flags=[], msg_time=date_of(99))
    finally:
        c.logout()

    log = json.loads(cli("log", "--json", "--session", "mail-1").stdout)
    assert len(log) == 1 and log[0]["post_backup"] and "INBOX" in log[0]["delta"], (log[0]["targets"], log[0]["delta"])
    done = json.loads(cli("undo", "toolu_mail", "--json").stdout)
    assert done["ok"] and done["conflicts"] == 0
    state = account.state()
    inbox = {row[0] for row in state["INBOX"]}
    assert inbox == {f"Message-ID: <msg-{n}@example.org>" for n in (1, 2, 3, 4, 5, 6, 99)}
    assert [(row[0], row[2]) for row in state["Trash"]] == [
        ("Message-ID: <msg-50@example.org>", ("\\Flagged", "\\Seen"))]
