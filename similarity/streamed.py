"""Scoring and diffing item by item, so a comparison of a million files never holds
the leaves of both sides.

:func:`.scoring.compare` takes every leaf of both snapshots at once (``(key, path)
→ leaf``, a few kilobytes an item).  Here the restored (live) side's items are
kept by natural key and the original's are read one at a time — from the store,
a chunk at a time, when the backup is large — and each pair is flattened,
compared and dropped: only the differences are kept.  The counts, reasons and
notes are those of :func:`.scoring.compare` (the same formula, the same
invariants); a side that names one natural key twice (its leaves would merge)
raises :class:`DuplicateKey`, and the caller compares the whole way instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from preimage.restoration import IdRemap
from preimage.similarity.leaf_match import (
    CLASS_WEIGHT,
    SERVER_REASON,
    difference_reason,
    jsonable,
    remap_note,
    same_value,
)
from preimage.similarity.report import CLASSES, LeafDifference, SimilarityReport
from preimage.snapshot_schemas import Fidelity, Item, Leaf, iter_leaves

ServerNote = Callable[[Item, str], str] | None
SERVER = Fidelity.SERVER.value


class DuplicateKey(Exception):
    """One side names a natural key twice: its leaves merge, so items cannot be paired."""


def item_leaves(item: Item, server_note: ServerNote) -> dict[str, Leaf]:
    """``item``'s leaves by field path, a ``server`` leaf without a note given the
    snapshot's (as :func:`.scoring.flatten` does)."""
    out: dict[str, Leaf] = {}
    for path, leaf in iter_leaves(item, Fidelity.CONTENT.value):
        if leaf.fidelity == SERVER and not leaf.note and server_note is not None:
            leaf = leaf._replace(note=server_note(item, path))
        out[path] = leaf
    return out


class Pair:
    """One natural key with each side's label and leaves (None: that side lacks it)."""

    __slots__ = ("key", "o_label", "o_leaves", "r_label", "r_leaves")

    def __init__(self, key: str, o_label: str | None, o_leaves: dict[str, Leaf] | None,
                 r_label: str | None, r_leaves: dict[str, Leaf] | None) -> None:
        self.key = key
        self.o_label = o_label
        self.o_leaves = o_leaves
        self.r_label = r_label
        self.r_leaves = r_leaves


def paired(original: Iterable[Item], restored: Iterable[Item], *,
           o_note: ServerNote = None, r_note: ServerNote = None) -> Iterator[Pair]:
    """Every natural key of either side, the original's in their order, then the keys
    only the restored side has.  Raises :class:`DuplicateKey` (possibly after some
    pairs) when a side repeats a key."""
    rest: dict[str, Item] = {}
    for item in restored:
        key = item.natural_key()
        if key in rest:
            raise DuplicateKey(key)
        rest[key] = item
    seen: set[str] = set()
    for item in original:
        key = item.natural_key()
        if key in seen:
            raise DuplicateKey(key)
        seen.add(key)
        other = rest.pop(key, None)
        yield Pair(key, item.label(), item_leaves(item, o_note),
                   None if other is None else other.label(),
                   None if other is None else item_leaves(other, r_note))
    for key, other in rest.items():
        yield Pair(key, None, None, other.label(), item_leaves(other, r_note))


def compare_paired(pairs: Iterable[Pair], remaps: Iterable[IdRemap] = ()) -> SimilarityReport:
    """:func:`.scoring.compare` over paired items (see the module docstring)."""
    remaps = list(remaps)
    counts = {c: [0, 0, 0] for c in CLASSES}  # original, matched, extra
    diffs: list[LeafDifference] = []
    n_original = n_restored = 0
    for p in pairs:
        n_original += p.o_leaves is not None
        n_restored += p.r_leaves is not None
        whole: dict[str, list[Any]] = {}   # reason → [leaves, class], this item only

        def whole_item(reason: str, fidelity: str, whole: dict[str, list[Any]] = whole) -> None:
            entry = whole.setdefault(reason, [0, fidelity])
            entry[0] += 1
            if CLASS_WEIGHT.get(fidelity, 9) < CLASS_WEIGHT.get(entry[1], 9):
                entry[1] = fidelity

        o_label = p.o_label if p.o_label is not None else p.key
        for path, leaf in (p.o_leaves or {}).items():
            fidelity = leaf.fidelity
            counts[fidelity][0] += 1
            got = None if p.r_leaves is None else p.r_leaves.get(path)
            if got is not None and got.fidelity == fidelity and same_value(got.value, leaf.value):
                counts[fidelity][1] += 1
                continue
            if p.r_leaves is None:
                whole_item("missing item", fidelity)
                continue
            reason = difference_reason(got, leaf, fidelity)
            note = ""
            if fidelity == SERVER:
                remapped = remap_note((p.key, o_label), path, leaf.value,
                                       got.value if got else None, remaps)
                note = "; ".join(n for n in (leaf.note or SERVER_REASON, remapped) if n)
            diffs.append(LeafDifference(
                item=o_label, key=p.key, path=path, fidelity=fidelity,
                reason=reason, original=jsonable(leaf.value),
                restored=jsonable(got.value) if got else None, note=note, display=leaf.display,
            ))
        r_label = p.r_label if p.r_label is not None else p.key
        for path, leaf in (p.r_leaves or {}).items():
            if p.o_leaves is not None and path in p.o_leaves:
                continue
            counts[leaf.fidelity][2] += 1
            if p.o_leaves is None:
                whole_item("extra item", leaf.fidelity)
                continue
            diffs.append(LeafDifference(
                item=r_label, key=p.key, path=path, fidelity=leaf.fidelity,
                reason="extra field", restored=jsonable(leaf.value), display=leaf.display,
            ))
        for reason, (n, fidelity) in whole.items():
            diffs.append(LeafDifference(
                item=o_label if reason == "missing item" else r_label, key=p.key, path="",
                fidelity=fidelity, reason=reason, leaves=n,
            ))
    report = SimilarityReport(items_original=n_original, items_restored=n_restored)
    report.set_counts(counts)
    diffs.sort(key=lambda d: (CLASS_WEIGHT.get(d.fidelity, 9), d.item, d.path))
    report.differences = diffs
    return report
