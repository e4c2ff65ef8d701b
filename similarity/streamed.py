"""Scoring and diffing item by item, so a comparison of a million files never holds
the leaves of both sides.

:func:`.scoring.compare` takes every leaf of both snapshots at once (``(key, path)
→ leaf``, a few kilobytes an item).  Here each pair of items is flattened, compared
and dropped: only the differences are kept.  When both snapshots promise the same
order (:meth:`~preimage.snapshot_schemas.Snapshot.item_order`: a file tree in walk
order), the two sides are read as two sorted streams and merged, so neither is held
— the backup's read from the store a chunk at a time, the live state's as it is
walked; otherwise the restored (live) side's items are kept by natural key and the
original's are read one at a time.  The counts, reasons and notes are those of
:func:`.scoring.compare` (the same formula, the same invariants).  A side that names
one natural key twice (its leaves would merge) raises :class:`DuplicateKey`, and the
caller compares the whole way instead; a side found out of its promised order raises
:class:`Unordered`, and the caller pairs by natural key instead.
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


class Unordered(Exception):
    """One side's items are not in the order its snapshot promised: they cannot be merged
    as sorted streams (they can still be paired by natural key)."""


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
           o_note: ServerNote = None, r_note: ServerNote = None,
           order: Callable[[Any], Any] | None = None) -> Iterator[Pair]:
    """Every natural key of either side, once.  With ``order`` (the sort key both sides
    promise) the two sorted streams are merged and the pairs come in that order; without
    it the original's keys come in their order, then the keys only the restored side has.
    Raises :class:`DuplicateKey` when a side repeats a key and :class:`Unordered` when a
    side breaks ``order`` (possibly after some pairs)."""
    if order is not None:
        yield from _merged(original, restored, order, o_note, r_note)
        return
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


class _Sorted:
    """One side read in its promised order: the current item and its sort key, each new
    key checked to rise strictly (an equal one is a repeated item, a lower one disorder)."""

    __slots__ = ("_items", "_order", "item", "key")

    def __init__(self, items: Iterable[Item], order: Callable[[Any], Any]) -> None:
        self._items = iter(items)
        self._order = order
        self.item: Item | None = None
        self.key: Any = None
        self.advance()

    def advance(self) -> None:
        item = next(self._items, None)
        if item is None:
            self.item = None
            return
        key = self._order(item)
        if self.item is not None:
            if key == self.key:
                raise DuplicateKey(item.natural_key())
            if key < self.key:
                raise Unordered(item.natural_key())
        self.item, self.key = item, key


def _merged(original: Iterable[Item], restored: Iterable[Item], order: Callable[[Any], Any],
            o_note: ServerNote, r_note: ServerNote) -> Iterator[Pair]:
    """The pairs of two streams sorted by ``order``: one item of each side held at a time."""
    o, r = _Sorted(original, order), _Sorted(restored, order)
    while True:
        oi, ri = o.item, r.item
        if oi is not None and (ri is None or o.key < r.key):
            yield Pair(oi.natural_key(), oi.label(), item_leaves(oi, o_note), None, None)
            o.advance()
        elif ri is not None and (oi is None or r.key < o.key):
            yield Pair(ri.natural_key(), None, None, ri.label(), item_leaves(ri, r_note))
            r.advance()
        elif oi is not None and ri is not None:
            key = oi.natural_key()
            if ri.natural_key() != key:   # equal order, unequal keys: not the promise
                raise Unordered(key)
            yield Pair(key, oi.label(), item_leaves(oi, o_note), ri.label(),
                       item_leaves(ri, r_note))
            o.advance()
            r.advance()
        else:
            return


def order_of(original: Any, restored: Any) -> Callable[[Any], Any] | None:
    """The order both snapshots promise their items in (``restored`` may be None:
    nothing to merge with), or None when they promise none or different ones."""
    mine: Callable[[Any], Any] | None = type(original).item_order()
    if mine is None or (restored is not None and type(restored).item_order() is not mine):
        return None
    return mine


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
