"""Large snapshot documents: items in content-defined chunks, linked blobs, and what an
unchanged capture costs."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
import zstandard

import preimage
from preimage import Store
from preimage.store.check import check
from preimage.store.documents import StoredItems
from preimage.store.format import FORMAT
from preimage.store.prune import forget, prune
from preimage.store.snapshots import load_snapshot_row


def _tree(root: Path, n: int) -> Path:
    for i in range(n):
        d = root / f"d{i // 100:02}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:05}").write_bytes(f"file {i}\n".encode() * (1 + i % 7))
    return root


def _refs_rows(store: Store, backup_id: str) -> int:
    db = sqlite3.connect(store.home / "catalog.sqlite")
    try:
        return int(db.execute("SELECT count(*) FROM refs WHERE backup_id=?",
                              (backup_id,)).fetchone()[0])
    finally:
        db.close()


def test_an_unchanged_capture_stores_under_a_kilobyte_per_thousand_entries(
    tmp_path: Path, store: Store
) -> None:
    """A second capture of an unchanged tree of 3,000 files stores only a small head."""
    root = _tree(tmp_path / "t", 3000)
    first = preimage.capture([f"file://{root}"], store=store)
    again = preimage.capture([f"file://{root}"], store=store)
    entries = len(again.snapshots[0].items)
    assert entries == 3031
    assert again.stored_bytes < entries   # < 1 KB per thousand entries
    assert _refs_rows(store, again.id) < 60   # the head and its chunks, not every file
    head1 = store.catalog.get(first.id).snapshots[0].digest
    head2 = store.catalog.get(again.id).snapshots[0].digest
    assert store.catalog.refs(again.id) - {head2} == store.catalog.refs(first.id) - {head1}


def test_a_changed_file_rewrites_the_chunk_around_it_only(tmp_path: Path, store: Store) -> None:
    """Changing one file in the middle stores that file, its chunk and a head."""
    root = _tree(tmp_path / "t", 3000)
    preimage.capture([f"file://{root}"], store=store)
    before = set(store.blobs.digests())
    (root / "d15" / "f01550").write_bytes(b"changed\n")   # its directory's mtime moves too
    again = preimage.capture([f"file://{root}"], store=store)
    new = set(store.blobs.digests()) - before
    assert len(new) <= 4   # the file, one or two chunks, the head
    assert again.snapshots[0].items[1 + 15 * 101 + 51].path == "d15/f01550"


def test_captured_items_read_back_from_the_store(tmp_path: Path, store: Store) -> None:
    """What capture returns reads its items back chunk by chunk, equal to the stored ones."""
    root = _tree(tmp_path / "t", 2500)
    backup = preimage.capture([f"file://{root}"], store=store)
    snap = backup.snapshots[0]
    assert isinstance(snap.items, StoredItems)
    loaded = load_snapshot_row(store, store.catalog.get(backup.id).snapshots[0])
    assert snap.items == loaded.items
    assert [e.path for e in snap.items[-3:]] == [e.path for e in loaded.items[-3:]]
    assert snap.model_dump() == loaded.model_dump()


def test_a_chunked_snapshot_restores_exactly_and_prunes_safely(
    tmp_path: Path, store: Store
) -> None:
    """Forgetting the first of two backups and pruning keeps every blob the second needs."""
    root = _tree(tmp_path / "t", 2500)
    first = preimage.capture([f"file://{root}"], store=store)
    for i in range(0, 2500, 250):
        (root / f"d{i // 100:02}" / f"f{i:05}").write_bytes(b"second version\n")
    second = preimage.capture([f"file://{root}"], store=store)
    forget(store, [first.id])
    report = prune(store)
    assert report.deleted_blobs >= 10   # the first versions of the changed files
    assert check(store, read_data=True).ok
    shutil.rmtree(root)
    preimage.restore(second.id, store=store)
    assert (root / "d00" / "f00000").read_bytes() == b"second version\n"
    assert (root / "d24" / "f02499").read_bytes() == b"file 2499\n" * (1 + 2499 % 7)
    total, _ = preimage.score(second.id, store=store)
    assert total.restorable.score == 1.0
    forget(store, [b.id for b in store.catalog.list_backups(None)])   # the undo backups too
    prune(store)
    assert list(store.blobs.digests()) == []
    db = sqlite3.connect(store.home / "catalog.sqlite")
    assert db.execute("SELECT count(*) FROM links").fetchone()[0] == 0
    db.close()


@pytest.mark.parametrize("damage", ["delete", "replace"])
def test_a_damaged_chunk_is_named_by_check_and_stops_a_restore(
    tmp_path: Path, store: Store, damage: str
) -> None:
    """A missing or corrupt chunk is a problem check names; a restore writes nothing."""
    root = _tree(tmp_path / "t", 2500)
    backup = preimage.capture([f"file://{root}"], store=store)
    snap = backup.snapshots[0]
    assert isinstance(snap.items, StoredItems)
    chunk = snap.items._chunks[1][0]
    path = store.blobs.path(chunk)   # type: ignore[attr-defined]
    if damage == "delete":
        path.unlink()
    else:   # a sound zstd frame of other bytes: only the hash can tell
        path.write_bytes(zstandard.ZstdCompressor().compress(b"[]"))
    report = check(store, read_data=True)
    assert any(p.subject == chunk for p in report.problems)
    (root / "d00" / "f00000").write_bytes(b"changed after the capture\n")
    with pytest.raises(preimage.PreimageError):
        preimage.restore(backup.id, store=store)
    assert (root / "d00" / "f00000").read_bytes() == b"changed after the capture\n"


def test_a_format_two_store_is_upgraded_and_keeps_its_backups(tmp_path: Path) -> None:
    """A store at format 2 (no links) opens at format 3; its old backups still restore."""
    home = tmp_path / "home"
    root = _tree(tmp_path / "t", 30)
    with Store(home) as st:
        backup = preimage.capture([f"file://{root}"], store=st)
    db = sqlite3.connect(home / "catalog.sqlite")
    db.executescript("DROP TABLE links; UPDATE meta SET value='2' WHERE key='format';")
    db.close()
    with Store(home) as st:
        assert st.catalog.format_version() == FORMAT
        shutil.rmtree(root)
        preimage.restore(backup.id, store=st)
        assert check(st, read_data=True).ok
    assert (root / "d00" / "f00003").read_bytes() == b"file 3\n" * 4


def test_an_entry_whose_inode_ctime_and_mtime_match_is_reused_unread(
    tmp_path: Path, store: Store
) -> None:
    """The walk trusts the previous snapshot for an unchanged inode and reads a changed one."""
    from preimage.connectors.files.walk import Walker

    root = _tree(tmp_path / "t", 3)
    first = {e.path: e for e in Walker(root, store.blobs).entries()}
    other = store.blobs.put_bytes(b"what the previous snapshot says\n")
    forged = [e.model_copy(update={"digest": other}) if e.path == "d00/f00001" else e
              for e in first.values()]
    again = {e.path: e for e in Walker(root, store.blobs, previous=forged).entries()}
    assert again["d00/f00001"].digest == other          # reused: the file was not read
    os.utime(root / "d00" / "f00001", ns=(1, first["d00/f00001"].mtime_ns))   # ctime moves
    third = {e.path: e for e in Walker(root, store.blobs, previous=forged).entries()}
    assert third["d00/f00001"].digest == first["d00/f00001"].digest
    assert third["d00/f00001"].atime_ns == 1


def test_a_rewrite_that_keeps_size_and_mtime_is_captured(tmp_path: Path, store: Store) -> None:
    """Content changed in place with the old mtime put back is still seen (ctime moved)."""
    root = _tree(tmp_path / "t", 2500)
    preimage.capture([f"file://{root}"], store=store)
    victim = root / "d07" / "f00700"
    st = victim.stat()
    victim.write_bytes(b"FILE 700\n")
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = preimage.capture([f"file://{root}"], store=store)
    entry = next(e for e in again.snapshots[0].items if e.path == "d07/f00700")
    assert store.blobs.get_bytes(entry.digest) == b"FILE 700\n"


def test_an_unreadable_previous_document_only_costs_a_full_read(
    tmp_path: Path, store: Store
) -> None:
    """A previous snapshot whose chunk is gone is not reused; the capture reads everything."""
    root = _tree(tmp_path / "t", 2500)
    first = preimage.capture([f"file://{root}"], store=store)
    items = first.snapshots[0].items
    assert isinstance(items, StoredItems)
    store.blobs.path(items._chunks[3][0]).unlink()   # type: ignore[attr-defined]
    again = preimage.capture([f"file://{root}"], store=store)
    shutil.rmtree(root)
    preimage.restore(again.id, store=store)
    assert (root / "d24" / "f02499").read_bytes() == b"file 2499\n" * (1 + 2499 % 7)


def test_symlinks_are_reused_by_the_next_capture(tmp_path: Path, store: Store) -> None:
    """Putting a symlink's atime back moves its ctime; that ctime is what is recorded, so
    an unchanged tree of symlinks re-captures to the same chunks."""
    root = _tree(tmp_path / "t", 2000)
    for i in range(0, 2000, 20):
        os.symlink(f"f{i:05}", root / f"d{i // 100:02}" / f"link{i:05}")
    preimage.capture([f"file://{root}"], store=store)
    again = preimage.capture([f"file://{root}"], store=store)
    third = preimage.capture([f"file://{root}"], store=store)
    assert third.stored_bytes < len(third.snapshots[0].items)   # < 1 KB per thousand
    heads = [store.catalog.get(b.id).snapshots[0].digest for b in (again, third)]
    assert store.catalog.refs(again.id) - {heads[0]} == store.catalog.refs(third.id) - {heads[1]}
