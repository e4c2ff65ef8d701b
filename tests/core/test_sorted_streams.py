"""Score and diff of two file trees as two sorted streams: the same answers as the
whole-way comparison, on small trees and on a real one, neither side held whole, and
the live side read once even when the comparison has to start over."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import preimage
from preimage import Store
from preimage.connectors.files.walk import Walker
from preimage.engine import live_capture as live_module
from preimage.engine.live_capture import ReplayableItems
from preimage.similarity import compare, diff_snapshots, flatten, score
from preimage.similarity.diff import _flat_changes
from preimage.similarity.streamed import Unordered, order_of, paired
from preimage.snapshot_schemas import FileEntry, FileSnapshot
from preimage.snapshot_schemas.files import walk_order
from preimage.store.documents import item_adapter
from preimage.store.snapshots import load_snapshot_row

REAL_TREE = Path("/usr/include/linux")   # real files nobody here wrote, nested
WALK_ORDER = FileSnapshot.item_order()


def _entry(path: str, **kw: object) -> FileEntry:
    base: dict[str, object] = {
        "path": path, "type": "file", "size": 3, "digest": "d" * 64, "mode": 0o644,
        "uid": 0, "gid": 0, "mtime_ns": 1, "atime_ns": 2, "inode": 7, "ctime_ns": 9,
    }
    base.update(kw)
    return FileEntry(**base)  # type: ignore[arg-type]


def _snap(items: object) -> FileSnapshot:
    return FileSnapshot.model_construct(target="file:///t", root="/t", root_type="dir",
                                        items=items, notes=[], uncaptured=[])


def _whole_way(original: FileSnapshot, live: FileSnapshot) -> dict[str, object]:
    o, oi = flatten(original.scoring_items(), original.server_note)
    r, ri = flatten(live.scoring_items(), live.server_note)
    return compare(o, oi, r, ri).model_dump()


def _walk_sorted(entries: list[FileEntry]) -> list[FileEntry]:
    return sorted(entries, key=lambda e: walk_order(e.path))


def _mutated(entries: list[FileEntry]) -> list[FileEntry]:
    """Entries with some removed, some changed in each class, and some added, in walk order."""
    out: list[FileEntry] = []
    for i, e in enumerate(entries):
        if i % 7 == 3:
            continue
        if i % 11 == 5 and e.type == "file":
            e = e.model_copy(update={"digest": "e" * 64, "size": e.size + 1})
        if i % 13 == 2:
            e = e.model_copy(update={"mode": e.mode ^ 0o022, "xattrs": {"user.k": "00"}})
        if i % 5 == 1:
            e = e.model_copy(update={"inode": e.inode + 1, "ctime_ns": e.ctime_ns + 1})
        if i % 17 == 4:
            e = e.model_copy(update={"atime_ns": e.atime_ns + 1})
        out.append(e)
        if i % 19 == 6:
            out.append(_entry(f"{e.path}.added"))
    out.append(_entry("zz-added-last"))
    return _walk_sorted(out)


SMALL = _walk_sorted([
    _entry("."), _entry("a", type="dir"), _entry("a/x"), _entry("a-b"), _entry("a/y/z"),
    _entry("a/y", type="dir"), _entry("b", mode=0o600), _entry("c"),
    _entry("d", xattrs={"user.x": "01"}), _entry("e", inode=3),
])


@pytest.mark.parametrize("live", [
    _mutated(SMALL), SMALL[1:], SMALL[:-1], [], [*SMALL, _entry("zz")],
], ids=["mutated", "first-missing", "last-missing", "empty", "one-extra"])
def test_merged_score_and_diff_equal_the_whole_way_on_small_trees(live: list[FileEntry]) -> None:
    """Two sorted snapshots score and diff exactly as the whole-way comparison, both ways."""
    original, restored = _snap(SMALL), _snap(live)
    assert order_of(original, restored) is not None
    assert score(original, restored).model_dump() == _whole_way(original, restored)
    assert score(restored, original).model_dump() == _whole_way(restored, original)
    ignored = {"server", "access"}
    assert diff_snapshots(original, restored).changes == _flat_changes(
        original, restored, None, ignored)


def test_merged_score_and_diff_equal_the_whole_way_on_a_real_tree() -> None:
    """A real tree's entries against a changed copy of them: the merged score and diff
    are the whole-way comparison's, every class count and difference."""
    entries = list(Walker(REAL_TREE, None, store_content=False).entries())
    assert len(entries) > 500 and entries == _walk_sorted(entries)
    original, live = _snap(entries), _snap(_mutated(entries))
    merged = score(original, live)
    assert merged.model_dump() == _whole_way(original, live)
    assert 0 < merged.restorable.score < 1 and merged.differences
    assert diff_snapshots(original, live).changes == _flat_changes(
        original, live, None, {"server", "access"})


def test_a_side_out_of_order_is_paired_by_key() -> None:
    """A backup whose items break the walk order is still compared exactly (by key)."""
    shuffled = [SMALL[3], *SMALL[:3], *SMALL[4:]]
    with pytest.raises(Unordered):
        list(paired(shuffled, SMALL, order=WALK_ORDER))
    original, live = _snap(shuffled), _snap(_mutated(SMALL))
    assert score(original, live).model_dump() == _whole_way(original, live)
    assert diff_snapshots(original, live).changes == _flat_changes(
        original, live, None, {"server", "access"})


def test_the_merge_holds_one_item_of_each_side() -> None:
    """Merging reads each side one item ahead of the pair it yields, never a side whole."""
    pulled = {"o": 0, "r": 0}

    def counting(side: str, entries: list[FileEntry]) -> Iterator[FileEntry]:
        for e in entries:
            pulled[side] += 1
            yield e

    pairs = paired(counting("o", SMALL), counting("r", SMALL), order=WALK_ORDER)
    for n, pair in enumerate(pairs, start=1):
        assert pair.o_leaves is not None and pair.r_leaves is not None
        assert pulled["o"] <= n + 1 and pulled["r"] <= n + 1


def test_replayable_items_read_again_from_the_scratch_area(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A live stream abandoned half way, then read again, gives every item once and in
    order, from the scratch area and then from the stream where it stood."""
    monkeypatch.setattr(live_module, "SPILL_ITEMS", 7)
    entries = [_entry(f"f{i:03}", inode=i) for i in range(40)]
    source = iter(entries)
    with store.scratch_area() as scratch:
        items = ReplayableItems(source, scratch, item_adapter(FileSnapshot))
        first = iter(items)
        assert [next(first) for _ in range(23)] == entries[:23]
        assert list(items) == entries
        assert list(items) == entries
        assert next(source, None) is None


def test_the_live_tree_is_read_once_when_the_backup_is_out_of_order(
        tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """score of a backup whose entries are out of walk order reads the live tree once
    and gives the whole-way comparison's answer."""
    root = tmp_path / "t"
    for i in range(30):
        (root / f"d{i % 3}").mkdir(parents=True, exist_ok=True)
        (root / f"d{i % 3}" / f"f{i:02}").write_bytes(b"%d" % i)
    backup = preimage.capture([f"file://{root}"], store=store)
    walks = 0
    real_entries = Walker.entries

    def counted(self: Walker) -> Iterator[FileEntry]:
        nonlocal walks
        walks += 1
        yield from real_entries(self)

    monkeypatch.setattr(Walker, "entries", counted)
    from preimage.engine import compare as compare_module

    original_load = compare_module.load_snapshot_row

    def shuffled(st: Store, row: object) -> FileSnapshot:
        snap = original_load(st, row)   # type: ignore[arg-type]
        items = list(snap.items)
        return snap.model_copy(update={"items": [items[-1], *items[:-1]]})  # type: ignore[return-value]

    monkeypatch.setattr(compare_module, "load_snapshot_row", shuffled)
    (root / "d1" / "f01").write_bytes(b"changed")
    _total, ((_target, report),) = preimage.score(backup.id, store=store)
    assert walks == 1
    monkeypatch.undo()
    live = preimage.capture([f"file://{root}"], store=store).snapshots[0]
    original = load_snapshot_row(store, store.catalog.get(backup.id).snapshots[0])
    assert report.model_dump() == _whole_way(_snap(list(original.items)), _snap(list(live.items)))

