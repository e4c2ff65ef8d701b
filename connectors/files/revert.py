"""Undoing one call on a file tree: by path and metadata field, text merged line by line.

An entry the call changed and nobody touched since is written back whole.
An entry both changed is merged field by field (mode, owner, xattrs, …);
when both changed a regular file's bytes and all three versions are UTF-8
text, the call's edit is taken out line by line — a three-way merge whose
common ancestor is the file as the call left it, one side the file before
the call, the other the file now — and it is a conflict only where the two
edits touch the same or adjacent lines (as ``git merge-file`` treats them).

Modification times are *soft*: every write moves them, so when both sides
moved one the live time stands instead of a conflict (a directory's mtime
moves whenever anyone adds or removes an entry in it).
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Any

from preimage.restoration.merge import Conflict, Merger
from preimage.restoration.revert import Reverter
from preimage.snapshot_schemas import Item
from preimage.snapshot_schemas.files import FileEntry

#: Files larger than this are not merged line by line (a conflict instead).
TEXT_MERGE_MAX = 8 << 20

_SOFT = frozenset({"mtime_ns", "atime_ns"})
_CONTENT = frozenset({"digest", "size", "extents"})


def merge_lines(ancestor: list[str], ours: list[str], theirs: list[str]) -> list[str] | None:
    """Three-way merge of line lists; ``None`` when the two edits overlap or touch.

    Each side's edits are the regions of ``ancestor`` it replaced; regions from
    the two sides that overlap, or touch (an insertion at the other's edge),
    conflict unless both made the very same edit.
    """
    def hunks(other: list[str]) -> list[tuple[int, int, list[str]]]:
        sm = SequenceMatcher(None, ancestor, other, autojunk=False)
        return [(i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in sm.get_opcodes()
                if tag != "equal"]

    mine, yours = hunks(ours), hunks(theirs)
    for a1, a2, alines in mine:
        for b1, b2, blines in yours:
            if a1 <= b2 and b1 <= a2 and not (a1 == b1 and a2 == b2 and alines == blines):
                return None
    edits = {(h[0], h[1]): h for h in mine}
    for h in yours:
        edits.setdefault((h[0], h[1]), h)
    out: list[str] = []
    pos = 0
    for start, end, lines in sorted(edits.values(), key=lambda h: (h[0], h[1])):
        out.extend(ancestor[pos:start])
        out.extend(lines)
        pos = end
    out.extend(ancestor[pos:])
    return out


class FilesReverter(Reverter):
    """Files by path and metadata field; regular text files merged line by line."""


    def soft(self, item: Item, path: str) -> bool:
        return path in _SOFT

    def merge_item(self, base: Item, theirs: Item, live: Item, blobs: Any) -> tuple[
        Item, list[Conflict], list[str]
    ]:
        assert isinstance(base, FileEntry) and isinstance(theirs, FileEntry)
        assert isinstance(live, FileEntry)
        text = self._merge_text(base, theirs, live, blobs)
        soft = (lambda p: p in _SOFT or p in _CONTENT) if text is not None else (
            lambda p: p in _SOFT)
        merger = Merger(soft=soft)
        merged = merger.record(base, theirs, live)
        if text is not None:
            digest, size = text
            merged = merged.model_copy(update={"digest": digest, "size": size, "extents": None})
            merger.changed.append("lines")
        return merged, merger.conflicts, merger.changed  # type: ignore[return-value]

    @staticmethod
    def _merge_text(base: FileEntry, theirs: FileEntry, live: FileEntry,
                    blobs: Any) -> tuple[str, int] | None:
        """The merged bytes' digest and size, when all three are text and the edits
        do not overlap; ``None`` otherwise (the content is then judged as a whole)."""
        entries = (base, theirs, live)
        if any(e.type != "file" or e.digest is None or e.hardlink_to for e in entries):
            return None
        if len({e.digest for e in entries}) < 3 or max(e.size for e in entries) > TEXT_MERGE_MAX:
            return None
        try:
            texts = [blobs.get_bytes(e.digest).decode("utf-8") for e in entries]  # type: ignore[arg-type]
        except (UnicodeDecodeError, ValueError):
            return None
        if any("\x00" in t for t in texts):
            return None
        lines = [t.splitlines(keepends=True) for t in texts]
        merged = merge_lines(lines[1], lines[0], lines[2])
        if merged is None:
            return None
        data = "".join(merged).encode("utf-8")
        return blobs.put_bytes(data), len(data)
