"""What changed between two snapshots of one target, item by item."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from preimage.similarity.scoring import flatten
from preimage.snapshot_schemas import Snapshot


class ItemChange(BaseModel):
    """One item that was added, removed or changed, with the fields that changed."""

    key: str
    change: str  # "added" | "removed" | "changed"
    fields: list[str] = Field(default_factory=list)
    classes: list[str] = Field(default_factory=list)


class StateDiff(BaseModel):
    """The differences between a ``before`` and an ``after`` snapshot."""

    target: str
    changes: list[ItemChange] = Field(default_factory=list)
    # State in scope that either snapshot never read: nobody can say it is unchanged.
    uncaptured: list[str] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when nothing differs (``server``-class fields ignored) and
        nothing in scope went unread."""
        return not self.changes and not self.uncaptured

    def summary(self) -> dict[str, int]:
        """Counts of added, removed and changed items."""
        out = {"added": 0, "removed": 0, "changed": 0}
        for c in self.changes:
            out[c.change] += 1
        return out


def diff_snapshots(
    before: Snapshot, after: Snapshot, blobs: Any | None = None, *, include_server: bool = False
) -> StateDiff:
    """Item-level differences of ``after`` relative to ``before``.

    ``server``-class fields are ignored unless ``include_server``: a restored
    file has a new inode, which is not a change the user made.
    """
    b_leaves, b_keys = flatten(before.scoring_items(blobs))
    a_leaves, a_keys = flatten(after.scoring_items(blobs))
    changes: list[ItemChange] = [
        ItemChange(key=k, change="removed") for k in sorted(b_keys - a_keys)
    ]
    changes += [ItemChange(key=k, change="added") for k in sorted(a_keys - b_keys)]
    per_item: dict[str, tuple[set[str], set[str]]] = {}
    for leaf in set(b_leaves) | set(a_leaves):
        item, path = leaf
        if item not in b_keys or item not in a_keys:
            continue
        b, a = b_leaves.get(leaf), a_leaves.get(leaf)
        fidelity = (b or a)[0]  # type: ignore[index]
        if fidelity == "server" and not include_server:
            continue
        if b is None or a is None or b[1] != a[1]:
            fields, classes = per_item.setdefault(item, (set(), set()))
            fields.add(path)
            classes.add(fidelity)
    for item in sorted(per_item):
        fields, classes = per_item[item]
        changes.append(
            ItemChange(key=item, change="changed", fields=sorted(fields), classes=sorted(classes))
        )
    unread = sorted({f"{u.label()}: {u.reason}" for u in (*before.uncaptured, *after.uncaptured)})
    return StateDiff(target=before.target, changes=changes, uncaptured=unread)
