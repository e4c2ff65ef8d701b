"""The digest cache: a file whose inode and stat are unchanged since any capture is not
read again, even under a new target — and one whose bytes may have changed always is."""

from __future__ import annotations

import ctypes
import os
import shutil
import struct
from pathlib import Path

import preimage
from preimage.store.store import Store

IN_OPEN, IN_ISDIR, IN_NONBLOCK = 0x20, 0x40000000, 0o4000


class _Opens:
    """The files the kernel saw opened in some directories (inotify ``IN_OPEN``)."""

    def __init__(self, dirs: list[Path]) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(IN_NONBLOCK)
        assert self.fd >= 0
        self.dirs = {self.libc.inotify_add_watch(self.fd, os.fsencode(d), IN_OPEN): d
                     for d in dirs}

    def take(self) -> set[Path]:
        seen: set[Path] = set()
        try:
            data = os.read(self.fd, 1 << 20)
        except BlockingIOError:
            return seen
        finally:
            os.close(self.fd)
        at = 0
        while at < len(data):
            wd, mask, _cookie, size = struct.unpack_from("iIII", data, at)
            name = data[at + 16:at + 16 + size].rstrip(b"\0")
            at += 16 + size
            if name and not mask & IN_ISDIR:
                seen.add(self.dirs[wd] / os.fsdecode(name))
        return seen


def _tree(root: Path) -> None:
    for d in ("a", "a/deep", "b"):
        (root / d).mkdir(parents=True)
        for i in range(30):
            (root / d / f"f{i}").write_bytes(f"{d}/{i}\n".encode() * (100 + i))


def test_unchanged_files_are_not_read_again_under_a_new_target(tmp_path: Path,
                                                                 store: Store) -> None:
    """`a/` is captured, then its parent: only the files outside `a/` and the ones changed
    since (new bytes with the old size and mtime put back: only the ctime says so) are
    read; the parent's backup restores every file byte for byte."""
    root = tmp_path / "t"
    _tree(root)
    preimage.capture([f"file://{root / 'a'}"], store=store)
    changed = root / "a" / "deep" / "f3"
    st = changed.stat()
    changed.write_bytes(changed.read_bytes().replace(b"a/", b"A/"))
    os.utime(changed, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert changed.stat().st_size == st.st_size and changed.stat().st_mtime_ns == st.st_mtime_ns
    expected = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    opens = _Opens([root / "a", root / "a" / "deep", root / "b"])
    backup = preimage.capture([f"file://{root}"], store=store)
    assert opens.take() == {changed, *(root / "b").iterdir()}
    shutil.rmtree(root)
    preimage.restore(backup.id, store=store)
    assert {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()} \
        == expected
