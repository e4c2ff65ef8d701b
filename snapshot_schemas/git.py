"""Snapshot schema of the ``git`` connector (v1).

A git repository's working state in two layers:

* what a user sees, as scored items — the working tree (tracked, untracked
  and ignored files) as :class:`FileEntry` items of the file connector,
  ``.git`` and nested repositories left out; HEAD (symbolic or detached) and the
  current branch's upstream, every ref with its target and upstream, the
  index (one entry per path and stage; kept in a blob and expanded for
  scoring), ``git status`` per path (staged, unstaged, untracked, ignored),
  stashes, reflogs, repository-local config and any operation in progress
  (merge, rebase, cherry-pick, revert, bisect, am);
* what a restore writes back, not scored — listings of the git directory's
  own files (HEAD, refs, packed-refs, reflogs, the index file, config, hooks,
  ``rebase-merge/`` …) and of its object files, both stored through the file
  connector, so every object HEAD, a ref, a reflog, a stash or the index
  needs stays in the backup store even after ``git gc --prune=now``.

Everything here is ``content`` except the working tree's file metadata (mode,
owner, times, xattrs: ``metadata``) and inode/ctime (``server``), as in the
file connector's schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field

from preimage.snapshot_schemas._base import Item, Snapshot, content, key, register_snapshot_type
from preimage.snapshot_schemas.files import FileEntry

if TYPE_CHECKING:
    from preimage.interface.blobs import BlobStore


class GitHead(Item):
    """HEAD: the branch it names, or the commit it holds when detached."""

    kind: Literal["git-head"] = key("git-head")
    symref: str | None = content(None, description="refs/heads/… ; None when detached")
    oid: str | None = content(None, description="the commit; None on an unborn branch")
    upstream: str | None = content(None, description="the current branch's upstream ref")


class GitRef(Item):
    """One ref (branch, tag, remote-tracking ref, stash, note, …) and its target."""

    kind: Literal["git-ref"] = key("git-ref")
    name: str = key(description="full ref name, e.g. refs/heads/main")
    oid: str = content()
    type: str = content(description="type of the object it points at: commit, tag, tree, blob")
    symref: str | None = content(None, description="target of a symbolic ref")
    upstream: str | None = content(None, description="configured upstream of a local branch")


class GitIndexEntry(Item):
    """One index entry: what ``git ls-files --stage`` shows, plus its flags."""

    kind: Literal["git-index"] = key("git-index")
    path: str = key()
    stage: int = key(0, description="0, or 1-3 for the sides of a conflict")
    mode: str = content(description="100644, 100755, 120000, 160000")
    oid: str = content(description="the staged blob (or commit for a gitlink)")
    tag: str = content("H", description="`git ls-files -v` tag: S skip-worktree, h assume-unchanged")


class GitIndexListing(Item):
    """Stand-in for the index entries when the listing is not expanded from blobs."""

    kind: Literal["git-index-listing"] = key("git-index-listing")
    digest: str = content(
        description="blob holding the JSON list of index entries", derived=True
    )
    entries: int = content(derived=True)


class GitStatusEntry(Item):
    """One path of ``git status --porcelain --untracked-files=all --ignored=matching``."""

    kind: Literal["git-status"] = key("git-status")
    path: str = key()
    code: str = content(description="XY: staged and unstaged state, ?? untracked, !! ignored")
    orig_path: str | None = content(None, description="source of a staged rename or copy")


class GitStash(Item):
    """One stash entry, by position (``stash@{n}``)."""

    kind: Literal["git-stash"] = key("git-stash")
    position: int = key()
    oid: str = content()
    message: str = content()


class GitReflog(Item):
    """The reflog of one ref, as raw lines (old, new, who, when, message)."""

    kind: Literal["git-reflog"] = key("git-reflog")
    ref: str = key()
    entries: list[str] = content()


class GitConfigEntry(Item):
    """One key of the repository's own config file, with all its values."""

    kind: Literal["git-config"] = key("git-config")
    name: str = key()
    values: list[str] = content()


class GitOperation(Item):
    """Operations in progress: merge, rebase-merge, rebase-apply, am, cherry-pick, revert, bisect."""

    kind: Literal["git-operation"] = key("git-operation")
    operations: list[str] = content(unordered=True)


GitItem = Annotated[
    GitHead
    | GitRef
    | GitIndexEntry
    | GitIndexListing
    | GitStatusEntry
    | GitStash
    | GitReflog
    | GitConfigEntry
    | GitOperation,
    Field(discriminator="kind"),
]


@register_snapshot_type
class GitSnapshot(Snapshot):
    """A repository's working state: refs, index, stashes, working tree and git directory."""

    schema_name: ClassVar[str] = "git"
    schema_version: int = 1
    connector: str = "git"
    root: str = Field(description="absolute path of the working tree")
    present: bool = Field(
        True, description="False when nothing existed at the path (restoring removes what is there)"
    )
    git_dir: str = Field(description="the worktree's git directory (HEAD, index, logs/HEAD)")
    common_dir: str = Field(description="the repository's shared git directory (refs, objects)")
    gitfile: str | None = Field(
        None, description="content of .git when it is a file (submodule, linked worktree)"
    )
    git_files: str = Field(
        description="blob: JSON list of FileEntry of common_dir, objects/ worktrees/ modules/ and "
        "lock files left out"
    )
    worktree_git_files: str | None = Field(
        None, description="blob: JSON list of FileEntry of git_dir when it is not common_dir"
    )
    object_files: str = Field(description="blob: JSON list of FileEntry of common_dir/objects")
    index_listing: str = Field(description="blob: JSON list of GitIndexEntry")
    index_entries: int = 0
    nested_repositories: list[str] = Field(
        default_factory=list,
        description="working-tree paths holding a repository of their own (submodules): not captured",
    )
    items: list[GitItem | FileEntry] = Field(
        default_factory=list,
        description="the working tree as FileEntry items (.git and nested repositories left out), "
        "then the git items",
    )

    @property
    def worktree(self) -> list[FileEntry]:
        """The working tree's entries."""
        return [i for i in self.items if isinstance(i, FileEntry)]

    def scoring_items(self, blobs: Any | None = None) -> Iterator[Item]:
        """The working tree, the git items and every index entry.

        The index entries are read from ``blobs``; when it is not given (or
        lacks the listing) one :class:`GitIndexListing` item stands for them.
        """
        yield from self.items
        listing = None
        if blobs is not None and blobs.exists(self.index_listing):
            listing = load_index_listing(blobs, self.index_listing)
        if listing is None:
            # without the blob the listing's digest stands for it: equal digests, equal index
            yield GitIndexListing(digest=self.index_listing, entries=self.index_entries)
        else:
            yield from listing


def load_index_listing(blobs: BlobStore, digest: str) -> list[GitIndexEntry]:
    """The index entries stored under ``digest`` (verified on read)."""
    return [GitIndexEntry.model_validate(row) for row in json.loads(blobs.get_bytes(digest))]
