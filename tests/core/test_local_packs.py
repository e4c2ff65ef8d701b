"""Pack files of the embedded store: small blobs packed, read, checked, pruned, carried."""

from __future__ import annotations

import io
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import preimage
from preimage import Store
from preimage.store.archive import export_backup, import_backup
from preimage.store.check import check
from preimage.store.copy import copy_backup
from preimage.store.format import FORMAT
from preimage.store.prune import forget, prune


def _tree(root: Path, tag: str, n: int = 40) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"{tag}-{i}.txt").write_bytes(f"{tag} file {i}\n".encode() * (i + 1))
    return root


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _packs(home: Path) -> list[Path]:
    return sorted((home / "blobs" / "packs").rglob("*.pack"))


def _loose(home: Path) -> list[Path]:
    return [p for fan in (home / "blobs").iterdir() if len(fan.name) == 2 and fan.is_dir()
            for p in fan.iterdir()]


def _index(home: Path) -> sqlite3.Connection:
    return sqlite3.connect(home / "blobs" / "packs.sqlite")


def test_a_capture_packs_its_small_blobs_and_restores_them(tmp_path: Path, store: Store) -> None:
    """Forty small files go into one pack, not forty files, and come back byte for byte."""
    root = _tree(tmp_path / "t", "a")
    before = _files(root)
    backup = preimage.capture([f"file://{root}"], store=store)
    assert len(_packs(store.home)) == 1
    assert _loose(store.home) == []
    shutil.rmtree(root)
    preimage.restore(backup.id, store=store)
    assert _files(root) == before
    assert check(store, read_data=True).ok


def test_an_unchanged_capture_writes_no_new_pack(tmp_path: Path, home: Path) -> None:
    """A second capture of the same tree, in a new process, adds only its document head."""
    root = _tree(tmp_path / "t", "a")
    with Store(home) as st:
        preimage.capture([f"file://{root}"], store=st)
    packs = _packs(home)
    with Store(home) as st:
        preimage.capture([f"file://{root}"], store=st)
    [new] = sorted(set(_packs(home)) - set(packs))
    db = _index(home)
    assert db.execute("SELECT COUNT(*) FROM packed WHERE pack=?", (new.stem,)).fetchone() == (1,)
    db.close()


def test_a_damaged_frame_is_named_by_check_and_rewritten_by_the_next_capture(
    tmp_path: Path, home: Path
) -> None:
    """A flipped byte inside a pack: check names the blob, restore refuses, a new capture heals it."""
    root = _tree(tmp_path / "t", "a", n=5)
    with Store(home) as st:
        first = preimage.capture([f"file://{root}"], store=st)
        victim = next(e.digest for e in first.snapshots[0].items
                      if e.path.endswith("a-4.txt"))
    assert victim
    db = _index(home)
    pack, offset, length = db.execute(
        "SELECT pack, offset, length FROM packed WHERE digest=?", (victim,)).fetchone()
    db.close()
    [path] = [p for p in _packs(home) if p.stem == pack]
    data = bytearray(path.read_bytes())
    data[offset + length - 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with Store(home) as st:
        report = check(st, read_data=True)
        assert any(victim[:12] in p.message or p.digest == victim for p in report.problems)
        shutil.rmtree(root)
        with pytest.raises(preimage.PreimageError):
            preimage.restore(first.id, store=st)
        assert not root.exists()
    _tree(root, "a", n=5)
    with Store(home) as st:
        healed = preimage.capture([f"file://{root}"], store=st)
        shutil.rmtree(root)
        preimage.restore(healed.id, store=st)
        assert (root / "a-4.txt").read_bytes() == b"a file 4\n" * 5


def test_prune_drops_dead_packs_and_repacks_mostly_dead_ones(tmp_path: Path, store: Store) -> None:
    """After forgetting, prune leaves only referenced blobs and no pack holding only dead ones."""
    old = _tree(tmp_path / "old", "x", n=60)
    preimage.capture([f"file://{old}"], store=store)
    keep = _tree(tmp_path / "keep", "k", n=3)
    kept = preimage.capture([f"file://{keep}", f"file://{old}"], store=store)
    for p in old.iterdir():
        p.write_bytes(p.read_bytes() + b"changed\n")
    last = preimage.capture([f"file://{keep}", f"file://{old}"], store=store)
    forget(store, [kept.id])
    report = prune(store)
    assert report.freed_bytes > 0
    live = store.catalog.referenced(skip_statuses=("failed", "abandoned"))
    assert set(store.blobs.digests()) == live
    db = _index(store.home)
    on_disk = {p.stem: p.stat().st_size for p in _packs(store.home)}
    for pack, size in on_disk.items():
        used = db.execute("SELECT COALESCE(SUM(length), 0) FROM packed WHERE pack=?",
                          (pack,)).fetchone()[0]
        assert used * 2 >= size - 200, f"pack {pack} is mostly dead after prune"
    db.close()
    shutil.rmtree(old)
    preimage.restore(last.id, store=store)
    assert check(store, read_data=True).ok


@pytest.mark.parametrize("point", ["pack-seal", "pack-index"])
def test_a_capture_killed_while_sealing_a_pack_loses_nothing_sealed(
    tmp_path: Path, home: Path, point: str
) -> None:
    """kill -9 before the rename or before the index rows: earlier backups intact, prune reclaims."""
    root = _tree(tmp_path / "t", "a", n=10)
    with Store(home) as st:
        sealed = preimage.capture([f"file://{root}"], store=st)
    packs_before = set(_packs(home))
    _tree(root, "b", n=10)
    env = {**os.environ, "PREIMAGE_HOME": str(home), "PREIMAGE_CRASH_AT": f"{point}:1"}
    res = subprocess.run([sys.executable, "-m", "preimage", "capture", f"file://{root}"],
                         env=env, capture_output=True, text=True)
    assert res.returncode == -9
    with Store(home) as st:
        assert [p.kind for p in check(st, read_data=True).problems] == ["abandoned-capture"]
        assert st.blobs.leftovers() or set(_packs(home)) - packs_before, \
            "the killed writer's temp file or unindexed pack is there"
        prune(st)
        assert st.blobs.leftovers() == []
        assert list((home / "blobs" / "tmp").iterdir()) == []
        live = st.catalog.referenced(skip_statuses=("failed", "abandoned"))
        assert set(st.blobs.digests()) == live
        db = _index(home)
        named = {p for (p,) in db.execute("SELECT DISTINCT pack FROM packed")}
        db.close()
        assert {p.stem for p in _packs(home)} == named
        shutil.rmtree(root)
        preimage.restore(sealed.id, store=st)
        assert sorted(p.name for p in root.iterdir()) == [f"a-{i}.txt" for i in sorted(
            range(10), key=lambda i: f"a-{i}.txt")]
        again = preimage.capture([f"file://{root}"], store=st)
        assert check(st, read_data=True).ok
        assert again.id


def test_a_format_3_store_keeps_its_loose_blobs_and_packs_new_ones(
    tmp_path: Path, home: Path
) -> None:
    """An older store's loose blobs are read as they are; the upgrade rewrites nothing."""
    root = _tree(tmp_path / "t", "a", n=6)
    with Store(home) as st:
        old = preimage.capture([f"file://{root}"], store=st)
    # make it what a format-3 preimage wrote: every blob a file of its own, no pack index
    with Store(home) as st:
        for digest in list(st.blobs.digests()):
            st.blobs.path(digest)   # gives a packed blob a file of its own
    for pack in _packs(home):
        pack.unlink()
    (home / "blobs" / "packs.sqlite").unlink()
    for extra in ("packs.sqlite-wal", "packs.sqlite-shm"):
        (home / "blobs" / extra).unlink(missing_ok=True)
    loose = sorted(p.name for p in _loose(home))
    db = sqlite3.connect(home / "catalog.sqlite")
    db.execute("UPDATE meta SET value='3' WHERE key='format'")
    db.commit()
    db.close()
    _tree(root, "b", n=6)
    with Store(home) as st:
        assert st.catalog.format_version() == FORMAT
        new = preimage.capture([f"file://{root}"], store=st)
        assert sorted(p.name for p in _loose(home)) == loose
        assert _packs(home)
        shutil.rmtree(root)
        preimage.restore(old.id, store=st)
        assert sorted(p.name for p in root.iterdir()) == sorted(f"a-{i}.txt" for i in range(6))
        preimage.restore(new.id, store=st)
        assert len(list(root.iterdir())) == 12
        assert check(st, read_data=True).ok


def test_export_import_and_copy_carry_packed_blobs(tmp_path: Path, store: Store) -> None:
    """A packed backup exported and imported, or copied, restores in the other store."""
    root = _tree(tmp_path / "t", "a", n=8)
    before = _files(root)
    backup = preimage.capture([f"file://{root}"], store=store)
    buf = io.BytesIO()
    export_backup(store, backup.id, buf)
    buf.seek(0)
    with Store(tmp_path / "other") as other:
        import_backup(other, buf)
        shutil.rmtree(root)
        preimage.restore(backup.id, store=other)
        assert _files(root) == before
    with Store(tmp_path / "third") as third:
        copy_backup(store, third, backup.id)
        shutil.rmtree(root)
        preimage.restore(backup.id, store=third)
        assert _files(root) == before
        assert check(third, read_data=True).ok


def test_forget_everything_then_prune_leaves_no_pack(tmp_path: Path, store: Store) -> None:
    """With every backup forgotten, prune deletes every pack file."""
    root = _tree(tmp_path / "t", "a")
    preimage.capture([f"file://{root}"], store=store)
    for row in store.catalog.list_backups(None):
        forget(store, [row.id])
    prune(store)
    assert _packs(store.home) == []
    assert list(store.blobs.digests()) == []


def test_a_forked_child_does_not_write_into_its_parents_open_pack(store: Store) -> None:
    """A child forked while a pack is open writes its own pack; the parent's stays sound."""
    first = store.blobs.put_bytes(b"parent before the fork\n" * 10)
    pid = os.fork()
    if pid == 0:   # the child: a blob of its own, sealed in a pack of its own
        code = 1
        try:
            store.blobs.put_bytes(b"written by the child\n" * 10)
            store.blobs.flush()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    second = store.blobs.put_bytes(b"parent after the fork\n" * 10)
    store.blobs.flush()
    assert store.blobs.get_bytes(first) == b"parent before the fork\n" * 10
    assert store.blobs.get_bytes(second) == b"parent after the fork\n" * 10
    assert len(_packs(store.home)) == 2
    for digest in store.blobs.digests():
        assert store.blobs.inspect(digest, read_data=True) is None


def test_a_lost_pack_index_is_rebuilt_from_the_packs_and_loses_nothing(
    tmp_path: Path, home: Path
) -> None:
    """With the index deleted, check rebuilds it from the trailers; every backup restores."""
    root = _tree(tmp_path / "t", "a", n=12)
    before = _files(root)
    with Store(home) as st:
        backup = preimage.capture([f"file://{root}"], store=st)
        forget_me = preimage.capture([f"file://{_tree(tmp_path / 'u', 'u', n=5)}"], store=st)
    for name in ("packs.sqlite", "packs.sqlite-wal", "packs.sqlite-shm"):
        (home / "blobs" / name).unlink(missing_ok=True)
    with Store(home) as st:
        report = check(st, read_data=True, repair=True)
        assert report.ok, [p.message for p in report.problems]
        assert {r.status for r in st.catalog.list_backups(None)} == {"complete"}
        forget(st, [forget_me.id])
        prune(st)
        shutil.rmtree(root)
        preimage.restore(backup.id, store=st)
        assert _files(root) == before
        live = st.catalog.referenced(skip_statuses=("failed", "abandoned"))
        assert set(st.blobs.digests()) == live


def test_a_large_blob_hidden_after_a_capture_first_looked_is_written_again(
        tmp_path: Path, home: Path, store: Store) -> None:
    """A store does not look for loose copies of a new blob where none was when it first
    looked (fan-out folders, ``hidden/``); a loose blob another process wrote and a prune
    then hid meanwhile is written again by the capture that needs it, never lost."""
    big = os.urandom(3 << 20)   # its frame is over a mebibyte: a loose blob
    other = Store(home)   # another process's view of the same store
    try:
        small = _tree(tmp_path / "small", "s", n=3)
        preimage.capture([f"file://{small}"], store=store)   # this store has looked now
        digest = other.blobs.put_bytes(big)
        assert store.blobs._surely_not_loose(digest), "its folder was not there at first look"
        with other.catalog.lease("0000000000run"):
            other.catalog.add_backup("0000000000run")
            prune(other, wait=False)   # hides the unreferenced loose blob
            assert other.blobs.hidden()
            tree = tmp_path / "tree"
            tree.mkdir()
            (tree / "big.bin").write_bytes(big)
            backup = preimage.capture([f"file://{tree}"], store=store)
    finally:
        other.close()
    prune(store)   # the hidden copy is purged; the one the capture wrote stands
    shutil.rmtree(tree)
    preimage.restore(backup.id, store=store)
    assert (tree / "big.bin").read_bytes() == big
    assert not check(store).problems


def test_a_recapture_whose_packs_go_after_it_looked_them_up_stores_the_files_again(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unchanged re-capture looks the previous snapshot's blobs up a few hundred at a
    time, ahead of the walk; a pack deleted between that look-up and the walk reaching its
    files (a repack, damage) is not taken for there: the files are read and stored again,
    and the new backup restores."""
    from preimage.store.blobs import LocalBlobStore

    root = _tree(tmp_path / "t", "a", n=30)
    before = _files(root)
    with Store(home) as st:
        preimage.capture([f"file://{root}"], store=st)
    looked = LocalBlobStore.will_check

    def look_then_lose_the_packs(self: LocalBlobStore, digests: list[str]) -> None:
        looked(self, digests)
        for pack in _packs(home):
            pack.unlink()

    monkeypatch.setattr(LocalBlobStore, "will_check", look_then_lose_the_packs)
    with Store(home) as st:
        again = preimage.capture([f"file://{root}"], store=st)
    monkeypatch.undo()
    shutil.rmtree(root)
    with Store(home) as st:
        preimage.restore(again.id, store=st)
    assert _files(root) == before


def test_a_young_store_whose_index_appears_after_its_first_write_stores_again(
        tmp_path: Path, home: Path, store: Store) -> None:
    """A store with no pack index when a write first looks does not look for the index
    again before it seals a pack of its own; blobs another process packed meanwhile are
    written once more by the capture that needs them — a second copy, never a lost one —
    and everything restores, checks clean and survives a prune."""
    store.blobs.put_bytes(b"first write: the store has no pack index yet")
    assert not (home / "blobs" / "packs.sqlite").exists()
    root = _tree(tmp_path / "t", "a", n=12)
    before = _files(root)
    with Store(home) as other:   # another process's capture packs the same files
        first = preimage.capture([f"file://{root}"], store=other)
    assert (home / "blobs" / "packs.sqlite").exists()
    copy = tmp_path / "copy"   # the same contents in other files: read and written
    shutil.copytree(root, copy)
    written = store.blobs.blobs_written
    again = preimage.capture([f"file://{copy}"], store=store)
    assert store.blobs.blobs_written - written >= len(before), "it packed its own copies"
    assert not check(store).problems
    forget(store, [first.id])
    prune(store)
    shutil.rmtree(copy)
    preimage.restore(again.id, store=store)
    assert _files(copy) == before
    assert not check(store).problems


def test_a_young_store_finds_what_it_sealed_itself_and_what_others_write_later(
        tmp_path: Path, home: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store's first captures ask the pack index only about blobs they may have sealed
    themselves: the same bytes met again are not stored twice. Once another process
    writes to the index, every write asks it again: blobs that process packed are not
    stored twice either."""
    import preimage.store.local_packs as lp

    monkeypatch.setattr(lp, "PACK_BLOBS", 8)   # a pack sealed every eight blobs
    root = _tree(tmp_path / "t", "a", n=30)
    first = preimage.capture([f"file://{root}"], store=store)
    assert len(_packs(home)) >= 4
    mine = tmp_path / "mine"   # the same contents in other files: found in its own packs
    shutil.copytree(root, mine)
    written = store.blobs.blobs_written
    preimage.capture([f"file://{mine}"], store=store)
    assert store.blobs.blobs_written - written <= 2, "only its own document is new"
    with Store(home) as other:   # another process's capture writes to the index
        theirs = _tree(tmp_path / "theirs", "b", n=10)
        preimage.capture([f"file://{theirs}"], store=other)
    ours = _tree(tmp_path / "ours", "c", n=10)   # a pack of this store's, sealed after theirs
    preimage.capture([f"file://{ours}"], store=store)
    copy = tmp_path / "copy"   # their contents in other files: found in their packs
    shutil.copytree(theirs, copy)
    written = store.blobs.blobs_written
    again = preimage.capture([f"file://{copy}"], store=store)
    assert store.blobs.blobs_written - written <= 2, "only its own document is new"
    shutil.rmtree(root)
    preimage.restore(first.id, store=store)
    assert _files(root) == _files(mine)
    shutil.rmtree(copy)
    preimage.restore(again.id, store=store)
    assert _files(copy) == _files(theirs)
    assert not check(store).problems
