"""A mailbox restored into another account, or below a folder prefix, on the real
Dovecot; and the gate against a plain IMAP APPEND copy."""

from __future__ import annotations

from typing import Any

import pytest

import preimage
from preimage import Store
from preimage.pytest_plugin import FidelityGateError, assert_restored

from .conftest import Account, date_of, make_message, new_account

pytestmark = pytest.mark.imap


def seed(account: Account) -> None:
    """INBOX with flags and keywords, and a nested project folder."""
    account.seed({
        "INBOX": [(make_message(1), ["\\Seen"], date_of(1)),
                  (make_message(2), ["\\Flagged", "$label1"], date_of(2)),
                  (make_message(3), [], date_of(3))],
        "Projects": [(make_message(4), ["\\Seen", "\\Answered"], date_of(4))],
        "Projects/2024": [(make_message(5), ["\\Seen"], date_of(5))],
    })


def test_account_restores_into_another_account(account: Account, dovecot: Any, store: Store) -> None:
    """A whole-account backup restored into another user's empty account scores 1.0
    against the backup, the account reported as mapped; the source is untouched."""
    seed(account)
    before = account.state()
    backup = preimage.capture([account.uri()], store=store)
    bob = new_account(dovecot)
    result = preimage.restore_to(backup.id, bob.uri(), store=store)
    assert result.ok
    [mapped] = result.mappings[bob.uri()]
    assert (mapped.what, mapped.new) == ("account", f"{bob.user}@{dovecot.host}:{dovecot.port}")
    assert bob.state() == before
    assert account.state() == before
    total, _ = preimage.score_against(backup.id, bob.uri(), store=store)
    assert total.score_of("content").score == 1.0, total.differences
    assert total.score_of("metadata").score == 1.0, total.differences
    assert [m.what for m in total.mapped] == ["account"]


def test_folder_restores_below_a_prefix_in_another_account(account: Account, dovecot: Any, store: Store) -> None:
    """`Projects` (recursive) restored to `Restored/Projects` of another account keeps its
    subfolder, messages, flags and dates; each folder is reported as mapped."""
    seed(account)
    backup = preimage.capture([account.uri("Projects", recursive="1")], store=store)
    bob = new_account(dovecot)
    bob.seed({"INBOX": [(make_message(9), [], date_of(9))]})
    dest = bob.uri("Restored/Projects")
    result = preimage.restore_to(backup.id, dest, store=store)
    assert result.ok
    folders = {(m.old, m.new) for m in result.mappings[next(iter(result.mappings))]
               if m.what == "folder"}
    assert folders == {("Projects", "Restored/Projects"), ("Projects/2024", "Restored/Projects/2024")}
    state = bob.state()
    assert state["Restored/Projects"] == account.state()["Projects"]
    assert state["Restored/Projects/2024"] == account.state()["Projects/2024"]
    assert len(state["INBOX"]) == 1  # outside the destination: left alone
    total, _ = preimage.score_against(backup.id, bob.uri("Restored/Projects", recursive="1"),
                                      store=store)
    assert total.restorable.score == 1.0, [d for d in total.differences if d.fidelity == "metadata"]


def test_overlapping_destination_in_the_same_account_is_refused(account: Account, store: Store) -> None:
    """An account backup cannot be restored below a prefix of the same account (it
    would hold itself), and a folder not into its own subfolder."""
    seed(account)
    whole = preimage.capture([account.uri()], store=store)
    with pytest.raises(preimage.UsageError, match="overlaps"):
        preimage.restore_to(whole.id, account.uri("Restored"), store=store)
    folder = preimage.capture([account.uri("Projects", recursive="1")], store=store)
    with pytest.raises(preimage.UsageError, match="overlaps"):
        preimage.restore_to(folder.id, account.uri("Projects/copy"), store=store)
    assert preimage.restore_to(folder.id, account.uri("Elsewhere"), store=store).ok


def test_plain_append_copy_loses_what_the_gate_names(account: Account, dovecot: Any, store: Store) -> None:
    """Copying INBOX by FETCH BODY[] + plain APPEND (no flags, no date — what a quick
    script does) keeps every byte, but the gate names each lost flag, keyword and
    INTERNALDATE."""
    seed(account)
    backup = preimage.capture([account.uri("INBOX")], store=store)
    bob = new_account(dovecot)
    src, dst = account.client(), bob.client()
    try:
        src.select_folder("INBOX", readonly=True)
        for data in src.fetch(src.search("ALL"), ["BODY.PEEK[]"]).values():
            dst.append("INBOX", data[b"BODY[]"])
    finally:
        src.logout()
        dst.logout()
    with pytest.raises(FidelityGateError) as gate:  # the pytest plugin's gate
        assert_restored(backup.id, bob.uri("INBOX"), store=store,
                        bar={"content": 1.0, "metadata": 1.0})
    total = gate.value.report
    assert total.score_of("content").score == 1.0
    assert "metadata" in str(gate.value).splitlines()[0]
    lost = {(d.item.split()[1], d.path.split("{")[0].split(".")[0]) for d in total.differences
            if d.fidelity == "metadata"}
    assert lost == {("<msg-1@example.org>", "flags"), ("<msg-2@example.org>", "flags"),
                    ("<msg-2@example.org>", "keywords"),
                    ("<msg-1@example.org>", "internaldate"),
                    ("<msg-2@example.org>", "internaldate"),
                    ("<msg-3@example.org>", "internaldate")}, lost
