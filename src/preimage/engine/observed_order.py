"""The order in which the snapshots of an observed backup are restored.

An observed backup holds one snapshot per recorded path, in the order the
call reached them, and paths nest: ``d?depth=0`` (the directory's own entry),
``d/a`` (a file removed from it), ``d`` (a tree renamed away).  Restoring them
in that order would let a later, shallower tree undo a deeper restore, and the
files written into a directory would move its mtime after it was set.  So:

Entries are ``?depth=0`` (a directory's own entry) and ``?depth=1`` (a
directory with its files, recorded for a hard-link group).

1. shallowest path first, so a directory exists before what goes inside it;
   at one path the tree before the entry (the entry was recorded first, so
   its metadata is the older, truer one), and of two entries the later
   recorded first — the earliest record of a path has the last word;
2. then every directory's own entry (``?depth=0``) again, deepest first, so each directory's mode
   and times are set after everything inside it was written.

Step 2 only sets metadata (the entries are already there after step 1).
"""

from __future__ import annotations

from typing import Any, TypeVar

from preimage.snapshot_schemas.files import FileSnapshot

T = TypeVar("T", bound=tuple[Any, ...])


def _place(snap: FileSnapshot) -> tuple[int, bool]:
    depth = snap.root.rstrip("/").count("/")
    return depth, "?depth=" in snap.target


def restore_order(loaded: list[T]) -> list[T]:
    """``loaded`` — (row, scope, snapshot) triples — in the order above."""
    files = [(i, x) for i, x in enumerate(loaded) if isinstance(x[2], FileSnapshot)]
    rest = [x for x in loaded if not isinstance(x[2], FileSnapshot)]
    # at one path the earliest record is the truest before-image: it goes last
    first = [x for _i, x in sorted(files, key=lambda ix: (*_place(ix[1][2]), -ix[0]))]
    # only the directories' own entries: a one-level record would also prune what the
    # deeper records have just put back
    last = [x for _i, x in sorted(((i, x) for i, x in files
                                   if x[2].target.endswith("?depth=0")),
                                  key=lambda ix: (-_place(ix[1][2])[0], -ix[0]))]
    return [*rest, *first, *last]
