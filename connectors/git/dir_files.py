"""The git directory's own files as undo items: hooks, ``info/``, ``ORIG_HEAD`` and the rest.

A snapshot keeps a listing of every file of the git directory (and of a linked worktree's
private one) for a whole restore.  Most of them an undo compares through other items:
HEAD, refs and ``packed-refs`` (refs), ``logs/`` (reflogs), the index file and its shared
parts (index entries), ``config`` (config keys).  Every other file there — hooks with
their mode, ``info/exclude``, ``info/attributes``, ``ORIG_HEAD``, ``FETCH_HEAD``,
``COMMIT_EDITMSG``, ``description``, ``shallow`` … — is compared as a ``git-file`` item,
so a call that edits one is reverted (by the file connector's restore of that one path),
never passed over in silence.

The files that say an operation is in progress (``MERGE_HEAD``, ``rebase-merge/`` …) are
items too, but an undo refuses to write them one by one: that state only a whole restore
puts back (:mod:`.item_writes`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from preimage.connectors.git.layout import load_listing
from preimage.connectors.git.state import OPERATION_MARKERS
from preimage.snapshot_schemas.files import FileEntry
from preimage.snapshot_schemas.git import GitSnapshot

KIND = "git-file"
#: Top-level names of a git directory other undo items stand for.
COVERED = frozenset({"HEAD", "index", "config", "packed-refs", "refs", "logs"})
#: Top-level names whose files are an operation's state (refused one by one).
OPERATION_STATE = frozenset(marker for marker, _ in OPERATION_MARKERS)


class GitDirFile(FileEntry):
    """A file of the git directory, keyed ``kind=git-file|path=…`` (apart from the work
    tree's) and named as a user finds it: ``.git/hooks/pre-commit``."""

    def label(self) -> str:
        """The entry's path under ``.git``."""
        return f".git/{self.path}"


def _item(entry: FileEntry, path: str) -> GitDirFile:
    return GitDirFile.model_validate({**entry.model_dump(), "kind": KIND, "path": path})


def covered(rel: str) -> bool:
    """Whether another undo item stands for the git-directory path ``rel``."""
    top = rel.split("/", 1)[0]
    # a split index keeps its entries in sharedindex.<hash> beside the index file
    return rel == "." or top in COVERED or top.startswith("sharedindex.")


def operation_state(rel: str) -> bool:
    """Whether ``rel`` (relative to the git directory) is part of an operation's state."""
    return rel.split("/", 1)[0] in OPERATION_STATE


def private_prefix(snap: GitSnapshot) -> str | None:
    """The key prefix of a linked worktree's private git directory (``worktrees/NAME``);
    ``None`` for a repository whose git directory is its common one."""
    if snap.worktree_git_files is None:
        return None
    return os.path.relpath(snap.git_dir, snap.common_dir).replace(os.sep, "/")


def git_file_items(snap: GitSnapshot, blobs: Any) -> Iterator[GitDirFile]:
    """The git directory's files no other item stands for, as ``git-file`` items keyed by
    their path under the common git directory."""
    for entry in load_listing(blobs, snap.git_files):
        if not covered(entry.path):
            yield _item(entry, entry.path)
    prefix = private_prefix(snap)
    if prefix is not None and snap.worktree_git_files is not None:
        for entry in load_listing(blobs, snap.worktree_git_files):
            if not covered(entry.path):
                yield _item(entry, f"{prefix}/{entry.path}")


def split_private(path: str, prefix: str | None) -> str | None:
    """``path`` relative to the private git directory when it lies there, else ``None``."""
    if prefix is not None and path.startswith(prefix + "/"):
        return path[len(prefix) + 1:]
    return None
