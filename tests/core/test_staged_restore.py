"""Staged restores: a directory the restore creates appears whole or not at all."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from stat import S_IMODE as stat_mode
from typing import cast

import pytest

import preimage
from preimage import Store
from preimage.connectors.files import FileConnector
from preimage.interface.blobs import BlobStore
from preimage.interface.errors import BlobCorruptError
from preimage.restoration import RestorePolicy
from preimage.store.snapshots import load_snapshot_row


class _DamagedOnRead:
    """The store's blobs, except one whose bytes turn out damaged when read: a disk that
    fails after the restore's verification (every other call goes to the real store)."""

    def __init__(self, real: BlobStore, damaged: str) -> None:
        self.real, self.damaged = real, damaged

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def chunks(self, digest: str, *, backup_id: str | None = None,
               path: str | None = None) -> Iterator[bytes]:
        if digest == self.damaged:
            yield b"half of it"
            raise BlobCorruptError(digest, backup_id=backup_id, path=path)
        yield from self.real.chunks(digest, backup_id=backup_id, path=path)


def _tree(root: Path) -> None:
    (root / "new" / "deep").mkdir(parents=True)
    (root / "keep.txt").write_text("stays\n")
    for i in range(20):
        (root / "new" / f"f{i}").write_text(f"file {i}\n")
        (root / "new" / "deep" / f"g{i}").write_text(f"deeper {i}\n")


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _restore_with_damage(st: Store, backup_id: str, damaged_path: str) -> None:
    snap = load_snapshot_row(st, st.catalog.get(backup_id).snapshots[0])
    digest = next(e.digest for e in snap.items if e.path == damaged_path)
    assert digest is not None
    snap = load_snapshot_row(st, st.catalog.get(backup_id).snapshots[0])
    FileConnector().restore(snap, cast(BlobStore, _DamagedOnRead(st.blobs, digest)),
                            policy=RestorePolicy(dry_run=False))


def test_a_blob_damaged_mid_restore_publishes_none_of_the_new_directory(
    tmp_path: Path, store: Store
) -> None:
    """A blob that fails its hash while a removed directory is rebuilt leaves the directory
    absent and no hidden staging behind; the same restore with a sound store brings it back."""
    root = tmp_path / "t"
    _tree(root)
    backup = preimage.capture([f"file://{root}"], store=store)
    shutil.rmtree(root / "new")
    before = _listing(root)
    with pytest.raises(BlobCorruptError):
        _restore_with_damage(store, backup.id, "new/deep/g7")
    assert _listing(root) == before == ["keep.txt"]
    assert preimage.restore(backup.id, store=store).ok
    assert (root / "new" / "deep" / "g7").read_text() == "deeper 7\n"
    assert len(_listing(root)) == 43


def test_a_removed_target_stays_absent_when_its_restore_fails(
    tmp_path: Path, store: Store
) -> None:
    """A restore after `rm -rf` whose last file is damaged leaves the target absent and
    nothing beside it."""
    root = tmp_path / "t"
    _tree(root)
    backup = preimage.capture([f"file://{root}"], store=store)
    shutil.rmtree(root)
    with pytest.raises(BlobCorruptError):
        _restore_with_damage(store, backup.id, "new/f19")
    assert not root.exists()
    assert [n for n in os.listdir(tmp_path) if n.startswith(".preimage-tmp-")] == []


def test_a_leftover_stage_is_swept_unless_a_running_restore_holds_it(
    tmp_path: Path, store: Store
) -> None:
    """What a killed restore left beside the target is removed by the next restore; a stage
    another restore holds (its flock) is left alone."""
    root = tmp_path / "t"
    _tree(root)
    backup = preimage.capture([f"file://{root}"], store=store)
    shutil.rmtree(root)
    tag = hashlib.sha256(b"t").hexdigest()[:16]
    dead = tmp_path / f".preimage-tmp-stage-{tag}-1-dead"
    held = tmp_path / f".preimage-tmp-stage-{tag}-2-held"
    for d in (dead, held):
        (d / "sub").mkdir(parents=True)
    fd = os.open(held, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert preimage.restore(backup.id, store=store).ok
        assert not dead.exists()
        assert held.exists()
    finally:
        os.close(fd)
    assert len(_listing(root)) == 43


def test_a_removed_tree_is_planned_at_once_as_the_comparison_would_plan_it(
        tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """With nothing at the target the plan decides every entry at once; the entry-by-entry
    comparison is its oracle: the same action for every entry (files, a symlink, hard
    links, a file over the per-file cap) and the same skipped entries with the same reason.
    Then the restore brings the tree back with the capped file reported, not written."""
    from preimage.connectors.files.apply import TreeRestorer
    from preimage.connectors.files.plan_table import PlanTable
    from preimage.store import quota as _quota

    root = tmp_path / "t"
    _tree(root)
    (root / "link").symlink_to("keep.txt")
    os.link(root / "new" / "f1", root / "new" / "f1.hard")
    _quota.save(store, _quota.Quota(max_file_size=1024))
    (root / "new" / "big.bin").write_bytes(b"x" * 4096)
    backup = preimage.capture([f"file://{root}"], store=store)
    shutil.rmtree(root)

    def planned() -> tuple[list[tuple[str, int]], list[tuple[str, str]], bool]:
        snap = load_snapshot_row(store, store.catalog.get(backup.id).snapshots[0])
        plan = TreeRestorer(snap, store.blobs, RestorePolicy(dry_run=True)).plan()
        try:
            acts = [(e.path, act) for e, act in plan.table.entries_with_act((0, 1, 2, 3))]
            return acts, sorted(plan.skipped), plan.staged_whole
        finally:
            plan.table.close()

    at_once = planned()
    monkeypatch.setattr(PlanTable, "live_empty", lambda self: False)
    compared = planned()
    monkeypatch.undo()
    assert at_once == compared
    assert [p for p, _reason in at_once[1]] == ["new/big.bin"] and at_once[2]
    result = preimage.restore(backup.id, store=store)
    assert [(i.key, i.outcome.value) for i in result.reports[0].items
            if i.key == "new/big.bin"] == [("new/big.bin", "skipped")]
    assert (root / "new" / "deep" / "g7").read_text() == "deeper 7\n"
    assert os.readlink(root / "link") == "keep.txt"
    assert (root / "new" / "f1").stat().st_ino == (root / "new" / "f1.hard").stat().st_ino
    assert not (root / "new" / "big.bin").exists()


class _CountingReads:
    """The store's blobs, counting how often each is read (every call goes to it)."""

    def __init__(self, real: BlobStore) -> None:
        self.real = real
        self.reads: dict[str, int] = {}

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def chunks(self, digest: str, *, backup_id: str | None = None,
               path: str | None = None) -> Iterator[bytes]:
        self.reads[digest] = self.reads.get(digest, 0) + 1
        yield from self.real.chunks(digest, backup_id=backup_id, path=path)


def _repeating_tree(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Files whose contents repeat (small ones, and large ones past what a restore keeps
    in memory), each with its own mode and mtime: what each must come back as."""
    big = os.urandom(300 << 10)
    want: dict[str, tuple[bytes, int, int]] = {}
    for i in range(12):
        for name, data in ((f"a/small{i}", b"same header\n"), (f"b/big{i % 3}", big),
                           (f"c/own{i}", f"own {i}\n".encode())):
            p = root / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
            mode, mtime = 0o600 | (i % 2) * 0o044, 1_600_000_000_000_000_000 + i * 10**9
            p.chmod(mode)
            os.utime(p, ns=(mtime, mtime))
            want[name] = (data, mode, mtime)
    return want


def test_a_repeated_blob_is_read_once_and_written_to_every_file_that_has_it(
        tmp_path: Path, store: Store) -> None:
    """Twelve files with the same small content come back from one read of their blob
    (kept in memory between them), each with its own mode and mtime; content too large to
    keep is read for each file; files with their own content, once each."""
    root = tmp_path / "t"
    want = _repeating_tree(root)
    backup = preimage.capture([f"file://{root}"], store=store)
    shutil.rmtree(root)
    snap = load_snapshot_row(store, store.catalog.get(backup.id).snapshots[0])
    counting = _CountingReads(store.blobs)
    FileConnector().restore(snap, cast(BlobStore, counting), policy=RestorePolicy(dry_run=False))
    for name, (data, mode, mtime) in want.items():
        st = (root / name).stat()
        assert ((root / name).read_bytes(), stat_mode(st.st_mode), st.st_mtime_ns) == (
            data, mode, mtime), name
    digest = {name: hashlib.sha256(data).hexdigest() for name, (data, _m, _t) in want.items()}
    assert counting.reads[digest["a/small0"]] == 1
    assert counting.reads[digest["b/big0"]] == 3   # b/big0..2 each hold it: past the keep limit
    assert all(counting.reads[digest[f"c/own{i}"]] == 1 for i in range(12))


def test_a_repeated_blob_damaged_on_its_first_read_writes_none_of_its_files(
        tmp_path: Path, store: Store) -> None:
    """The first read of a repeated blob fails its hash: the restore stops there, the
    removed tree stays absent, and the sound store then restores every copy."""
    root = tmp_path / "t"
    want = _repeating_tree(root)
    backup = preimage.capture([f"file://{root}"], store=store)
    shutil.rmtree(root)
    with pytest.raises(BlobCorruptError):
        _restore_with_damage(store, backup.id, "a/small0")
    assert not root.exists()
    assert preimage.restore(backup.id, store=store).ok
    assert all((root / name).read_bytes() == data for name, (data, _m, _t) in want.items())
