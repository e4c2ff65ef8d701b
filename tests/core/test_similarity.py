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
    assert all(c.score == 1.0 for c in rep.classes.values())
    assert rep.differences == []


def test_nothing_restored_scores_zero() -> None:
    """An empty restore scores 0.0."""
    rep = score(ORIGINAL, snap())
    assert rep.restorable.score == 0.0
    assert rep.overall.score == 0.0
    assert {d.reason for d in rep.differences} == {"missing item"}


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
    assert all("server-assigned" in d.note for d in rep.differences)


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
