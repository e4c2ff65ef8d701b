"""Reverting one call's delta: a three-way plan over base, theirs and live.

*base* is the target captured before a tool call, *theirs* the same target
captured right after it, *live* a capture taken now.  Item by item (matched
by natural key, as the meter matches them):

==================================  ============  =========================================
the item …                          verdict       what an undo does
==================================  ============  =========================================
was not changed by the call         (untouched)   never written
was changed, and not since          ``revert``    written back as before the call (an item
                                                  the call created is removed)
is already as before the call       ``already``   nothing
was changed since in other fields   ``merge``     the call's fields back, the later ones kept
was changed since in the same ones  ``conflict``  reported with both versions, left alone —
                                                  ``take-backup`` writes the before-call
                                                  version, ``keep-live`` keeps it, on purpose
==================================  ============  =========================================

The plan's :attr:`RevertPlan.writes` are the items to write (``None``: to
remove); :meth:`Reverter.synthesize` turns them into a snapshot equal to
live except for those items, and the connector restores exactly those keys
(:attr:`~preimage.restoration.RestorePolicy.keys`) — the same restore path,
the same per-item report, nothing outside the set written.

Each connector declares how finely it can do this in its capabilities
(``Capabilities.undo``, a :class:`Granularity`; none declared: undo is refused)
and does it with a :class:`Reverter` (``reverter`` on the connector class):
the default reverts whole items and
merges their fields by the schema's declarations; connectors add derived
(*soft*) fields, content merges (text files line by line) and a
``synthesize`` for state kept outside the items (table rows in blobs).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from preimage.restoration.granularity import Granularity
from preimage.restoration.merge import MISSING, Conflict, Merger, restorable_leaves, same
from preimage.snapshot_schemas import Item, Snapshot

__all__ = [
    "Granularity", "ItemPlan", "Resolution", "RevertPlan", "Reverter", "Verdict",
    "apply_writes", "compared_leaves", "plan_revert", "reverter_for", "splice",
]

T = TypeVar("T", bound=Item)


class Verdict(enum.StrEnum):
    """What an undo does with one item the call changed (see the module table)."""

    REVERT = "revert"
    MERGE = "merge"
    ALREADY = "already"
    CONFLICT = "conflict"


class Resolution(enum.StrEnum):
    """What an undo does with conflicts: leave them (default), or decide explicitly."""

    LEAVE = "leave"
    TAKE_BACKUP = "take-backup"
    KEEP_LIVE = "keep-live"


@dataclass
class ItemPlan:
    """The verdict on one item the call changed."""

    key: str
    label: str
    verdict: Verdict
    want: Item | None = None          # what is written (verdict revert/merge, or resolved)
    write: bool = False               # whether the undo writes this item
    conflicts: list[Conflict] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)   # the fields the undo takes back
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view (for ``--json`` and the journal)."""
        return {
            "key": self.key, "label": self.label, "verdict": self.verdict.value,
            "write": self.write, "remove": self.write and self.want is None,
            "fields": self.fields, "conflicts": [c.to_dict() for c in self.conflicts],
            "note": self.note,
        }


@dataclass
class RevertPlan:
    """The three-way plan for one target."""

    target: str
    connector: str
    items: list[ItemPlan] = field(default_factory=list)
    untouched: int = 0               # items the call did not change (never written)
    notes: list[str] = field(default_factory=list)

    @property
    def writes(self) -> dict[str, Item | None]:
        """Items to write by natural key (``None``: remove)."""
        return {p.key: p.want for p in self.items if p.write}

    @property
    def conflicts(self) -> list[ItemPlan]:
        """Items changed since the call in the fields the call changed."""
        return [p for p in self.items if p.verdict is Verdict.CONFLICT]

    @property
    def unresolved(self) -> list[ItemPlan]:
        """Conflicts left alone (neither ``take-backup`` nor ``keep-live``)."""
        return [p for p in self.conflicts if not p.write and not p.note.startswith("kept")]

    def count(self, verdict: Verdict) -> int:
        """How many items got ``verdict``."""
        return sum(1 for p in self.items if p.verdict is verdict)

    def summary(self) -> str:
        """``3 reverted, 1 merged, 1 conflict, 12 untouched``."""
        parts = [f"{self.count(Verdict.REVERT)} reverted", f"{self.count(Verdict.MERGE)} merged"]
        if self.count(Verdict.ALREADY):
            parts.append(f"{self.count(Verdict.ALREADY)} already as before")
        n = self.count(Verdict.CONFLICT)
        parts.append(f"{n} conflict{'s' if n != 1 else ''}")
        parts.append(f"{self.untouched} untouched")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view."""
        return {"target": self.target, "connector": self.connector,
                "items": [p.to_dict() for p in self.items], "untouched": self.untouched,
                "summary": self.summary(), "notes": self.notes}


class Reverter:
    """How one connector's state is reverted item by item; subclass to refine it.

    The default: items are the snapshot's scoring items; whole items are
    reverted, and an item changed on both sides is merged field by field by
    the schema's declarations (:class:`~preimage.restoration.merge.Merger`);
    the synthesized snapshot is live with the written items replaced, added or
    removed, in live's order with re-created items after their neighbour in
    base.
    """

    #: Whether an item the call changed only in soft fields is written back (a
    #: directory's mtime: yes; a table's row digest, which its rows' writes set: no).
    write_soft_only: ClassVar[bool] = True

    def items(self, snap: Snapshot, blobs: Any) -> Iterator[Item]:
        """The items the plan compares (rows of tables included)."""
        yield from snap.scoring_items(blobs)

    def specialize(self, snapshot: Snapshot) -> Reverter:
        """The reverter for the state ``snapshot`` holds (a connector whose records come
        from plug-ins — site adapters — asks the plug-in how its records merge)."""
        return self

    def align(self, base: Snapshot, theirs: Snapshot, live: Snapshot) -> tuple[
        Snapshot, Snapshot, Snapshot, list[str]
    ]:
        """The three snapshots made comparable: a connector leaves out state that one of
        them could not read (so it does not look deleted), and says so in the notes."""
        return base, theirs, live, []

    def soft(self, item: Item, path: str) -> bool:
        """Whether the leaf at ``path`` of ``item`` is derived from other state (a
        directory's mtime, a table's row count): it never conflicts, and live stands
        when both sides changed it."""
        return False

    def leaves(self, item: Item) -> list[tuple[str, str, Any]]:
        """``(path, type, value)`` of the leaves by which an undo tells ``item``'s changes
        apart: restorable and not derived (a connector may key what it merges entry by
        entry, such as a change log by its times)."""
        return [x for x in restorable_leaves(item) if not self.soft(item, x[0])]

    def merge_item(self, base: Item, theirs: Item, live: Item, blobs: Any) -> tuple[
        Item, list[Conflict], list[str]
    ]:
        """Merge an item both the call and someone after it changed: the merged item,
        the conflicts met, and the fields taken back."""
        merger = Merger(soft=lambda path: self.soft(live, path))
        merged = merger.record(base, theirs, live)
        return merged, merger.conflicts, merger.changed  # type: ignore[return-value]

    def synthesize(self, live: Snapshot, base: Snapshot, writes: dict[str, Item | None],
                   blobs: Any) -> Snapshot:
        """The snapshot an ``overwrite`` restore of exactly ``writes``' keys reads:
        live, with every written item as planned."""
        return live.model_copy(update={"items": splice(live.items, base.items, writes)})

    def scope(self, writes: dict[str, Item | None]) -> frozenset[str]:
        """The natural keys the connector's restore is limited to."""
        return frozenset(writes)


def splice(live_items: Iterable[Any], base_items: Iterable[Any],
           writes: dict[str, Item | None]) -> list[Any]:
    """``live_items`` with ``writes`` applied: replaced in place, removed, or added after
    the nearest item that precedes them in ``base_items`` (so parents stay first)."""
    out: list[Any] = []
    for item in live_items:
        key = item.natural_key()
        if key in writes:
            new = writes[key]
            if new is not None:
                out.append(new)
        else:
            out.append(item)
    present = {i.natural_key() for i in out}
    added = [k for k, v in writes.items() if v is not None and k not in present]
    if not added:
        return out
    position = {i.natural_key(): n for n, i in enumerate(out)}
    prev: str | None = None
    after: dict[str | None, list[Any]] = {}
    for item in base_items:
        key = item.natural_key()
        if key in added:
            after.setdefault(prev, []).append(writes[key])
        if key in position or key in added:
            prev = key
    leftover = [writes[k] for k in added if not any(
        writes[k] is x for group in after.values() for x in group)]
    result: list[Any] = []
    for item in [*after.get(None, []), *out]:  # items re-created first bring their chains
        result.append(item)
        result.extend(_chain(after, item.natural_key()))
    return result + leftover


def apply_writes(items: Iterable[T], writes: dict[str, T | None]) -> list[T]:
    """``items`` (in order) with ``writes`` applied by natural key: replaced in place,
    removed (``None``), or added at the end."""
    out: list[T] = []
    seen: set[str] = set()
    for item in items:
        key = item.natural_key()
        if key in writes:
            seen.add(key)
            new = writes[key]
            if new is not None:
                out.append(new)
        else:
            out.append(item)
    return out + [i for k, i in writes.items() if i is not None and k not in seen]


def _chain(after: dict[str | None, list[Any]], key: str) -> Iterator[Any]:
    for item in after.get(key, []):
        yield item
        yield from _chain(after, item.natural_key())


def reverter_for(connector: Any, snapshot: Snapshot | None = None) -> Reverter:
    """The connector's :class:`Reverter` (``reverter`` on its class), or the default;
    with ``snapshot``, the one for that snapshot (:meth:`Reverter.specialize`)."""
    found = getattr(connector, "reverter", None)
    rv = found if isinstance(found, Reverter) else Reverter()
    return rv if snapshot is None else rv.specialize(snapshot)


def compared_leaves(snap: Snapshot, blobs: Any, reverter: Reverter | None = None
                    ) -> dict[str, dict[str, tuple[str, Any]]]:
    """Every item of ``snap`` by natural key, as ``{leaf path: (type, value)}`` over the
    leaves an undo tells changes apart by (:meth:`Reverter.leaves`); the placeholder leaf
    of an empty set or map is left out, so "empty" and "absent" read the same."""
    rv = reverter or Reverter()
    return {
        item.natural_key(): {path: (kind, value) for path, kind, value in rv.leaves(item)
                             if value not in ([], (), {})}
        for item in rv.items(snap, blobs)
    }


def plan_revert(base: Snapshot, theirs: Snapshot, live: Snapshot, blobs: Any,
                reverter: Reverter | None = None,
                resolution: Resolution = Resolution.LEAVE) -> RevertPlan:
    """The three-way plan that reverts the delta ``base → theirs`` onto ``live``."""
    rv = reverter or Reverter()
    plan = RevertPlan(target=live.target, connector=live.connector)
    base, theirs, live, plan.notes = rv.align(base, theirs, live)
    b_items = _by_key(rv.items(base, blobs))
    t_items = _by_key(rv.items(theirs, blobs))
    l_items = _by_key(rv.items(live, blobs))
    for side, snap in (("before", base), ("after", theirs)):
        for u in snap.uncaptured:
            plan.notes.append(
                f"{u.label()} was not captured {side} the call ({u.reason}); whatever the "
                "call did to it cannot be reverted")
    for key in list(b_items) + [k for k in t_items if k not in b_items]:
        b, t = b_items.get(key, MISSING), t_items.get(key, MISSING)
        if same(b, t):
            plan.untouched += 1
            continue
        now = l_items.get(key, MISSING)
        label = next(x for x in (now, t, b) if x is not MISSING).label()
        plan.items.append(_verdict(rv, key, label, b, t, now, blobs, resolution))
    plan.untouched += sum(1 for k in l_items if k not in b_items and k not in t_items)
    return plan


def _by_key(items: Iterable[Item]) -> dict[str, Item]:
    return {i.natural_key(): i for i in items}


def _verdict(rv: Reverter, key: str, label: str, b: Any, t: Any, now: Any, blobs: Any,
             resolution: Resolution) -> ItemPlan:
    want = None if b is MISSING else b
    if not rv.write_soft_only and MISSING not in (b, t) and _same_but_soft(rv, b, t):
        return ItemPlan(key, label, Verdict.ALREADY,
                        note="only derived fields changed; they follow the other items")
    if same(t, now):
        return ItemPlan(key, label, Verdict.REVERT, want, True,
                        note="created by the call" if b is MISSING else
                        ("deleted by the call" if t is MISSING else ""))
    if same(b, now):
        return ItemPlan(key, label, Verdict.ALREADY, note="already as before the call")
    if b is MISSING and now is not MISSING and _same_but_soft(rv, t, now):
        return ItemPlan(key, label, Verdict.REVERT, None, True,
                        note="created by the call (only derived fields changed since)")
    if t is MISSING and MISSING not in (b, now) and _same_but_soft(rv, b, now):
        return ItemPlan(key, label, Verdict.ALREADY,
                        note="deleted by the call and made again since as it was (only "
                             "derived fields differ)")
    if MISSING in (b, t, now):
        what = ("created by the call and changed since" if b is MISSING else
                "deleted by the call and created again since" if t is MISSING else
                "changed by the call and deleted since")
        conflict = Conflict("(whole item)", _dump(b), _dump(t), _dump(now), what)
        return _resolved(ItemPlan(key, label, Verdict.CONFLICT, conflicts=[conflict]),
                         want, resolution)
    merged, conflicts, fields = rv.merge_item(b, t, now, blobs)
    if conflicts:
        plan = ItemPlan(key, label, Verdict.CONFLICT, conflicts=conflicts)
        return _resolved(plan, want, resolution)
    if same(merged, now):
        return ItemPlan(key, label, Verdict.ALREADY,
                        note="what the call changed here was changed again since "
                             "(derived fields only)")
    return ItemPlan(key, label, Verdict.MERGE, merged, True, fields=fields,
                    note="changed since in other fields; those are kept")


def _same_but_soft(rv: Reverter, a: Item, b: Item) -> bool:
    """Whether ``a`` and ``b`` agree on every restorable leaf that is not soft."""
    def hard(item: Item) -> list[tuple[str, str, Any]]:
        return [x for x in restorable_leaves(item) if not rv.soft(item, x[0])]
    return hard(a) == hard(b)


def _resolved(plan: ItemPlan, want: Item | None, resolution: Resolution) -> ItemPlan:
    if resolution is Resolution.TAKE_BACKUP:
        plan.want, plan.write = want, True
        plan.note = "conflict resolved with --take-backup: written as before the call"
    elif resolution is Resolution.KEEP_LIVE:
        plan.note = "kept as it is now (--keep-live)"
    else:
        plan.note = ("left alone: changed since the call in what the call changed — "
                     "decide with --take-backup or --keep-live")
    return plan


def _dump(value: Any) -> Any:
    return None if value is MISSING else value.model_dump(mode="json")
