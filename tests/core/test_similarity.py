"""Invariants of the similarity score (see preimage.similarity.scoring)."""

from __future__ import annotations

import itertools

from preimage.similarity import score
from preimage.snapshot_schemas import FileEntry, FileSnapshot


def entry(path: str, **kw: object) -> FileEntry:
    base: dict[str, object] = {
        "path": path, "type": "file", "size": 3, "digest": "d" * 64, "mode": 0o644,
        "uid": 0, "gid": 0, "mtime_ns": 1, "atime_ns": 2, "inode": 7, "ctime_ns": 9,
    }
    base.update(kw)
    return FileEntry(**base)  # type: ignore[arg-type]


def snap(*items: FileEntry) -> FileSnapshot:
    return FileSnapshot(target="file:///t", root="/t", root_type="dir", items=list(items))


ORIGINAL = snap(entry("."), entry("a"), entry("b", mode=0o600), entry("c", xattrs={"user.x": "01"}))


def test_identical_snapshots_score_one() -> None:
    """Identical states score 1.0 in every class."""
    rep = score(ORIGINAL, ORIGINAL)
    assert rep.overall.score == 1.0
    assert {c: s.score for c, s in rep.classes.items()} == {
        "content": 1.0, "metadata": 1.0, "access": 1.0, "server": 1.0,
    }
    assert rep.differences == []


def test_nothing_restored_scores_zero() -> None:
    """An empty restore scores 0.0."""
    rep = score(ORIGINAL, snap())
    assert rep.restorable.score == 0.0
    assert rep.overall.score == 0.0
    # each missing item is one difference, however many fields it had
    assert sorted((d.item, d.reason) for d in rep.differences) == [
        (".", "missing item"), ("a", "missing item"), ("b", "missing item"), ("c", "missing item"),
    ]
    assert all(d.leaves >= 9 and d.fidelity == "content" for d in rep.differences)


def test_damage_never_raises_the_score() -> None:
    """Damaging more fields lowers the score monotonically."""
    steps = [
        snap(entry("."), entry("a"), entry("b", mode=0o600), entry("c", xattrs={"user.x": "01"})),
        snap(entry("."), entry("a", mode=0o777), entry("b", mode=0o600), entry("c", xattrs={"user.x": "01"})),
        snap(entry("."), entry("a", mode=0o777), entry("b", mode=0o644), entry("c", xattrs={"user.x": "01"})),
        snap(entry("."), entry("a", mode=0o777), entry("b", mode=0o644), entry("c", xattrs={})),
        snap(entry("."), entry("a", mode=0o777, digest="e" * 64), entry("b", mode=0o644)),
    ]
    scores = [score(ORIGINAL, s).restorable.score for s in steps]
    assert scores[0] == 1.0
    assert all(a > b for a, b in itertools.pairwise(scores)), scores


def test_extra_items_are_penalised() -> None:
    """Items the original did not have lower the score."""
    rep = score(ORIGINAL, snap(*ORIGINAL.items, entry("intruder")))
    assert rep.restorable.score < 1.0
    assert any(d.reason == "extra item" and "intruder" in d.item for d in rep.differences)


def test_server_fields_are_scored_apart_and_explained() -> None:
    """A new inode lowers only the server class and is explained as server-assigned."""
    restored = snap(*(e.model_copy(update={"inode": 99}) for e in ORIGINAL.items))
    rep = score(ORIGINAL, restored)
    assert rep.restorable.score == 1.0
    assert rep.classes["server"].score < 1.0
    assert [d.note for d in rep.differences] == [
        "the filesystem numbers inodes; a re-created file gets a new one"
    ] * 4


def test_order_of_items_does_not_matter() -> None:
    """Items are matched by natural key, not position."""
    assert score(ORIGINAL, snap(*reversed(ORIGINAL.items))).overall.score == 1.0


def test_uncaptured_state_never_scores_one() -> None:
    """State in scope the capture never read keeps every score below 1.0 and is named."""
    from preimage.snapshot_schemas import Uncaptured

    blind = FileSnapshot(
        target="file:///t", root="/t", root_type="dir", items=list(ORIGINAL.items),
        uncaptured=[Uncaptured(name="big.iso", kind="file", reason="over the size cap")],
    )
    rep = score(blind, ORIGINAL)
    assert rep.restorable.score < 1.0
    assert rep.uncaptured == 1
    assert [(d.item, d.reason) for d in rep.differences] == [("file big.iso", "not captured")]


def test_diff_is_never_empty_over_uncaptured_state() -> None:
    """A diff cannot say 'nothing changed' about state it never read."""
    from preimage.similarity import diff_snapshots
    from preimage.snapshot_schemas import Uncaptured

    blind = FileSnapshot(
        target="file:///t", root="/t", root_type="dir", items=list(ORIGINAL.items),
        uncaptured=[Uncaptured(name="big.iso", kind="file", reason="over the size cap")],
    )
    d = diff_snapshots(blind, ORIGINAL)
    assert d.changes == []
    assert not d.empty
    assert d.uncaptured == ["file big.iso: over the size cap"]


def test_access_times_are_scored_apart_from_restorable() -> None:
    """A read after the restore moves atime: only the access class drops, restorable stays 1.0."""
    read = snap(*(e.model_copy(update={"atime_ns": 5_000_000_000}) for e in ORIGINAL.items))
    rep = score(ORIGINAL, read)
    assert rep.restorable.score == 1.0
    assert rep.classes["access"].score == 0.0
    assert rep.value("content+metadata+access") < 1.0
    assert {d.path for d in rep.differences} == {"atime_ns"}


def test_diff_ignores_access_times() -> None:
    """Reading a file is not a change: diff leaves atime out unless asked."""
    from preimage.similarity import diff_snapshots

    read = snap(*(e.model_copy(update={"atime_ns": 5}) for e in ORIGINAL.items))
    assert diff_snapshots(ORIGINAL, read).empty
    assert not diff_snapshots(ORIGINAL, read, include_access=True).empty


def test_a_class_without_fields_is_not_applicable() -> None:
    """A class neither side has a field of scores n/a (None), not a perfect 1.0."""
    from preimage.similarity.render import score_rows
    from preimage.snapshot_schemas.browser import BrowserSnapshot, StorageEntry

    entry_ = StorageEntry(kind="localStorage", origin="http://x", name="k", value="v")
    browser = BrowserSnapshot(target="browser:///p", profile="/p", origin="http://x", items=[entry_])
    rep = score(browser, browser)
    assert rep.classes["server"].score is None
    assert rep.classes["server"].text() == "n/a"
    assert rep.value("content") == 1.0
    assert score_rows(rep, [("t", rep)])[0] == ["t", "1.0000", "n/a", "n/a", "n/a", "1.0000"]


def test_values_of_another_type_are_a_difference() -> None:
    """1, 1.0 and True are different values: the difference says the type changed."""
    from preimage.snapshot_schemas.web import WebRecord, WebSnapshot

    def web(value: object) -> WebSnapshot:
        rec = WebRecord(kind="ticket", name="7", content={"done": value})
        return WebSnapshot(target="web+t://h/", adapter="t", base_url="http://h", location="/",
                           items=[rec])

    rep = score(web(True), web(1))
    assert rep.classes["content"].score == 0.0
    assert [(d.item, d.path, d.reason) for d in rep.differences] == [
        ("ticket:7", "content.done", "changed type")
    ]


def test_unordered_lists_compare_as_sets() -> None:
    """IMAP flags in another order are the same flags; a lost flag is one difference."""
    from preimage.snapshot_schemas.imap import ImapMessage, ImapSnapshot

    def mail(*flags: str) -> ImapSnapshot:
        m = ImapMessage(folder="INBOX", ident="<a@b>", digest="d", size=1, flags=list(flags),
                        internaldate="2024-01-01T00:00:00+00:00", uid=1)
        return ImapSnapshot(target="imap://u@h/INBOX", account="u@h:1", scope="folder", items=[m])

    assert score(mail("\\Answered", "\\Seen"), mail("\\Seen", "\\Answered")).restorable.score == 1.0
    rep = score(mail("\\Answered", "\\Flagged", "\\Seen"), mail("\\Answered", "\\Seen"))
    assert [(d.item, d.path, d.reason) for d in rep.differences] == [
        ("message <a@b> in INBOX", "flags{\\Flagged}", "missing field")
    ]


def test_server_differences_carry_the_connector_reason_and_the_restore_remap() -> None:
    """A web app's own reason explains its server fields, and a reported remap is named."""
    from preimage.restoration import IdRemap
    from preimage.snapshot_schemas.web import WebRecord, WebSnapshot

    def web(cid: int) -> WebSnapshot:
        rec = WebRecord(kind="comment", name="alice: hi", content={"text": "hi"},
                        server={"id": cid})
        return WebSnapshot(target="web+isso://h/t", adapter="isso", base_url="http://h",
                           location="/t", items=[rec],
                           server_reasons={"comment.id": "isso numbers comments itself"})

    original, restored = web(3), web(9)
    remap = IdRemap(key=original.items[0].natural_key(), field="id", old=3, new=9)
    [d] = score(original, restored, remaps=[remap]).differences
    assert d.path == "server.id"
    assert d.note == "isso numbers comments itself; the restore re-assigned id 3 → 9"


def test_human_lines_show_octal_modes_iso_times_and_item_names() -> None:
    """The report reads 0o644 and ISO times, names items by path, and lists a lost item once."""
    from preimage.similarity.render import report_lines

    damaged = snap(entry("."), entry("a", mode=0o600, mtime_ns=1_700_000_000_123_456_789),
                   entry("b", mode=0o600))
    lines = report_lines(score(ORIGINAL, damaged))
    assert lines == [
        "content  missing item   c (15 fields)",
        "metadata changed value  a  mode: 0o644 → 0o600",
        "metadata changed value  a  mtime_ns: 1970-01-01T00:00:00.000000001Z → "
        "2023-11-14T22:13:20.123456789Z",
    ]
    assert not any("None" in line for line in lines)
