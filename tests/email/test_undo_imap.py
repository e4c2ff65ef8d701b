"""Undo one mail call on a real Dovecot: messages by identity, flags as sets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import preimage
from preimage import Store
from preimage._undo import capture_after

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
