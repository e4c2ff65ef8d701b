"""``GitConnector``: capture, restore and diff of ``git://`` targets."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import ClassVar

from preimage.connectors.files.walk import Walker
from preimage.connectors.git import state
from preimage.connectors.git.apply import GitRestorer
from preimage.connectors.git.layout import (
    git_dir_exclude,
    keep_access_times,
    objects_exclude,
    private_git_dir_exclude,
    store_listing,
    worktree_exclude,
)
from preimage.connectors.git.repo import Repository, locate
from preimage.connectors.git.revert import GitReverter
from preimage.interface.blobs import BlobStore
from preimage.interface.connector import Capabilities, ConnectorBase, Granularity
from preimage.interface.errors import InvalidTargetError
from preimage.interface.target import Target
from preimage.restoration import Relocation, RestorePolicy, RestoreReport
from preimage.snapshot_schemas import Snapshot
from preimage.snapshot_schemas.files import FileEntry
from preimage.snapshot_schemas.git import GitItem, GitSnapshot


class GitConnector(ConnectorBase):
    """A repository's working state: HEAD, refs, index, stashes, reflogs, working tree.

    Targets are ``git:///abs/path/to/worktree`` — the top level of a non-bare
    repository (a linked worktree or a submodule's checkout is fine).  A
    capture changes nothing in the repository: no ref is created, the index
    is not refreshed.  Objects are kept by copying the object files into the
    backup store (unchanged files are recognised by the store's stat cache and
    cost nothing on the next capture), so the commits a restore needs survive
    ``git gc --prune=now``, an expired reflog or a dropped stash.
    """

    scheme: ClassVar[str] = "git"
    snapshot_type: ClassVar[type[Snapshot]] = GitSnapshot
    # No merge: the index and the stash list are single files in the git directory, so a
    # merge could not put back one staged file or one dropped stash and keep the rest.
    capabilities: ClassVar[Capabilities] = Capabilities(
        policies=frozenset({"overwrite", "refuse"}), relocates=True, undo=Granularity(
            "work-tree file by path; ref, HEAD, index entry by path and stage, reflog, config "
            "key, other git-directory file by path (hooks, info/exclude, ORIG_HEAD …)",
            "file metadata field", "text files line by line; reflogs line by line"))
    reverter: ClassVar[GitReverter] = GitReverter()

    def capture(self, target: Target, blobs: BlobStore) -> GitSnapshot:
        """Read the repository at ``target`` into a :class:`GitSnapshot`.

        Raises :class:`InvalidTargetError` for anything but the top level of
        a non-bare repository and :class:`TerminalConnectorError` when git is
        missing or the repository cannot be read.
        """
        if target.host not in (None, "", "localhost"):
            raise InvalidTargetError(
                target.redacted, "git:// targets are local; write git:///abs/path/to/repo"
            )
        if target.path.startswith("/") and not os.path.lexists(target.path):
            return self._absent(target, blobs)
        repo = locate(target.path, target.redacted)
        notes: list[str] = []
        # The trees are walked before any git command runs: `git status` reads
        # directories and files, which moves their access times (relatime);
        # the recorded times are put back afterwards (see keep_access_times).
        nested: list[str] = []
        trees = [
            (repo.root, worktree_exclude(repo.root, nested)),
            (repo.common_dir, git_dir_exclude),
            (repo.common_dir / "objects", objects_exclude),
        ]
        if repo.linked_worktree:
            trees.append((repo.git_dir, private_git_dir_exclude))
        walked = [(root, list(Walker(root, blobs, exclude=ex).entries())) for root, ex in trees]
        try:
            gitfile = self._gitfile(repo)
            refs = state.read_refs(repo)
            index = state.read_index(repo)
            items: list[GitItem | FileEntry] = [*walked[0][1], state.read_head(repo, refs), *refs]
            items += state.read_status(repo)
            items += state.read_stashes(repo, refs)
            items += state.read_reflogs(repo)
            items += state.read_config(repo)
            items.append(state.read_operations(repo))
        finally:
            for root, entries in walked:
                keep_access_times(root, entries)
        git_files = store_listing(blobs, walked[1][1])
        objects = store_listing(blobs, walked[2][1])
        private = store_listing(blobs, walked[3][1]) if repo.linked_worktree else None
        index_digest = blobs.put_bytes(
            json.dumps([e.model_dump(mode="json") for e in index], separators=(",", ":")).encode()
        )
        notes += self._notes(repo, nested, items)
        return GitSnapshot(
            target=target.redacted,
            root=str(repo.root),
            git_dir=str(repo.git_dir),
            common_dir=str(repo.common_dir),
            gitfile=gitfile,
            git_files=git_files,
            worktree_git_files=private,
            object_files=objects,
            index_listing=index_digest,
            index_entries=len(index),
            nested_repositories=sorted(nested),
            items=items,
            notes=notes,
        )

    def relocate(
        self, snapshot: Snapshot, destination: Target, *, other: Snapshot | None = None,
        blobs: BlobStore | None = None,
    ) -> Relocation:
        """The repository at another path (:mod:`.relocate`)."""
        from preimage.connectors.git.relocate import relocate_repository

        assert isinstance(snapshot, GitSnapshot)
        return relocate_repository(snapshot, destination)

    @staticmethod
    def _absent(target: Target, blobs: BlobStore) -> GitSnapshot:
        # Like a missing file:// target: the state "nothing here" can be restored
        # (it is what undoing the restore of a deleted repository needs).
        root = os.path.normpath(target.path)
        empty = store_listing(blobs, [])
        return GitSnapshot(
            target=target.redacted,
            root=root,
            present=False,
            git_dir=os.path.join(root, ".git"),
            common_dir=os.path.join(root, ".git"),
            git_files=empty,
            object_files=empty,
            index_listing=blobs.put_bytes(b"[]"),
            notes=["nothing existed at this path at capture time"],
        )

    @staticmethod
    def _gitfile(repo: Repository) -> str | None:
        dotgit = repo.root / ".git"
        if dotgit.is_file() and not dotgit.is_symlink():
            return dotgit.read_text(errors="surrogateescape")
        return None

    @staticmethod
    def _notes(repo: Repository, nested: list[str], items: list[GitItem | FileEntry]) -> list[str]:
        notes = []
        for rel in sorted(nested):
            notes.append(
                f"{rel} is a repository of its own (a submodule or a nested clone); it is not "
                f"part of this capture — capture it with git://{repo.root / rel}"
            )
        alternates = repo.common_dir / "objects" / "info" / "alternates"
        if alternates.is_file():
            notes.append(
                "objects borrowed through objects/info/alternates "
                f"({alternates.read_text(errors='replace').strip()}) are not copied; "
                "keep that repository too"
            )
        if (repo.git_dir / "index.lock").exists():
            notes.append(
                "index.lock existed: a git command was writing the index while it was captured"
            )
        if Path(repo.common_dir / "shallow").is_file():
            notes.append("shallow clone: history beyond the shallow boundary was never local")
        operations = [i for i in items if i.kind == "git-operation"]
        if operations and operations[0].operations:  # type: ignore[union-attr]
            ops = ", ".join(operations[0].operations)  # type: ignore[union-attr]
            notes.append(f"captured in the middle of: {ops} (its state files are captured too)")
        return notes

    def restore(self, snapshot: Snapshot, blobs: BlobStore, *, policy: RestorePolicy) -> RestoreReport:
        """Bring the repository back to ``snapshot`` (order in :mod:`.apply`)."""
        assert isinstance(snapshot, GitSnapshot)
        if policy.exact:  # an undo: exactly these items (:mod:`.item_writes`)
            from preimage.connectors.git.item_writes import GitItemWriter

            return GitItemWriter(snapshot, blobs, policy).run()
        return GitRestorer(snapshot, blobs, policy).run()

