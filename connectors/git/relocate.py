"""A repository re-addressed to another path (``restore --to git:///other``, ``score
--against``), as ``cp -a`` of a whole clone would place it.

A repository keeps its git directory inside the working tree (``.git``), and every
path in the snapshot is relative to the working tree or to that directory, so only
the root moves: the target, ``root``, ``git_dir`` and ``common_dir``.  Refused, with
the reason: a linked worktree or a submodule (its ``.git`` file points at a git
directory elsewhere, which a copy would share or lose), a destination inside the
source or holding it, and another kind of target.
"""

from __future__ import annotations

import os
from pathlib import Path

from preimage.connectors.files.relocate import nested
from preimage.connectors.git.address import git_uri
from preimage.interface.errors import InvalidTargetError, UsageError
from preimage.interface.target import Target
from preimage.restoration import IdentityMapping, Relocation
from preimage.snapshot_schemas.git import GitSnapshot


def relocate_repository(snapshot: GitSnapshot, destination: Target) -> Relocation:
    """``snapshot`` as a repository at ``destination`` (see the module docstring)."""
    if destination.scheme != "git":
        raise UsageError(f"{destination.redacted}: a repository restores into a git:// target")
    if destination.host not in (None, "", "localhost") or not destination.path.startswith("/"):
        raise InvalidTargetError(destination.redacted, "write git:///abs/path")
    root = Path(snapshot.root)
    own = str(root / ".git")
    if snapshot.gitfile is not None or snapshot.git_dir != own or snapshot.common_dir != own:
        raise UsageError(
            f"{snapshot.target} is a linked worktree or a submodule (its git directory is "
            f"{snapshot.common_dir}): a copy elsewhere would share or lose it, so it is not "
            "restored elsewhere; clone the repository instead. Nothing was written")
    dest = Path(os.path.normpath(destination.path))
    if nested(dest, root):
        raise UsageError(
            f"--to {destination.redacted} overlaps the backup's own repository {snapshot.target}; "
            "pick a path outside it. Nothing was written")
    moved = snapshot.model_copy(update={
        "target": git_uri(str(dest)), "root": str(dest), "git_dir": str(dest / ".git"),
        "common_dir": str(dest / ".git"),
    })
    return Relocation(moved, (IdentityMapping(what="root", old=str(root), new=str(dest)),))
