"""Score, diff and restore read a large backup item by item: the same answers as the
whole-way comparison, and a malformed stored chunk refused with a one-line error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import preimage
from preimage import Store
from preimage.interface.errors import StoreError
from preimage.similarity import compare, diff_snapshots, flatten, score
from preimage.similarity.diff import _flat_changes
from preimage.snapshot_schemas import FileEntry, FileSnapshot
from preimage.store.documents import StoredItems, item_adapter
from preimage.store.snapshots import load_snapshot_row


def _entry(path: str, **kw: object) -> FileEntry:
    base: dict[str, object] = {
        "path": path, "type": "file", "size": 3, "digest": "d" * 64, "mode": 0o644,
        "uid": 0, "gid": 0, "mtime_ns": 1, "atime_ns": 2, "inode": 7, "ctime_ns": 9,
    }
    base.update(kw)
    return FileEntry(**base)  # type: ignore[arg-type]


def _snap(*items: FileEntry) -> FileSnapshot:
    return FileSnapshot(target="file:///t", root="/t", root_type="dir", items=list(items))


ORIGINAL = _snap(_entry("."), _entry("a"), _entry("b", mode=0o600), _entry("c"),
                 _entry("d", xattrs={"user.x": "01"}), _entry("e", inode=3))
LIVE = _snap(_entry(".", mtime_ns=5), _entry("b", mode=0o644), _entry("a", digest="e" * 64),
             _entry("d", xattrs={}), _entry("f"), _entry("e", inode=4, atime_ns=8))


def _whole_way(original: FileSnapshot, live: FileSnapshot) -> object:
    o, oi = flatten(original.scoring_items(), original.server_note)
    r, ri = flatten(live.scoring_items(), live.server_note)
    return compare(o, oi, r, ri)


def test_score_item_by_item_equals_the_whole_way_comparison() -> None:
    """Changed, missing, extra and server-only items score exactly as the flat comparison."""
    assert score(ORIGINAL, LIVE).model_dump() == _whole_way(ORIGINAL, LIVE).model_dump()  # type: ignore[attr-defined]
    assert score(LIVE, ORIGINAL).model_dump() == _whole_way(LIVE, ORIGINAL).model_dump()  # type: ignore[attr-defined]


def test_a_repeated_key_is_compared_the_whole_way() -> None:
    """A snapshot naming one path twice merges its leaves, as the flat comparison does."""
    doubled = _snap(_entry("."), _entry("a"), _entry("a", mode=0o600))
    assert score(doubled, ORIGINAL).model_dump() == _whole_way(doubled, ORIGINAL).model_dump()  # type: ignore[attr-defined]
    changes = {(c.label, c.change) for c in diff_snapshots(ORIGINAL, doubled).changes}
    assert ("a", "changed") in changes and ("b", "removed") in changes


def test_diff_item_by_item_lists_each_change_once_in_key_order() -> None:
    """diff names removed, added and changed items sorted, server and access fields ignored."""
    changes = [(c.change, c.label, c.fields) for c in diff_snapshots(ORIGINAL, LIVE).changes]
    assert changes == [
        ("removed", "c", []),
        ("added", "f", []),
        ("changed", ".", ["mtime_ns"]),
        ("changed", "a", ["digest"]),
        ("changed", "b", ["mode"]),
        ("changed", "d", ["xattrs", 'xattrs["user.x"]']),
    ]
    whole = _flat_changes(ORIGINAL, LIVE, None, {"server", "access"})
    assert diff_snapshots(ORIGINAL, LIVE).changes == whole


def _many_files(root: Path) -> Path:
    """2,500 small files in 25 folders: a document stored in more than one chunk."""
    for i in range(2500):
        d = root / f"d{i // 100:02}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:05}").write_bytes(b"x" * (i % 5))
    return root


def test_a_backup_is_loaded_without_reading_its_items(tmp_path: Path, store: Store) -> None:
    """A chunked backup loads as items read from the store, and score and diff of the
    unchanged tree find nothing."""
    root = _many_files(tmp_path / "t")
    backup = preimage.capture([f"file://{root}"], store=store)
    loaded = load_snapshot_row(store, store.catalog.get(backup.id).snapshots[0])
    assert isinstance(loaded.items, StoredItems) and len(loaded.items) == 2526
    total, _ = preimage.score(backup.id, store=store)
    assert total.restorable.score == 1.0
    assert all(d.empty for d in preimage.diff(backup.id, store=store))


def test_a_malformed_chunk_is_refused_naming_its_backup(store: Store) -> None:
    """A stored chunk whose items do not validate, or do not number what its head says,
    raises a one-line StoreError naming the backup and the target."""
    adapter = item_adapter(FileSnapshot)
    bad = store.blobs.put_bytes(json.dumps([{"path": 1, "type": "file"}]).encode())
    with pytest.raises(StoreError, match=r"file:///t in backup b1 is malformed") as exc:
        list(StoredItems(store.blobs, [(bad, 1)], adapter, backup_id="b1", path="file:///t"))
    assert "\n" not in str(exc.value)
    good = store.blobs.put_bytes(b"[" + _entry("a").model_dump_json().encode() + b"]")
    short = StoredItems(store.blobs, [(good, 2)], adapter, backup_id="b1", path="file:///t")
    with pytest.raises(StoreError, match="holds 1 items, its head says 2"):
        short.validate_all()


def _with_last_chunk_malformed(store: Store, backup_id: str) -> None:
    """Point the backup's document at a last chunk that hashes right but does not parse
    (what `preimage check` would name)."""
    row = store.catalog.get(backup_id).snapshots[0]
    head = json.loads(store.blobs.get_bytes(row.digest))
    _digest, count = head["items"]["chunks"][-1]
    head["items"]["chunks"][-1] = [store.blobs.put_bytes(b'[{"path": 7}]'), count]
    digest = store.blobs.put_bytes(json.dumps(head).encode())
    store.blobs.flush()
    with store.catalog._tx() as db:  # type: ignore[attr-defined]
        db.execute("UPDATE snapshots SET digest=? WHERE backup_id=?", (digest, backup_id))
        db.execute("INSERT INTO refs VALUES (?,?,?)", (backup_id, 0, digest))


@pytest.mark.parametrize("target_there", [False, True])
def test_a_restore_of_a_malformed_last_chunk_writes_nothing(
        tmp_path: Path, store: Store, target_there: bool) -> None:
    """A tree's document read once, by the restore's plan: a malformed last chunk still
    stops the restore before its first write — a removed tree stays absent, a changed one
    keeps its change and its new file."""
    root = _many_files(tmp_path / "t")
    backup = preimage.capture([f"file://{root}"], store=store)
    _with_last_chunk_malformed(store, backup.id)
    if target_there:
        (root / "d00" / "f00001").write_bytes(b"changed")
        (root / "d24" / "new").write_bytes(b"new")
    else:
        shutil.rmtree(root)
    with pytest.raises(StoreError, match=r"malformed .* nothing was written$"):
        preimage.restore(backup.id, store=store)
    if target_there:
        assert (root / "d00" / "f00001").read_bytes() == b"changed"
        assert (root / "d24" / "new").read_bytes() == b"new"
    else:
        assert not root.exists()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".preimage")] == []
