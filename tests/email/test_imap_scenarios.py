"""The email regret scenarios (E-*) end to end through the CLI: capture, damage, restore, score.

Each scenario seeds a mailbox, captures it with ``preimage capture``, lets the
destructive IMAP commands run exactly as the agent or client in the incident
sent them, restores with ``preimage restore`` and scores with ``preimage
score``: content and metadata must be 1.0, and every folder must hold
exactly the messages it held before — no duplicates.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date
from typing import Any

import imapclient
import pytest

from .conftest import Account, CliResult, date_of, make_message

pytestmark = pytest.mark.imap

Cli = Callable[..., CliResult]


def mailbox(account: Account) -> None:
    """A lived-in account: INBOX from January to March, Archive, mailing lists, Trash with old mail."""
    inbox = []
    for i in range(1, 41):
        flags = []
        if i % 3:
            flags.append("\\Seen")
        if i % 7 == 0:
            flags += ["\\Flagged", "$Important"]
        if i % 5 == 0:
            flags += ["\\Answered", "$label2"]
        inbox.append((make_message(i, subject=f"Invoice {i}" if i % 4 == 0 else None), flags, date_of(i)))
    inbox.append((make_message(41, message_id=None), [], date_of(41)))  # no Message-ID
    account.seed({
        "INBOX": inbox,
        "Archive": [(make_message(100 + i), ["\\Seen"], date_of(100 + i)) for i in range(5)],
        "Lists/python-dev": [
            (make_message(200 + i), ["\\Seen"] if i % 2 else [], date_of(200 + i)) for i in range(12)
        ],
        "Trash": [(make_message(300), ["\\Seen", "\\Deleted"], date_of(300))],
    })
    c = account.client()
    c.subscribe_folder("Lists/python-dev")
    c.subscribe_folder("Archive")
    c.logout()


def capture(cli: Cli, uri: str) -> str:
    return str(cli("capture", uri).stdout.strip())


def restore_and_score(cli: Cli, backup_id: str) -> dict[str, Any]:
    """Restore, then score; also check that a second restore would change nothing."""
    restored = json.loads(cli("restore", backup_id, "--json").stdout)
    assert restored["ok"], restored
    score = json.loads(cli("score", backup_id, "--json", "--min", "1.0").stdout)
    again = json.loads(cli("restore", backup_id, "--dry-run", "--json").stdout)
    planned = [i for r in again["reports"] for i in r["items"] if i["outcome"] == "planned"]
    assert planned == []
    return {"restore": restored, "score": score}


def assert_fully_back(account: Account, before: dict[str, Any], result: dict[str, Any]) -> None:
    score = result["score"]
    assert score["content"] == 1.0, score["differences"]
    assert score["metadata"] == 1.0, score["differences"]
    after = account.state()
    assert {k: len(v) for k, v in after.items()} == {k: len(v) for k, v in before.items()}
    assert after == before


def client(account: Account) -> imapclient.IMAPClient:
    return account.client()


def test_e_bulk_trash(account: Account, cli: Cli) -> None:
    """E-bulk-trash: 'trash everything older than Feb 15 not in my keep list' is undone exactly."""
    mailbox(account)
    before = account.state()
    backup = capture(cli, account.uri("INBOX"))
    keep = {"<msg-7@example.org>", "<msg-14@example.org>"}
    c = client(account)
    c.select_folder("INBOX")
    old = c.search(["BEFORE", date(2026, 2, 15)])
    ids = c.fetch(old, ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"])
    doomed = [
        uid for uid, d in ids.items()
        if not any(k.encode() in d[b"BODY[HEADER.FIELDS (MESSAGE-ID)]"] for k in keep)
    ]
    c.copy(doomed, "Trash")
    c.delete_messages(doomed, silent=True)
    c.expunge()
    c.logout()
    assert len(doomed) > 20
    result = restore_and_score(cli, backup)
    assert_fully_back(account, before, result)
    actions = {i["action"] for r in result["restore"]["reports"] for i in r["items"]}
    assert "moved back from Trash" in actions


def test_e_mark_all_read(account: Account, cli: Cli) -> None:
    """E-mark-all-read: UID STORE 1:* +FLAGS (\\Seen) is undone — the unread mail is unread again."""
    mailbox(account)
    before = account.state()
    backup = capture(cli, account.uri("INBOX"))
    c = client(account)
    c.select_folder("INBOX")
    c._imap.uid("STORE", "1:*", "+FLAGS", "(\\Seen)")
    c.logout()
    result = restore_and_score(cli, backup)
    assert_fully_back(account, before, result)
    (report,) = result["restore"]["reports"]
    assert report["remaps"] == []  # flags were set in place: no message was re-created


def test_e_expunge_folder(account: Account, cli: Cli) -> None:
    """E-expunge-folder: a sync client deletes a whole folder; it comes back with every message, flag and date."""
    mailbox(account)
    before = account.state()
    backup = capture(cli, account.uri("Lists/python-dev"))
    c = client(account)
    c.delete_folder("Lists/python-dev")
    c.logout()
    result = restore_and_score(cli, backup)
    assert_fully_back(account, before, result)
    c = client(account)
    assert "Lists/python-dev" in {name for _f, _d, name in c.list_sub_folders()}
    c.logout()


def test_e_strict_sync(account: Account, cli: Cli) -> None:
    """E-strict-sync: a one-way sync deletes every message the source lacks; the account comes back whole."""
    mailbox(account)
    before = account.state()
    backup = capture(cli, account.uri())
    source = {f"<msg-{i}@example.org>" for i in range(1, 41, 4)}
    c = client(account)
    for folder in ("INBOX", "Archive", "Lists/python-dev"):
        c.select_folder(folder)
        heads = c.fetch(c.search("ALL"), ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"])
        absent = [
            uid for uid, d in heads.items()
            if not any(s.encode() in d[b"BODY[HEADER.FIELDS (MESSAGE-ID)]"] for s in source)
        ]
        c.delete_messages(absent, silent=True)
        c.expunge()
    c.logout()
    result = restore_and_score(cli, backup)
    assert_fully_back(account, before, result)


def test_e_move_to_trash(account: Account, cli: Cli) -> None:
    """E-move-to-trash: a client moves all of INBOX to Trash; restore puts it back and Trash keeps only its old mail."""
    mailbox(account)
    # Trash already holds an older copy of one INBOX message: it must stay there.
    account.seed({"Trash": [(make_message(3), ["\\Seen"], date_of(3))]})
    before = account.state()
    backup = capture(cli, account.uri("INBOX"))
    c = client(account)
    c.select_folder("INBOX")
    c.move(c.search("ALL"), "Trash")
    c.logout()
    assert account.counts()["INBOX"] == 0
    result = restore_and_score(cli, backup)
    assert_fully_back(account, before, result)
    assert account.counts()["Trash"] == 2
