"""Cloned blobs: on XFS with reflinks a large file is captured and restored by sharing its
extents (FICLONE), and a store on another filesystem falls back to compressed copies.

The XFS filesystem is an image the test makes (mkfs.xfs, from fixtures/setup.d) and
loop-mounts; free space is the user-visible outcome measured.
"""

from __future__ import annotations

import gc
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import preimage
from preimage import Store
from preimage.store.check import check
from preimage.store.prune import forget, prune

BIG = 48 << 20


@pytest.fixture
def xfs(tmp_path: Path) -> Iterator[Path]:
    """A 512 MiB XFS filesystem with reflinks, loop-mounted for the test."""
    if shutil.which("mkfs.xfs") is None:
        pytest.fail("mkfs.xfs is missing — run fixtures/setup.sh (it installs xfsprogs)")
    image, mnt = tmp_path / "xfs.img", tmp_path / "xfs"
    with open(image, "wb") as fh:
        fh.truncate(512 << 20)
    subprocess.run(["mkfs.xfs", "-q", "-m", "reflink=1", str(image)], check=True)
    mnt.mkdir()
    mounted = subprocess.run(["mount", "-o", "loop", str(image), str(mnt)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.fail(f"cannot loop-mount an XFS image (needs root): {mounted.stderr.strip()}")
    try:
        yield mnt
    finally:
        # A file the test left open keeps the mount busy: collect what holds it, and if it
        # is still busy detach it lazily, so no mount outlives the test (a busy mount left
        # in pytest's temporary folder breaks every later run's clean-up).
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            gc.collect()
            if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", str(mnt)], check=False)


def _used(path: Path) -> int:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    with open(root / "sub" / "big.bin", "wb") as fh:
        for _ in range(BIG >> 20):
            fh.write(os.urandom(1 << 20))
    (root / "small.txt").write_text("small file\n")
    os.sync()
    return root


def test_a_large_file_is_cloned_in_and_out(xfs: Path) -> None:
    """Capture and restore of a 48 MiB file each take a fraction of its size on disk; the
    backup keeps the captured bytes after the source is rewritten in place."""
    root = _tree(xfs / "work")
    original = _sha(root / "sub" / "big.bin")
    with Store(xfs / "home") as store:
        used = _used(xfs)
        backup = preimage.capture([f"file://{root}"], store=store)
        os.sync()
        assert _used(xfs) - used < BIG // 8   # the extents are shared, not copied
        raw = list((xfs / "home" / "blobs").glob("*/*.raw"))
        assert [p.name[:64] for p in raw] == [original]
        with open(root / "sub" / "big.bin", "r+b") as fh:   # rewritten in place
            fh.seek(BIG // 2)
            fh.write(b"x" * 4096)
        assert _sha(root / "sub" / "big.bin") != original
        shutil.rmtree(root)
        os.sync()
        used = _used(xfs)
        preimage.restore(backup.id, store=store)
        os.sync()
        assert _sha(root / "sub" / "big.bin") == original
        assert (root / "small.txt").read_text() == "small file\n"
        assert _used(xfs) - used < BIG // 8   # cloned back
        total, _ = preimage.score(backup.id, store=store)
        assert total.restorable.score == 1.0
        assert check(store, read_data=True).ok
        forget(store, [b.id for b in store.catalog.list_backups(None)])
        prune(store)
        assert not list((xfs / "home" / "blobs").glob("*/*.raw"))


def test_a_damaged_clone_stops_the_restore_and_is_rewritten(xfs: Path) -> None:
    """A cloned blob changed on disk is named by check, stops a restore before it writes,
    and the next capture of the same bytes replaces it."""
    root = _tree(xfs / "work")
    with Store(xfs / "home") as store:
        backup = preimage.capture([f"file://{root}"], store=store)
        raw = next((xfs / "home" / "blobs").glob("*/*.raw"))
        raw.chmod(0o600)
        with open(raw, "r+b") as fh:
            fh.write(b"damage")
        report = check(store, read_data=True)
        assert any(p.subject == raw.name[:64] for p in report.problems)
        (root / "small.txt").write_text("changed after the capture\n")
        with pytest.raises(preimage.PreimageError):
            preimage.restore(backup.id, store=store)
        assert (root / "small.txt").read_text() == "changed after the capture\n"
        os.utime(root / "sub" / "big.bin")   # so the walk reads it again
        again = preimage.capture([f"file://{root}"], store=store)
        shutil.rmtree(root)
        preimage.restore(again.id, store=store)
        assert _sha(root / "sub" / "big.bin") == raw.name[:64]


def test_a_store_on_another_filesystem_copies(xfs: Path, tmp_path: Path) -> None:
    """A tree on XFS and a store elsewhere: no clone is possible, blobs are compressed."""
    root = _tree(xfs / "work")
    original = _sha(root / "sub" / "big.bin")
    home = tmp_path / "home"
    with Store(home) as store:
        backup = preimage.capture([f"file://{root}"], store=store)
        assert not list((home / "blobs").glob("*/*.raw"))
        shutil.rmtree(root)
        preimage.restore(backup.id, store=store)
    assert _sha(root / "sub" / "big.bin") == original
