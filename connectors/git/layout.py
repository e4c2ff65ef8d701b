"""Which files of a repository each part of a git snapshot covers.

A repository is walked by the file connector's :class:`Walker` in three
trees, each with its own exclusion predicate (used again, unchanged, when the
tree is restored, so a restore never touches what a capture left out):

* the working tree — ``.git`` and nested repositories (submodules, clones
  inside the tree: repositories of their own, captured by their own targets)
  are left out;
* the git directory — ``objects/`` (its own tree), ``worktrees/`` (private
  state of linked worktrees), ``modules/`` (submodules' git directories),
  ``lfs/objects`` (a download cache) and ``*.lock`` files (a git command's
  in-flight writes) are left out;
* the object directory — temporary packs and lock files left out.

Listings of the git directory and of the objects are kept in blobs as JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from preimage.connectors.files.walk import Exclude
from preimage.interface.blobs import BlobStore
from preimage.snapshot_schemas.files import FileEntry

GIT_DIR_LEFT_OUT = ("objects", "worktrees", "modules", "lfs/objects", "lfs/tmp")


def worktree_exclude(root: Path, nested: list[str] | None = None) -> Exclude:
    """Leave out ``.git`` and every directory holding a repository of its own."""

    def exclude(rel: str, st: os.stat_result) -> bool:
        if rel == ".git":
            return True
        if stat.S_ISDIR(st.st_mode) and os.path.lexists(root / rel / ".git"):
            if nested is not None:
                nested.append(rel)
            return True
        return False

    return exclude


def git_dir_exclude(rel: str, st: os.stat_result) -> bool:
    """Leave out the object store, other worktrees' and submodules' state, and locks."""
    return rel in GIT_DIR_LEFT_OUT or rel.endswith(".lock")


def private_git_dir_exclude(rel: str, st: os.stat_result) -> bool:
    """A linked worktree's own git directory: everything but lock files."""
    return rel.endswith(".lock")


def objects_exclude(rel: str, st: os.stat_result) -> bool:
    """Object files: leave out a running command's temporary files and locks."""
    name = rel.rsplit("/", 1)[-1]
    return name.endswith(".lock") or name.startswith(("tmp_", "incoming-"))


def keep_access_times(root: Path, entries: Iterable[FileEntry]) -> None:
    """Put back the access times a walk recorded, where a git command has moved them.

    Under ``relatime`` the first read after a change moves a file's or a
    directory's atime, and git reads both (``git status`` lists every
    directory).  A capture must leave no trace, so an entry whose atime moved
    while its mtime did not gets the recorded atime back (which sets its
    ctime: that is server-assigned and not part of the state).
    """
    for e in entries:
        path = root if e.path == "." else root / e.path
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_atime_ns != e.atime_ns and st.st_mtime_ns == e.mtime_ns:
            with contextlib.suppress(OSError):
                os.utime(path, ns=(e.atime_ns, e.mtime_ns), follow_symlinks=False)


def store_listing(blobs: BlobStore, entries: Iterable[FileEntry]) -> str:
    """Store a listing as compact JSON (identical listings share one blob).

    Inode and ctime are zeroed: they are server-assigned, a restore never
    uses them, and ctime moves on every capture that puts an atime back —
    with them an unchanged tree would cost a new listing each time.
    """
    rows = [e.model_copy(update={"inode": 0, "ctime_ns": 0}).model_dump(mode="json") for e in entries]
    return blobs.put_bytes(json.dumps(rows, separators=(",", ":")).encode())


def load_listing(blobs: BlobStore, digest: str, *, backup_path: str = "") -> list[FileEntry]:
    """A listing stored by :func:`store_listing` (its blob verified)."""
    raw = blobs.get_bytes(digest, path=backup_path or None)
    return [FileEntry.model_validate(row) for row in json.loads(raw)]
