"""What an imap:// target selects, checked without a server."""

from __future__ import annotations

import pytest

from preimage import InvalidTargetError, Target
from preimage.connectors.imap.selection import Selection, stored_target
from preimage.connectors.imap.wire import (
    compact_uids,
    parse_message_id,
    parse_uid_set,
    split_flags,
)


def sel(uri: str) -> Selection:
    return Selection.from_target(Target.parse(uri))


def test_account_folder_tree_and_message_targets() -> None:
    """The path and query pick the account, a folder, a folder tree or messages."""
    assert sel("imap://alice@h:143/").scope == "account"
    assert sel("imap://alice@h:143/INBOX").scope == "folder"
    tree = sel("imap://alice@h:143/Archive?recursive=1")
    assert (tree.scope, tree.folder, tree.recursive) == ("folder", "Archive", True)
    assert sel("imap://alice@h:143/INBOX?uids=1,4:7").uids == "1,4:7"
    assert sel("imap://alice@h:143/INBOX?search=UNSEEN").scope == "messages"
    assert sel("imap://alice@h:143/R%C3%A9unions/2026").folder == "Réunions/2026"


@pytest.mark.parametrize(
    ("uri", "words"),
    [
        ("imap://h:143/INBOX", "no user name"),
        ("imap://alice@h:143/?uids=1", "name the folder"),
        ("imap://alice@h:143/INBOX?uids=1&search=ALL", "not uids and search"),
        ("imap://alice@h:143/INBOX?uids=one", "not a UID set"),
        ("imap://alice@h:143/INBOX?recursve=1", "unknown parameter"),
        ("imap://alice@h:143/INBOX?recursive=maybe", "takes 1 or 0"),
    ],
)
def test_bad_targets_are_refused_with_the_fix(uri: str, words: str) -> None:
    """A malformed target is refused before connecting, saying what to write instead."""
    with pytest.raises(InvalidTargetError, match=words):
        sel(uri)


def test_stored_target_keeps_a_message_selection_by_message_id() -> None:
    """A UID selection is stored as Message-IDs, which survive a restore that changes UIDs."""
    target = Target.parse("imap://alice:secret@h:143/INBOX?uids=4,5&insecure=1")
    stored = stored_target(target, "INBOX", ["<a@x>", "sha256:ab"])
    assert "secret" not in stored
    again = sel(stored)
    assert again.idents == ("<a@x>", "sha256:ab")
    assert again.uids is None
    assert Target.parse(stored).param("insecure") == "1"


def test_empty_message_selection_stays_a_message_selection() -> None:
    """A search that matched nothing is stored as an empty message set, not as the whole folder."""
    stored = stored_target(Target.parse("imap://alice@h:143/INBOX?search=FLAGGED"), "INBOX", [])
    assert sel(stored).scope == "messages"
    assert sel(stored).idents == ()


def test_flags_split_into_system_flags_and_keywords_without_recent() -> None:
    """\\Recent is dropped (session state); system flags and keywords are sorted apart."""
    system, keywords = split_flags([b"\\Seen", b"\\Recent", b"$label1", b"\\FLAGGED", b"Junk"])
    assert system == ("\\Flagged", "\\Seen")
    assert keywords == ("$label1", "Junk")


def test_message_id_is_unfolded_and_uid_sets_round_trip() -> None:
    """A folded Message-ID header reads as one line; UID sets compact and expand losslessly."""
    assert parse_message_id(b"Message-ID:\r\n <abc@example.org>\r\n\r\n") == "<abc@example.org>"
    assert parse_message_id(b"\r\n") is None
    assert compact_uids([5, 1, 2, 3, 9]) == "1:3,5,9"
    assert parse_uid_set("1:3,5,9") == [1, 2, 3, 5, 9]


def test_fast_scan_reader_matches_a_dovecot_answer() -> None:
    """The regex reader turns a FETCH answer into UIDs, flags, UTC dates, sizes and Message-IDs."""
    from preimage.connectors.imap.wire import parse_scan

    data = [
        (b'1 (UID 1 FLAGS (\\Seen \\Recent $x) INTERNALDATE "02-Jan-2026 08:01:00 +0100" '
         b"RFC822.SIZE 267 MODSEQ (4) BODY[HEADER.FIELDS (MESSAGE-ID)] {35}",
         b"Message-ID: <msg-1@example.org>\r\n\r\n"),
        b")",
        (b'2 (UID 9 FLAGS () INTERNALDATE " 3-Jan-2026 08:02:00 +0000" RFC822.SIZE 234 '
         b"MODSEQ (5) BODY[HEADER.FIELDS (MESSAGE-ID)] {2}", b"\r\n"),
        b")",
        b"3 (FLAGS (\\Seen) UID 10)",  # an unsolicited flag update: skipped
    ]
    got = parse_scan(data)
    assert got is not None
    assert [(m.uid, m.flags, m.keywords, m.internaldate, m.size, m.message_id, m.modseq)
            for m in got] == [
        (1, ("\\Seen",), ("$x",), "2026-01-02T07:01:00+00:00", 267, "<msg-1@example.org>", 4),
        (9, (), (), "2026-01-03T08:02:00+00:00", 234, None, 5),
    ]
    assert parse_scan([b"1 (UID 1 RFC822.SIZE 3)"]) is None  # unknown shape: caller falls back


def test_message_key_is_spelled_as_the_base_item_spells_it() -> None:
    """The fast natural key of a message equals the generic one scoring relies on."""
    from preimage.snapshot_schemas import Item
    from preimage.snapshot_schemas.imap import ImapMessage

    m = ImapMessage(folder="INBOX", ident="<a@b>", copy_no=1, digest="d", size=1,
                    internaldate="2026-01-01T00:00:00+00:00", uid=4)
    assert m.natural_key() == Item.natural_key(m)


def test_internaldate_reader_handles_padded_days_and_negative_offsets() -> None:
    """IMAP date-times with a space-padded day and a negative zone read as the right UTC instant."""
    from preimage.connectors.imap.wire import parse_internaldate

    assert parse_internaldate(b" 2-Feb-2026 22:30:00 -0130") == "2026-02-03T00:00:00+00:00"
    with pytest.raises(ValueError, match="not an IMAP date-time"):
        parse_internaldate(b"yesterday")
