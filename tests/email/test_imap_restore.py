"""Restoring IMAP folders and messages on a real Dovecot: no duplicates, flags and dates back."""

from __future__ import annotations

from typing import Any

import pytest

import preimage
from preimage import RestoreConflictError, Store
from preimage.restoration import Outcome

from .conftest import Account, date_of, make_message

pytestmark = pytest.mark.imap


def seed_inbox(account: Account, n: int = 6, first: int = 1) -> None:
    """INBOX with ``n`` messages: odd ones read, every third flagged with a keyword."""
    account.seed({
        "INBOX": [
            (
                make_message(i),
                (["\\Seen"] if i % 2 else []) + (["\\Flagged", "$todo"] if i % 3 == 0 else []),
                date_of(i),
            )
            for i in range(first, first + n)
        ]
    })


def run(account: Account, *commands: tuple[Any, ...]) -> None:
    """Apply IMAP commands as a client (the agent) would: (method, args...) on the open client."""
    c = account.client()
    try:
        for name, *args in commands:
            getattr(c, name)(*args)
    finally:
        c.logout()


def scores(backup_id: str, store: Store) -> tuple[float, float]:
    total, _ = preimage.score(backup_id, store=store)
    return total.classes["content"].score, total.classes["metadata"].score


def test_restore_puts_flags_back_without_touching_the_messages(account: Account, store: Store) -> None:
    """Flags changed on existing messages are set back in place: same UIDs, nothing appended."""
    seed_inbox(account)
    before = account.state()
    backup = preimage.capture([account.uri("INBOX")], store=store)
    run(account, ("select_folder", "INBOX"), ("add_flags", "1:*", ["\\Seen", "$junk"], True),
        ("remove_flags", "1:*", ["\\Flagged"], True))
    result = preimage.restore(backup.id, store=store)
    (report,) = result.reports
    assert {i.action for i in report.changes} == {"set flags"}
    assert report.remaps == []
    assert account.state() == before
    assert scores(backup.id, store) == (1.0, 1.0)


def test_restore_appends_lost_messages_with_flags_dates_and_uid_remaps(
    account: Account, store: Store
) -> None:
    """Expunged messages come back byte-identical with flags and INTERNALDATE; new UIDs are reported."""
    seed_inbox(account)
    before = account.state()
    backup = preimage.capture([account.uri("INBOX")], store=store)
    run(account, ("select_folder", "INBOX"), ("delete_messages", [2, 3, 5], True), ("expunge",))
    result = preimage.restore(backup.id, store=store)
    (report,) = result.reports
    assert report.count(Outcome.RESTORED) == 3
    remaps = {(r.field, r.old): r.new for r in report.remaps}
    assert set(remaps) == {("uid", 2), ("uid", 3), ("uid", 5)}
    assert all(new >= 7 for new in remaps.values())
    assert account.state() == before
    assert scores(backup.id, store) == (1.0, 1.0)


def test_moved_messages_come_back_from_trash_without_duplicates(account: Account, store: Store) -> None:
    """Messages moved to Trash after the capture are moved back; Trash keeps only what it had before."""
    seed_inbox(account)
    account.seed({"Trash": [(make_message(99), ["\\Seen"], date_of(99))]})
    before = account.state()
    backup = preimage.capture([account.uri("INBOX")], store=store)
    run(account, ("select_folder", "INBOX"), ("move", [1, 2, 3], "Trash"),
        ("select_folder", "Trash"), ("add_flags", "1:*", ["\\Seen"], True))
    result = preimage.restore(backup.id, store=store)
    actions = sorted(i.action for i in result.reports[0].changes)
    assert actions == ["moved back from Trash"] * 3
    assert account.state() == before
    assert account.counts()["Trash"] == 1


def test_a_copy_that_predates_the_capture_is_copied_not_taken(account: Account, store: Store) -> None:
    """A message also filed in Archive before the capture is copied back to INBOX, and stays in Archive."""
    seed_inbox(account, n=3)
    account.seed({"Archive": [(make_message(2), [], date_of(2))]})
    before = account.state()
    backup = preimage.capture([account.uri("INBOX")], store=store)
    run(account, ("select_folder", "INBOX"), ("delete_messages", [2], True), ("expunge",))
    result = preimage.restore(backup.id, store=store)
    assert [i.action for i in result.reports[0].changes] == ["copied from Archive"]
    assert account.state() == before


def test_deleted_folders_come_back_with_subscription_and_special_use(
    account: Account, store: Store
) -> None:
    """A deleted subscribed folder and the \\Archive folder are re-created as they were, with their mail."""
    seed_inbox(account, n=2)
    account.seed({
        "Archive": [(make_message(10), ["\\Seen"], date_of(10))],
        "Projects/Alpha": [(make_message(11), ["$todo"], date_of(11))],
    })
    run(account, ("subscribe_folder", "Projects/Alpha"))
    before = account.state()
    backup = preimage.capture([account.uri()], store=store)
    run(account, ("delete_folder", "Projects/Alpha"), ("delete_folder", "Archive"))
    result = preimage.restore(backup.id, store=store)
    (report,) = result.reports
    assert report.ok
    assert {r.key for r in report.remaps if r.field == "uidvalidity"} == {
        "kind=folder|folder=Archive", "kind=folder|folder=Projects/Alpha"}
    assert account.state() == before
    c = account.client()
    folders = {name: flags for flags, _d, name in c.list_folders()}
    subscribed = {name for _f, _d, name in c.list_sub_folders()}
    c.logout()
    assert b"\\Archive" in folders["Archive"]
    assert "Projects/Alpha" in subscribed and "Archive" not in subscribed
    assert scores(backup.id, store) == (1.0, 1.0)


def test_deleted_parent_of_a_living_folder_comes_back(account: Account, store: Store) -> None:
    """A folder deleted while the one below it lives on (Dovecot still lists its name, but
    it cannot be opened) is captured as absent and re-created with its mail by a restore."""
    account.seed({"Clients": [(make_message(20), ["\\Seen"], date_of(20))],
                  "Clients/Acme": [(make_message(21), [], date_of(21))]})
    before = account.state()
    backup = preimage.capture([account.uri("Clients", recursive="1")], store=store)
    run(account, ("delete_folder", "Clients"))
    c = account.client()
    listed = {name for _f, _d, name in c.list_folders()}
    c.logout()
    assert "Clients" in listed    # the name Dovecot keeps above Clients/Acme
    preimage.capture([account.uri("Clients", recursive="1")], store=store)   # readable now
    (report,) = preimage.restore(backup.id, store=store).reports
    assert report.ok
    assert account.state() == before


def test_overwrite_removes_what_arrived_after_the_capture_and_merge_keeps_it(
    account: Account, store: Store
) -> None:
    """overwrite takes away mail and folders added since the capture; merge only puts back what is missing."""
    seed_inbox(account, n=3)
    before = account.state()
    backup = preimage.capture([account.uri()], store=store)
    run(account, ("select_folder", "INBOX"), ("delete_messages", [1], True), ("expunge",))
    account.seed({"INBOX": [(make_message(50), [], date_of(50))],
                  "Spam": [(make_message(51), [], date_of(51))]})
    merged = preimage.restore(backup.id, store=store, conflict="merge")
    assert merged.ok
    after_merge = account.state()
    assert "Spam" in after_merge and len(after_merge["INBOX"]) == 4
    preimage.restore(backup.id, store=store)
    assert account.state() == before


def test_refuse_stops_before_writing_and_dry_run_writes_nothing(account: Account, store: Store) -> None:
    """refuse raises naming what changed and writes nothing; a dry run plans but writes nothing."""
    seed_inbox(account)
    backup = preimage.capture([account.uri("INBOX")], store=store)
    run(account, ("select_folder", "INBOX"), ("add_flags", [2], ["\\Seen"], True),
        ("delete_messages", [4], True), ("expunge",))
    damaged = account.state()
    with pytest.raises(RestoreConflictError, match="msg-2"):
        preimage.restore(backup.id, store=store, conflict="refuse")
    assert account.state() == damaged
    plan = preimage.restore(backup.id, store=store, dry_run=True)
    assert sorted(i.action for i in plan.reports[0].changes) == ["append", "set flags"]
    assert account.state() == damaged


def test_a_second_restore_changes_nothing(account: Account, store: Store) -> None:
    """Running the same restore twice leaves the mailbox as the first run did, with nothing to do."""
    seed_inbox(account)
    backup = preimage.capture([account.uri()], store=store)
    run(account, ("select_folder", "INBOX"), ("move", [1, 2], "Trash"),
        ("delete_messages", [3], True), ("expunge",))
    preimage.restore(backup.id, store=store)
    first = account.state()
    second = preimage.restore(backup.id, store=store)
    assert second.reports[0].changes == []
    assert account.state() == first


def test_message_selection_restores_by_message_id(account: Account, store: Store) -> None:
    """A ?uids= backup restores its messages and scores 1.0 although they come back with new UIDs."""
    seed_inbox(account)
    before = account.state()
    backup = preimage.capture([account.uri("INBOX", uids="2,4")], store=store)
    run(account, ("select_folder", "INBOX"), ("delete_messages", [2, 4], True), ("expunge",))
    preimage.restore(backup.id, store=store)
    assert account.state() == before
    assert scores(backup.id, store) == (1.0, 1.0)


def test_a_message_re_added_with_another_date_is_replaced(account: Account, store: Store) -> None:
    """Same bytes but a different INTERNALDATE is not the captured message: overwrite puts the original back."""
    seed_inbox(account, n=2)
    before = account.state()
    backup = preimage.capture([account.uri("INBOX")], store=store)
    run(account, ("select_folder", "INBOX"), ("delete_messages", [1], True), ("expunge",))
    account.seed({"INBOX": [(make_message(1), ["\\Seen"], date_of(40))]})
    preimage.restore(backup.id, store=store)
    assert account.state() == before


def test_only_restores_the_named_folder_of_an_account_backup(account: Account, store: Store) -> None:
    """--only imap://…/INBOX restores INBOX from an account backup and leaves other folders as they are."""
    seed_inbox(account, n=3)
    account.seed({"Archive": [(make_message(10), [], date_of(10))]})
    before = account.state()
    backup = preimage.capture([account.uri()], store=store)
    run(account, ("select_folder", "INBOX"), ("add_flags", "1:*", ["\\Seen"], True),
        ("select_folder", "Archive"), ("add_flags", "1:*", ["\\Seen"], True))
    damaged = account.state()
    preimage.restore(backup.id, store=store, only=[account.uri("INBOX")])
    after = account.state()
    assert after["INBOX"] == before["INBOX"]
    assert after["Archive"] == damaged["Archive"]
