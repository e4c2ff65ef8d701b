"""The file connector on hostile trees: symlinks in the way, odd names, depth, links, holes."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

import preimage
from preimage import Store
from preimage.connectors.files import FileConnector
from preimage.restoration import ConflictMode, RestorePolicy
from preimage.store.snapshots import snapshot_bytes


def _tree(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    (root / "sub" / "b.txt").write_text("b\n")
    (root / "a.txt").chmod(0o600)
    return root


def _outside(tmp_path: Path) -> tuple[Path, dict[str, tuple[bytes, int]]]:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "a.txt").write_text("someone else's file\n")
    (out / "a.txt").chmod(0o644)
    (out / "sub").mkdir()
    return out, _state(out)


def _state(root: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(root))] = (p.read_bytes() if p.is_file() else b"", st.st_mode)
    return out


def test_merge_never_writes_into_a_target_replaced_by_a_symlink(
    tmp_path: Path, store: Store
) -> None:
    """--policy merge into a target that became a symlink leaves the symlink's files alone."""
    root = _tree(tmp_path / "t")
    backup = preimage.capture([f"file://{root}"], store=store)
    outside, before = _outside(tmp_path)
    shutil.rmtree(root)
    root.symlink_to(outside)
    result = preimage.restore(backup.id, store=store, conflict="merge")
    assert _state(outside) == before
    assert root.is_symlink()
    skipped = {i.key for r in result.reports for i in r.items if i.outcome.value == "skipped"}
    assert {"a.txt", "sub", "sub/b.txt"} <= skipped


def test_a_target_whose_parent_became_a_symlink_is_refused(tmp_path: Path, store: Store) -> None:
    """A symlink put in place of the target's parent stops the restore before any write."""
    parent = tmp_path / "proj"
    root = _tree(parent / "t")
    backup = preimage.capture([f"file://{root}"], store=store)
    outside, before = _outside(tmp_path)
    shutil.rmtree(parent)
    parent.symlink_to(outside)
    with pytest.raises(preimage.UnsafePathError, match="resolves to"):
        preimage.restore(backup.id, store=store)
    assert _state(outside) == before


def test_an_edited_snapshot_root_is_refused(tmp_path: Path, store: Store) -> None:
    """A snapshot whose root is not its target writes and deletes nothing anywhere."""
    root = _tree(tmp_path / "t")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("keep me\n")
    snap = FileConnector().capture(preimage.Target.parse(f"file://{root}"), store.blobs)
    forged = type(snap).model_validate({**snap.model_dump(), "root": str(victim)})
    with pytest.raises(preimage.UnsafePathError, match="not its target"):
        FileConnector().restore(forged, store.blobs, policy=RestorePolicy())
    assert (victim / "keep").read_text() == "keep me\n"


def test_a_document_naming_another_target_than_the_catalog_is_refused(
    tmp_path: Path, store: Store
) -> None:
    """The catalog's target is the authority: a stored document for elsewhere is refused."""
    root = _tree(tmp_path / "t")
    other = _tree(tmp_path / "other")
    backup = preimage.capture([f"file://{root}"], store=store)
    forged = FileConnector().capture(preimage.Target.parse(f"file://{other}"), store.blobs)
    digest = store.blobs.put_bytes(snapshot_bytes(forged))
    with store.catalog._tx() as db:  # type: ignore[attr-defined]
        db.execute("UPDATE snapshots SET digest=? WHERE backup_id=?", (digest, backup.id))
        db.execute("INSERT INTO refs VALUES (?,?,?)", (backup.id, 0, digest))
    (other / "a.txt").write_text("changed\n")
    with pytest.raises(preimage.StoreError, match="names"):
        preimage.restore(backup.id, store=store)
    assert (other / "a.txt").read_text() == "changed\n"


@pytest.mark.parametrize("others", [0, 600], ids=["inline", "chunked"])
def test_names_that_are_not_utf8_round_trip_as_bytes(tmp_path: Path, store: Store,
                                                     others: int) -> None:
    """A tree with a non-UTF-8 file name is captured and restored name-exact — also when
    its document is stored in chunks and read back by the next capture (the name's lone
    surrogate escape, which pydantic's JSON parser refuses)."""
    root = tmp_path / "t"
    root.mkdir()
    odd = os.fsencode(str(root)) + b"/caf\xe9-\xff.txt"
    with open(odd, "wb") as fh:
        fh.write(b"latin-1 name\n")
    os.mkdir(os.fsencode(str(root)) + b"/dir-\x80")
    for i in range(others):
        (root / f"other-{i:04}.txt").write_text(f"{i}\n")
    names_before = sorted(os.listdir(os.fsencode(str(root))))
    preimage.capture([f"file://{root}"], store=store)
    backup = preimage.capture([f"file://{root}"], store=store)   # reads the first one back
    shutil.rmtree(root)
    preimage.restore(backup.id, store=store)
    total, _ = preimage.score(backup.id, store=store)   # before reading moves any atime
    assert total.restorable.score == 1.0
    assert sorted(os.listdir(os.fsencode(str(root)))) == names_before
    with open(odd, "rb") as fh:
        assert fh.read() == b"latin-1 name\n"


def test_a_target_path_that_is_not_utf8_round_trips(tmp_path: Path, store: Store) -> None:
    """A target whose own path holds a non-UTF-8 byte is addressed with %XX and restored."""
    raw = os.fsencode(str(tmp_path)) + b"/t-\xfe"
    os.mkdir(raw)
    with open(raw + b"/f", "w") as fh:
        fh.write("x")
    backup = preimage.capture([f"file://{tmp_path}/t-%FE"], store=store)
    assert backup.snapshots[0].target.endswith("/t-%FE")
    shutil.rmtree(raw)
    preimage.restore(backup.id, store=store)
    with open(raw + b"/f") as fh:
        assert fh.read() == "x"


def _deep(root: Path, depth: int) -> bytes:
    """Build root/d…/d…/leaf deeper than PATH_MAX through directory fds; return its path."""
    name = "d" * 200
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        out = os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o640, dir_fd=fd)
        os.write(out, b"deep\n")
        os.close(out)
    finally:
        os.close(fd)
    return os.fsencode(str(root)) + (b"/" + name.encode()) * depth + b"/leaf"


def _read_deep(root: Path, depth: int) -> bytes:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            nxt = os.open("d" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        leaf = os.open("leaf", os.O_RDONLY, dir_fd=fd)
        data = os.read(leaf, 100)
        os.close(leaf)
        return data
    finally:
        os.close(fd)


def test_paths_longer_than_path_max_are_captured_and_restored(
    tmp_path: Path, store: Store
) -> None:
    """A tree whose deepest path exceeds PATH_MAX (4096 bytes) round-trips."""
    root = tmp_path / "t"
    root.mkdir()
    deep = _deep(root, 25)
    assert len(deep) > 4096
    backup = preimage.capture([f"file://{root}"], store=store)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    shutil.rmtree("d" * 200, dir_fd=fd)
    os.close(fd)
    preimage.restore(backup.id, store=store)
    assert _read_deep(root, 25) == b"deep\n"


def test_a_hardlink_group_is_relinked_when_its_first_path_was_deleted(
    tmp_path: Path, store: Store
) -> None:
    """Deleting the group's first path and restoring links every name to one inode again."""
    root = tmp_path / "t"
    root.mkdir()
    (root / "a").write_text("shared\n")
    os.link(root / "a", root / "b")
    os.link(root / "a", root / "c")
    backup = preimage.capture([f"file://{root}"], store=store)
    (root / "a").unlink()
    preimage.restore(backup.id, store=store)
    inodes = {(root / n).stat().st_ino for n in "abc"}
    assert len(inodes) == 1
    assert (root / "a").stat().st_nlink == 3


def test_sparse_files_come_back_sparse(tmp_path: Path, store: Store) -> None:
    """A file with holes is restored with the same holes, not fully allocated."""
    root = tmp_path / "t"
    root.mkdir()
    path = root / "disk.img"
    with open(path, "wb") as fh:
        fh.truncate(64 << 20)
        fh.seek(8 << 20)
        fh.write(b"x" * 4096)
    blocks = path.stat().st_blocks
    if blocks * 512 >= path.stat().st_size:
        pytest.skip("this filesystem does not keep holes")
    backup = preimage.capture([f"file://{root}"], store=store)
    path.unlink()
    preimage.restore(backup.id, store=store)
    assert path.stat().st_size == 64 << 20
    assert path.stat().st_blocks <= blocks + 8
    total, _ = preimage.score(backup.id, store=store)
    assert total.restorable.score == 1.0


@pytest.mark.parametrize("lines", [1000, 400_000])   # read whole, and streamed in chunks
def test_a_file_growing_during_capture_is_detected(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch, lines: int
) -> None:
    """A file appended to while it is read is recorded with the size read and named uncaptured."""
    from preimage.connectors.files import walk

    root = tmp_path / "t"
    root.mkdir()
    log = root / "app.log"
    log.write_bytes(b"line\n" * lines)
    real_read, real_os_read = walk._Counting.read, os.read

    def grow() -> None:
        with open(log, "ab") as fh:   # another process writes while each pass reads
            fh.write(b"more\n")

    def read_and_grow(self: walk._Counting, n: int = -1) -> bytes:
        data = real_read(self, n)
        if data and self.count == len(data):   # a pass's first read
            grow()
        return data

    def os_read_and_grow(fd: int, n: int) -> bytes:
        data = real_os_read(fd, n)
        if (data and os.lseek(fd, 0, os.SEEK_CUR) == len(data)
                and os.path.realpath(f"/proc/self/fd/{fd}") == str(log)):
            grow()
        return data

    monkeypatch.setattr(walk._Counting, "read", read_and_grow)
    monkeypatch.setattr(os, "read", os_read_and_grow)
    backup = preimage.capture([f"file://{root}"], store=store)
    snap = backup.snapshots[0]
    entry = next(e for e in snap.items if e.path == "app.log")
    assert [u.name for u in snap.uncaptured] == ["app.log"]
    assert "changed while it was read" in snap.uncaptured[0].reason
    assert entry.size == len(store.blobs.get_bytes(entry.digest or ""))


def test_a_file_over_the_size_cap_is_recorded_as_not_captured(tmp_path: Path, store: Store) -> None:
    """Over the per-file cap: not read, named in uncaptured, left alone by a restore."""
    from preimage.store import quota as _quota

    _quota.save(store, _quota.Quota(max_file_size=1000))
    root = tmp_path / "t"
    root.mkdir()
    (root / "big.iso").write_bytes(b"\0" * 5000)
    (root / "small.txt").write_text("s\n")
    backup = preimage.capture([f"file://{root}"], store=store)
    snap = backup.snapshots[0]
    assert [u.name for u in snap.uncaptured] == ["big.iso"]
    assert "cap" in snap.uncaptured[0].reason
    (root / "big.iso").write_bytes(b"changed since, and kept")
    (root / "small.txt").write_text("edited\n")
    preimage.restore(backup.id, store=store)
    assert (root / "big.iso").read_bytes() == b"changed since, and kept"
    assert (root / "small.txt").read_text() == "s\n"
    total, _ = preimage.score(backup.id, store=store)
    assert total.restorable.score < 1.0
    assert total.uncaptured == 1


def test_restore_temp_files_of_a_killed_restore_are_not_state(tmp_path: Path, store: Store) -> None:
    """Leftover .preimage-tmp-* files are neither captured nor kept by the next restore."""
    root = _tree(tmp_path / "t")
    (root / ".preimage-tmp-999-abcd").write_text("half a file")
    backup = preimage.capture([f"file://{root}"], store=store)
    assert all(".preimage-tmp-" not in e.path for e in backup.snapshots[0].items)
    preimage.restore(backup.id, store=store, conflict="merge")
    assert not (root / ".preimage-tmp-999-abcd").exists()


def test_merge_into_a_subdirectory_replaced_by_a_symlink_writes_nothing_through_it(
    tmp_path: Path, store: Store
) -> None:
    """A directory inside the target that became a symlink is kept by merge and not written through."""
    root = _tree(tmp_path / "t")
    backup = preimage.capture([f"file://{root}"], store=store)
    outside, before = _outside(tmp_path)
    shutil.rmtree(root / "sub")
    (root / "sub").symlink_to(outside)
    (root / "a.txt").unlink()
    preimage.restore(backup.id, store=store, conflict=ConflictMode.MERGE)
    assert _state(outside) == before
    assert (root / "a.txt").read_text() == "a\n"
    assert stat.S_IMODE((root / "a.txt").stat().st_mode) == 0o600
