"""Scoring how faithfully a restored state reproduces an original one.

Both snapshots are flattened into leaves ``(item key, field path) → value``,
each leaf carrying the fidelity class declared in the schema.  Items are
matched by their natural key (path; primary key; kind/namespace/name; …), so
order and server-assigned ids never decide a match.

For each fidelity class *c*::

    matched_c = |{ l ∈ O_c : l ∈ R and R[l] == O[l] }|
    extra_c   = |{ l ∈ R_c : l ∉ O }|
    score_c   = matched_c / (|O_c| + extra_c)        (1.0 when both are 0)

where ``O`` are the original's leaves and ``R`` the restored state's.  Every
entry of the original's ``uncaptured`` list (state in scope the capture never
read) counts as one original leaf of its class that nothing can match, so a
snapshot that missed something never scores 1.0.  The
same formula over the union of ``content`` and ``metadata`` gives
``restorable`` (what a client can bring back — the number CI gates on), and
over all three classes gives ``overall``.

Invariants (tested): identical snapshots score 1.0 in every class; a restore
that brought nothing back scores 0.0; damaging more leaves never raises a
score; leaves the original did not have lower it.  Every leaf that differs is
listed with its class and the reason (missing item, missing field, changed
value, extra item, extra field); ``server``-class differences are explained
as server-assigned.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

from preimage.snapshot_schemas import Fidelity, Item, Snapshot, iter_leaves

Leaves = dict[tuple[str, str], tuple[str, Any]]

CLASSES = (Fidelity.CONTENT.value, Fidelity.METADATA.value, Fidelity.SERVER.value)
RESTORABLE = (Fidelity.CONTENT.value, Fidelity.METADATA.value)
SERVER_REASON = "server-assigned: no client can set it, so a restore cannot bring it back"


class ClassScore(BaseModel):
    """The score of one fidelity class (or of a union of classes)."""

    original: int = 0
    matched: int = 0
    extra: int = 0
    score: float = 1.0


class LeafDifference(BaseModel):
    """One leaf that differs between original and restored."""

    item: str
    path: str
    fidelity: str
    reason: str
    original: Any = None
    restored: Any = None
    note: str = ""


class SimilarityReport(BaseModel):
    """Per-class and overall similarity, with every differing leaf."""

    classes: dict[str, ClassScore] = Field(default_factory=dict)
    restorable: ClassScore = Field(default_factory=ClassScore)
    overall: ClassScore = Field(default_factory=ClassScore)
    items_original: int = 0
    items_restored: int = 0
    uncaptured: int = 0
    differences: list[LeafDifference] = Field(default_factory=list)

    def value(self, which: str = "restorable") -> float:
        """The score named ``which``: restorable, overall, content, metadata or server."""
        if which == "restorable":
            return self.restorable.score
        if which == "overall":
            return self.overall.score
        return self.classes[which].score


def flatten(items: Iterable[Item]) -> tuple[Leaves, set[str]]:
    """Leaves of ``items`` keyed by ``(natural key, path)``, and the set of item keys."""
    leaves: Leaves = {}
    keys: set[str] = set()
    for item in items:
        k = item.natural_key()
        keys.add(k)
        for path, fidelity, value in iter_leaves(item, Fidelity.CONTENT.value):
            leaves[(k, path)] = (fidelity, value)
    return leaves, keys


def _ratio(matched: int, original: int, extra: int) -> float:
    denominator = original + extra
    return 1.0 if denominator == 0 else matched / denominator


def _union(counts: dict[str, list[int]], names: Iterable[str]) -> ClassScore:
    """The score over several classes: their original/matched/extra counts summed."""
    o = sum(counts[n][0] for n in names)
    m = sum(counts[n][1] for n in names)
    e = sum(counts[n][2] for n in names)
    return ClassScore(original=o, matched=m, extra=e, score=_ratio(m, o, e))


def _jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def compare(
    original: Leaves, orig_keys: set[str], restored: Leaves, rest_keys: set[str]
) -> SimilarityReport:
    """Score flattened leaves (see the module docstring for the formula)."""
    counts = {c: [0, 0, 0] for c in CLASSES}  # original, matched, extra
    diffs: list[LeafDifference] = []
    for leaf, (fidelity, value) in original.items():
        counts[fidelity][0] += 1
        got = restored.get(leaf)
        if got is not None and got[1] == value and got[0] == fidelity:
            counts[fidelity][1] += 1
            continue
        item, path = leaf
        if got is None:
            reason = "missing item" if item not in rest_keys else "missing field"
        else:
            reason = "changed value"
        diffs.append(
            LeafDifference(
                item=item,
                path=path,
                fidelity=fidelity,
                reason=reason,
                original=_jsonable(value),
                restored=_jsonable(got[1]) if got else None,
                note=SERVER_REASON if fidelity == Fidelity.SERVER.value else "",
            )
        )
    for leaf, (fidelity, value) in restored.items():
        if leaf in original:
            continue
        counts[fidelity][2] += 1
        item, path = leaf
        diffs.append(
            LeafDifference(
                item=item,
                path=path,
                fidelity=fidelity,
                reason="extra item" if item not in orig_keys else "extra field",
                restored=_jsonable(value),
            )
        )
    report = SimilarityReport(items_original=len(orig_keys), items_restored=len(rest_keys))
    for c, (o, m, e) in counts.items():
        report.classes[c] = ClassScore(original=o, matched=m, extra=e, score=_ratio(m, o, e))

    report.restorable = _union(counts, RESTORABLE)
    report.overall = _union(counts, CLASSES)
    order = {c: i for i, c in enumerate(CLASSES)}
    diffs.sort(key=lambda d: (order.get(d.fidelity, 9), d.item, d.path))
    report.differences = diffs
    return report


UNCAPTURED_PATH = "(not captured)"


def score(original: Snapshot, restored: Snapshot, blobs: Any | None = None) -> SimilarityReport:
    """Score ``restored`` against ``original``.

    ``blobs`` is the store to expand blob-backed items from (table rows); it is
    only needed for snapshots that keep bulk data outside their items.  The
    original's uncaptured entries are unmatched original leaves (see above).
    """
    o_leaves, o_keys = flatten(original.scoring_items(blobs))
    r_leaves, r_keys = flatten(restored.scoring_items(blobs))
    report = compare(o_leaves, o_keys, r_leaves, r_keys)
    if not original.uncaptured:
        return report
    counts = {c: [s.original, s.matched, s.extra] for c, s in report.classes.items()}
    for u in original.uncaptured:
        fidelity = u.fidelity if u.fidelity in counts else Fidelity.CONTENT.value
        counts[fidelity][0] += 1
        report.differences.append(
            LeafDifference(
                item=u.label(), path=UNCAPTURED_PATH, fidelity=fidelity,
                reason="not captured", note=u.reason,
            )
        )
    for c, (o, m, e) in counts.items():
        report.classes[c] = ClassScore(original=o, matched=m, extra=e, score=_ratio(m, o, e))
    report.restorable = _union(counts, RESTORABLE)
    report.overall = _union(counts, CLASSES)
    report.uncaptured = len(original.uncaptured)
    return report


def merge_reports(reports: Iterable[SimilarityReport]) -> SimilarityReport:
    """Combine the reports of several targets by summing their counts."""
    total = SimilarityReport()
    sums = {c: [0, 0, 0] for c in CLASSES}
    for rep in reports:
        total.items_original += rep.items_original
        total.items_restored += rep.items_restored
        total.uncaptured += rep.uncaptured
        total.differences.extend(rep.differences)
        for c in CLASSES:
            s = rep.classes.get(c, ClassScore())
            sums[c][0] += s.original
            sums[c][1] += s.matched
            sums[c][2] += s.extra
    for c, (o, m, e) in sums.items():
        total.classes[c] = ClassScore(original=o, matched=m, extra=e, score=_ratio(m, o, e))
    total.restorable = _union(sums, RESTORABLE)
    total.overall = _union(sums, CLASSES)
    return total
