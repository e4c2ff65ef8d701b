"""Capturing IMAP accounts, folders and messages from a real Dovecot."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import preimage
from preimage import Store
from preimage.snapshot_schemas.imap import ImapSnapshot

from .conftest import Account, date_of, load_fixture, make_message

pytestmark = pytest.mark.imap


def seed_sample(account: Account) -> None:
    """INBOX with read, unread, flagged and labelled mail; an Archive; a subscribed folder."""
    account.seed({
        "INBOX": [
            (make_message(1), ["\\Seen"], date_of(1)),
            (make_message(2), [], date_of(2)),
            (make_message(3), ["\\Flagged", "$label1"], date_of(3)),
            (make_message(4), ["\\Seen", "\\Answered", "$Forwarded"], date_of(4)),
        ],
        "Archive": [(make_message(5), ["\\Seen"], date_of(5))],
        "Projects/Alpha": [(make_message(6), ["\\Draft"], date_of(6))],
    })
    c = account.client()
    c.subscribe_folder("Projects/Alpha")
    c.logout()


def capture(account: Account, store: Store, uri: str | None = None) -> ImapSnapshot:
    snap = preimage.capture([uri or account.uri()], store=store).snapshots[0]
    assert isinstance(snap, ImapSnapshot)
    return snap


def test_capture_records_folders_flags_keywords_dates_and_bytes(account: Account, store: Store) -> None:
    """An account capture keeps each message's bytes, flags, keywords, date and folder attributes."""
    seed_sample(account)
    snap = capture(account, store)
    folders = {f.folder: f for f in snap.folders}
    assert {"INBOX", "Archive", "Projects", "Projects/Alpha", "Trash", "Sent"} <= set(folders)
    assert folders["Archive"].special_use == ["\\Archive"]
    assert folders["Trash"].special_use == ["\\Trash"]
    assert folders["Projects/Alpha"].subscribed and not folders["Archive"].subscribed
    assert folders["INBOX"].separator == "/" and snap.separator == "/"
    assert not folders["Projects"].selectable
    assert folders["INBOX"].messages == 4
    assert folders["INBOX"].uidvalidity and folders["INBOX"].uidnext == 5
    assert folders["INBOX"].highestmodseq
    by_id = {m.ident: m for m in snap.messages if m.folder == "INBOX"}
    m3 = by_id["<msg-3@example.org>"]
    assert m3.flags == ["\\Flagged"] and m3.keywords == ["$label1"]
    assert m3.internaldate == date_of(3).isoformat()
    assert by_id["<msg-2@example.org>"].flags == []
    assert store.blobs.get_bytes(m3.digest) == make_message(3)
    assert m3.size == len(make_message(3))


def _modseqs(account: Account) -> dict[str, object]:
    """HIGHESTMODSEQ and every message's MODSEQ per folder, read with EXAMINE."""
    c = account.client()
    out: dict[str, object] = {}
    for name in ("INBOX", "Archive"):
        c.select_folder(name, readonly=True)
        out[name] = (
            c.folder_status(name, ["HIGHESTMODSEQ"]),
            {uid: d[b"MODSEQ"] for uid, d in c.fetch(c.search("ALL"), ["MODSEQ"]).items()},
        )
    c.logout()
    return out


def test_capture_changes_no_flag_and_no_byte_of_the_mailbox(account: Account, store: Store) -> None:
    """A capture leaves every flag (\\Seen too), every MODSEQ and every Maildir file byte exactly as it was."""
    seed_sample(account)
    # A message delivered straight into new/ that no client has seen yet.
    delivered = account.maildir / "new" / "1700000000.M1P1.preimage-test"
    delivered.write_bytes(make_message(7).replace(b"\r\n", b"\n"))
    shutil.chown(delivered, account.maildir.stat().st_uid, account.maildir.stat().st_gid)
    files_before = account.maildir_files()
    state_before = account.state()
    modseqs_before = _modseqs(account)

    snap = capture(account, store)

    assert account.maildir_files() == files_before
    assert account.state() == state_before
    assert _modseqs(account) == modseqs_before
    unread = [m.ident for m in snap.messages if "\\Seen" not in m.flags]
    assert "<msg-2@example.org>" in unread and "<msg-7@example.org>" in unread
    assert any(name.startswith("new/") for name in account.maildir_files())


def test_uid_and_search_targets_capture_only_those_messages(account: Account, store: Store) -> None:
    """?uids= and ?search= capture just the chosen messages, stored by Message-ID for later."""
    seed_sample(account)
    by_uid = capture(account, store, account.uri("INBOX", uids="2,3"))
    assert sorted(m.ident for m in by_uid.messages) == ["<msg-2@example.org>", "<msg-3@example.org>"]
    assert "id=" in by_uid.target and "uids=" not in by_uid.target
    unseen = capture(account, store, account.uri("INBOX", search="UNSEEN"))
    assert sorted(m.ident for m in unseen.messages) == ["<msg-2@example.org>", "<msg-3@example.org>"]
    flagged = capture(account, store, account.uri("INBOX", search="FLAGGED"))
    assert [m.ident for m in flagged.messages] == ["<msg-3@example.org>"]


def test_folder_target_is_one_folder_or_a_tree(account: Account, store: Store) -> None:
    """A folder target captures that folder; ?recursive=1 adds the folders below it."""
    seed_sample(account)
    account.seed({"Projects/Beta": [(make_message(8), [], date_of(8))]})
    one = capture(account, store, account.uri("Projects"))
    assert [f.folder for f in one.folders] == ["Projects"] and one.messages == []
    tree = capture(account, store, account.uri("Projects", recursive="1"))
    assert [f.folder for f in tree.folders] == ["Projects", "Projects/Alpha", "Projects/Beta"]
    assert sorted(m.ident for m in tree.messages) == ["<msg-6@example.org>", "<msg-8@example.org>"]


def test_messages_without_message_id_and_duplicates_get_distinct_keys(
    account: Account, store: Store
) -> None:
    """A message without Message-ID is keyed by its digest; two copies of one message are numbered."""
    raw = make_message(9, message_id=None)
    account.seed({"INBOX": [(raw, [], date_of(9)), (make_message(1), [], date_of(1)),
                            (make_message(1), ["\\Seen"], date_of(1))]})
    snap = capture(account, store, account.uri("INBOX"))
    keys = sorted((m.ident, m.copy_no) for m in snap.messages)
    assert keys[0] == ("<msg-1@example.org>", 0) and keys[1] == ("<msg-1@example.org>", 1)
    assert keys[2][0].startswith("sha256:") and keys[2][0].endswith(snap.messages[0].digest)


def test_password_is_never_stored(account: Account, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A password given in the URI is used for the capture but appears nowhere in the store."""
    monkeypatch.delenv("PREIMAGE_IMAP_PASSWORD")
    account.seed({"INBOX": [(make_message(1), [], date_of(1))]})
    uri = account.uri("INBOX").replace(f"{account.user}@", f"{account.user}:preimage-test-pw@")
    backup = preimage.capture([uri], store=store)
    assert "preimage-test-pw" not in backup.snapshots[0].model_dump_json()
    for path in Path(store.home).rglob("*"):
        if path.is_file() and path.suffix != ".zst":
            assert b"preimage-test-pw" not in path.read_bytes(), path


def test_second_capture_does_not_download_unchanged_messages(account: Account, store: Store) -> None:
    """Bodies already in the store are not fetched again: a repeat capture reads headers and
    flags only.  What the connector sends is read off the wire (a recording proxy), so the
    check does not wait for the server to write its log."""
    seed_sample(account)
    proxy = load_fixture("dropping_proxy").DroppingProxy(account.server.host, account.server.port)
    try:
        uri = f"imap://{account.user}@127.0.0.1:{proxy.port}/"
        capture(account, store, uri)
        first = proxy.sent()
        again = capture(account, store, uri)
        second = proxy.sent()[len(first):]
    finally:
        proxy.stop()
    assert len(again.messages) == 6
    assert first.count(b"BODY.PEEK[]") > 0  # the first capture did fetch bodies
    assert b"BODY.PEEK[]" not in second and b"RFC822 " not in second
