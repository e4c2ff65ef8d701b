"""What changed between two snapshots of one target, item by item."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from preimage.restoration import IdentityMapping
from preimage.similarity.scoring import flatten
from preimage.snapshot_schemas import Fidelity, Snapshot


class ItemChange(BaseModel):
    """One item that was added, removed or changed, with the fields that changed.

    ``key`` is the item's natural key (what restores match on); ``label`` names
    it for a person.
    """

    key: str
    change: str  # "added" | "removed" | "changed"
    fields: list[str] = Field(default_factory=list)
    classes: list[str] = Field(default_factory=list)
    label: str = ""


class StateDiff(BaseModel):
    """The differences between a ``before`` and an ``after`` snapshot."""

    target: str
    changes: list[ItemChange] = Field(default_factory=list)
    # State in scope that either snapshot never read: nobody can say it is unchanged.
    uncaptured: list[str] = Field(default_factory=list)
    # Identities that differ by design between two places (another root, database,
    # namespace): the snapshots were compared after mapping them.
    mapped: list[IdentityMapping] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when nothing differs (``server`` and ``access`` fields ignored) and
        nothing in scope went unread."""
        return not self.changes and not self.uncaptured

    def summary(self) -> dict[str, int]:
        """Counts of added, removed and changed items."""
        out = {"added": 0, "removed": 0, "changed": 0}
        for c in self.changes:
            out[c.change] += 1
        return out


def diff_snapshots(
    before: Snapshot,
    after: Snapshot,
    blobs: Any | None = None,
    *,
    include_server: bool = False,
    include_access: bool = False,
) -> StateDiff:
    """Item-level differences of ``after`` relative to ``before``.

    ``server``-class fields are ignored unless ``include_server`` (a restored
    file has a new inode, which is not a change the user made), and
    ``access``-class fields unless ``include_access`` (reading a file is not
    changing it).
    """
    ignored = set()
    if not include_server:
        ignored.add(Fidelity.SERVER.value)
    if not include_access:
        ignored.add(Fidelity.ACCESS.value)
    from preimage.similarity.streamed import DuplicateKey, Unordered, order_of

    order = order_of(before, after)
    try:
        try:
            changes = _paired_changes(before, after, blobs, ignored, order)
        except Unordered:   # a side out of its promised order: pair by natural key
            changes = _paired_changes(before, after, blobs, ignored, None)
    except DuplicateKey:
        changes = _flat_changes(before, after, blobs, ignored)
    unread = sorted({f"{u.label()}: {u.reason}" for u in (*before.uncaptured, *after.uncaptured)})
    return StateDiff(target=before.target, changes=changes, uncaptured=unread)


def _paired_changes(before: Snapshot, after: Snapshot, blobs: Any, ignored: set[str],
                    order: Callable[[Any], Any] | None) -> list[ItemChange]:
    """The changes, item by item (:mod:`.streamed`): with ``order`` (the one both sides
    promise) two sorted streams merged, only the changes held; else ``after``'s items
    too, however large ``before`` is."""
    from preimage.similarity.streamed import paired

    removed: list[ItemChange] = []
    added: list[ItemChange] = []
    changed: list[ItemChange] = []
    for p in paired(before.scoring_items(blobs), after.scoring_items(blobs), order=order):
        if p.r_leaves is None:
            removed.append(ItemChange(key=p.key, change="removed", label=p.o_label or ""))
            continue
        if p.o_leaves is None:
            added.append(ItemChange(key=p.key, change="added", label=p.r_label or ""))
            continue
        fields: set[str] = set()
        classes: set[str] = set()
        for path in p.o_leaves.keys() | p.r_leaves.keys():
            b, a = p.o_leaves.get(path), p.r_leaves.get(path)
            fidelity = (b or a).fidelity  # type: ignore[union-attr]
            if fidelity in ignored:
                continue
            if b is None or a is None or type(b.value) is not type(a.value) or b.value != a.value:
                fields.add(path)
                classes.add(fidelity)
        if fields:
            changed.append(ItemChange(key=p.key, change="changed", fields=sorted(fields),
                                      classes=sorted(classes), label=p.o_label or ""))
    return [*sorted(removed, key=lambda c: c.key), *sorted(added, key=lambda c: c.key),
            *sorted(changed, key=lambda c: c.key)]


def _flat_changes(before: Snapshot, after: Snapshot, blobs: Any,
                  ignored: set[str]) -> list[ItemChange]:
    """The changes, every leaf of both sides held at once (a side repeats a key)."""
    b_leaves, b_items = flatten(before.scoring_items(blobs))
    a_leaves, a_items = flatten(after.scoring_items(blobs))
    changes = [
        ItemChange(key=k, change="removed", label=b_items[k])
        for k in sorted(b_items.keys() - a_items.keys())
    ]
    changes += [
        ItemChange(key=k, change="added", label=a_items[k])
        for k in sorted(a_items.keys() - b_items.keys())
    ]
    per_item: dict[str, tuple[set[str], set[str]]] = {}
    for leaf in b_leaves.keys() | a_leaves.keys():
        item, path = leaf
        if item not in b_items or item not in a_items:
            continue
        b, a = b_leaves.get(leaf), a_leaves.get(leaf)
        fidelity = (b or a).fidelity  # type: ignore[union-attr]
        if fidelity in ignored:
            continue
        if b is None or a is None or type(b.value) is not type(a.value) or b.value != a.value:
            fields, classes = per_item.setdefault(item, (set(), set()))
            fields.add(path)
            classes.add(fidelity)
    for item in sorted(per_item):
        fields, classes = per_item[item]
        changes.append(ItemChange(
            key=item, change="changed", fields=sorted(fields), classes=sorted(classes),
            label=b_items[item],
        ))
    return changes
