"""A file tree re-addressed to another directory (``restore --to file:///other``,
``score --against file:///other``).

Entries are kept relative to the target root, so only the root moves: the
snapshot's ``target``, ``root`` and ``root_parent`` (the destination's parent as it
resolves now — the restore refuses to write if it resolves elsewhere later).  The
walk limits (``?depth=``, ``?exclude=``) go with the tree.  A destination inside
the source, or holding it, is refused: the restore would read and write one tree.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from preimage.connectors.files.address import scope_query
from preimage.connectors.files.walk import resolve_root
from preimage.interface.errors import InvalidTargetError, UsageError
from preimage.interface.target import Target
from preimage.restoration import IdentityMapping, Relocation
from preimage.snapshot_schemas.files import FileSnapshot


def nested(a: Path, b: Path) -> bool:
    """Whether one of two absolute paths is the other or lies below it (symlinks resolved)."""
    ra, rb = Path(os.path.realpath(a)), Path(os.path.realpath(b))
    return ra == rb or ra.is_relative_to(rb) or rb.is_relative_to(ra)


def relocate_tree(snapshot: FileSnapshot, destination: Target, uri: str) -> Relocation:
    """``snapshot`` as a tree rooted at ``destination``; ``uri`` builds a file URI.

    Raises :class:`~preimage.UsageError` when the destination overlaps the source.
    """
    if destination.scheme != "file":
        raise UsageError(f"{destination.redacted}: a file tree restores into a file:// target")
    if destination.host not in (None, "", "localhost"):
        raise InvalidTargetError(destination.redacted, "file:// targets are local")
    root = resolve_root(destination.path)
    if nested(root, Path(snapshot.root)):
        raise UsageError(
            f"--to {destination.redacted} overlaps the backup's own target {snapshot.target}: "
            "restore into a directory outside it (or restore in place without --to). "
            "Nothing was written"
        )
    query = parse_qs(urlsplit(snapshot.target).query)
    depth = query.get("depth", [None])[-1]
    left_out = sorted(query.get("exclude", []))
    target = uri + scope_query(int(depth) if depth is not None else None, left_out)
    moved = snapshot.model_copy(update={
        "target": target, "root": str(root), "root_parent": os.path.realpath(root.parent),
    })
    return Relocation(moved, (IdentityMapping(what="root", old=snapshot.root, new=str(root)),))
