"""Undoing one call on a repository: by file, ref, index entry, reflog and config key.

The items an undo compares are the working tree's files (as the file connector's undo
compares them: by path, metadata field by field, text files line by line), HEAD, every ref,
every index entry (by path and stage), every reflog, every key of the repository's own
config and every other file of the git directory — hooks, ``info/exclude``, ``ORIG_HEAD``
… (:mod:`.dir_files`).  Left out, because they follow from the others: ``git status``
(from the tree, the index and HEAD) and the stash entries (from ``refs/stash`` and its
reflog, which stands in for them — so a dropped stash comes back as its reflog line and
ref).

Derived (*soft*) fields never conflict and live stands when both sides moved them: a
file's times, an upstream (the branch's config keys hold it), the commit of a HEAD that
names a branch (the branch's ref holds it) and ``refs/stash``'s (the newest line of the
stash's reflog).  A reflog merges line by line: the lines the call added are taken out,
the lines it removed go back in their place, and lines written since stay, after them
(the stash's lines chained again, as ``git stash drop`` leaves them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from preimage.connectors.files.revert import FilesReverter
from preimage.connectors.git import dir_files
from preimage.connectors.git.layout import load_listing, store_listing
from preimage.restoration.merge import Conflict
from preimage.restoration.revert import Reverter, splice
from preimage.snapshot_schemas import Item, Snapshot
from preimage.snapshot_schemas.files import FileEntry
from preimage.snapshot_schemas.git import (
    GitHead,
    GitIndexEntry,
    GitRef,
    GitReflog,
    GitSnapshot,
    load_index_listing,
)

#: Kinds an undo never compares: they follow from the other items.
DERIVED_KINDS = frozenset({"git-status", "git-stash"})
STASH_LOG = "logs/refs/stash"


def stash_reflog(snap: GitSnapshot, blobs: Any) -> GitReflog | None:
    """``refs/stash``'s reflog (the stash list), read from the git directory's listing."""
    entry = next((e for e in load_listing(blobs, snap.git_files) if e.path == STASH_LOG), None)
    if entry is None or entry.digest is None:
        return None
    lines = blobs.get_bytes(entry.digest).decode("utf-8", errors="replace").splitlines()
    return GitReflog(ref="refs/stash", entries=lines)


def merge_reflog(base: list[str], theirs: list[str], live: list[str]) -> list[str]:
    """The reflog before the call with the lines written since after it: ``base``'s lines
    still there or taken out by the call, in their order, then ``live``'s lines that
    neither ``base`` nor the call wrote (a reflog is only appended to, so they are newer;
    its last line stays the ref's value)."""
    before, after, kept = set(base), set(theirs), set(live)
    added = after - before
    return ([line for line in base if line in kept or line not in after]
            + [line for line in live if line not in before and line not in added])


def chained(lines: list[str]) -> list[str]:
    """A stash reflog whose every line starts from the commit the line before it ends at:
    git finds ``stash@{n}`` by the next line's old value, and ``git stash drop`` rewrites
    the chain the same way (``git reflog delete --rewrite``)."""
    out: list[str] = []
    for line in lines:
        parts = line.split(" ", 2)
        if out and len(parts) == 3:
            line = " ".join([out[-1].split(" ", 2)[1], *parts[1:]])
        out.append(line)
    return out


class GitReverter(Reverter):
    """Files as the file connector reverts them; git items whole, fields as declared."""

    files = FilesReverter()

    def items(self, snap: Snapshot, blobs: Any) -> Iterator[Item]:
        assert isinstance(snap, GitSnapshot)
        for item in snap.scoring_items(blobs):
            if item.kind not in DERIVED_KINDS:
                yield item
        if snap.present:
            stash = stash_reflog(snap, blobs)
            if stash is not None:
                yield stash
            yield from dir_files.git_file_items(snap, blobs)

    def soft(self, item: Item, path: str) -> bool:
        if isinstance(item, FileEntry):
            return self.files.soft(item, path)
        if isinstance(item, GitRef):  # refs/stash is the newest line of its reflog
            return path == "upstream" or (path == "oid" and item.name == "refs/stash")
        if isinstance(item, GitHead):
            return path == "upstream" or (path == "oid" and item.symref is not None)
        return False

    def merge_item(self, base: Item, theirs: Item, live: Item, blobs: Any) -> tuple[
        Item, list[Conflict], list[str]
    ]:
        if isinstance(base, FileEntry):
            return self.files.merge_item(base, theirs, live, blobs)
        if isinstance(base, GitReflog):
            assert isinstance(theirs, GitReflog) and isinstance(live, GitReflog)
            merged = merge_reflog(base.entries, theirs.entries, live.entries)
            if base.ref == "refs/stash":
                merged = chained(merged)
            return live.model_copy(update={"entries": merged}), [], ["entries"]
        return super().merge_item(base, theirs, live, blobs)

    def synthesize(self, live: Snapshot, base: Snapshot, writes: dict[str, Item | None],
                   blobs: Any) -> Snapshot:
        """Live with the written items as planned: the work tree and git items in the
        items, the index entries in a new index listing, and every object file the
        before-call state needs (objects are only ever added back)."""
        assert isinstance(live, GitSnapshot) and isinstance(base, GitSnapshot)
        index_writes = {k: v for k, v in writes.items() if k.startswith("kind=git-index|")}
        file_writes = {k: v for k, v in writes.items()
                       if k.startswith(f"kind={dir_files.KIND}|")}
        item_writes = {k: v for k, v in writes.items()
                       if k not in index_writes and k not in file_writes}
        update: dict[str, Any] = {
            "items": splice(live.items, base.items, item_writes),
            "object_files": base.object_files,
        }
        if file_writes:
            update.update(self._git_files(live, base, file_writes, blobs))
        if index_writes:
            entries: list[GitIndexEntry] = splice(
                load_index_listing(blobs, live.index_listing),
                load_index_listing(blobs, base.index_listing), index_writes)
            rows = sorted((e.model_dump(mode="json") for e in entries),
                          key=lambda r: (r["path"], r["stage"]))
            update["index_listing"] = blobs.put_bytes(
                json.dumps(rows, separators=(",", ":")).encode())
            update["index_entries"] = len(rows)
        return live.model_copy(update=update)

    @staticmethod
    def _git_files(live: GitSnapshot, base: GitSnapshot, writes: dict[str, Item | None],
                   blobs: Any) -> dict[str, str]:
        """Live's git-directory listings with the written ``git-file`` items spliced in
        (as the file entries a restore of that tree reads)."""
        live_items = list(dir_files.git_file_items(live, blobs))
        base_items = list(dir_files.git_file_items(base, blobs))
        spliced = splice(live_items, base_items, writes)
        prefix = dir_files.private_prefix(live)
        common, private = [], []
        for entry in spliced:
            rel = dir_files.split_private(entry.path, prefix)
            row = FileEntry.model_validate({**entry.model_dump(), "kind": "file"})
            if rel is None:
                common.append(row)
            else:
                private.append(row.model_copy(update={"path": rel}))
        # the covered files stay as live has them: only the planned items change
        update = {"git_files": store_listing(blobs, [
            *(e for e in load_listing(blobs, live.git_files) if dir_files.covered(e.path)),
            *common])}
        if live.worktree_git_files is not None:
            update["worktree_git_files"] = store_listing(blobs, [
                *(e for e in load_listing(blobs, live.worktree_git_files)
                  if dir_files.covered(e.path)), *private])
        return update
