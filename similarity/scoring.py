"""Scoring how faithfully a restored state reproduces an original one.

Both snapshots are flattened into leaves ``(item key, field path) → value``,
each leaf carrying the fidelity class declared in the schema.  Items are
matched by their natural key (path; primary key; kind/namespace/name; …), so
order and server-assigned ids never decide a match; inside an item, lists the
schema declares as keyed or unordered are matched by key or as sets
(:func:`preimage.snapshot_schemas.iter_leaves`), so a server that reorders
entries (Kubernetes ``managedFields``) does not look like a change.

For each fidelity class *c*::

    matched_c = |{ l ∈ O_c : l ∈ R and R[l] ≡ O[l] }|
    extra_c   = |{ l ∈ R_c : l ∉ O }|
    score_c   = matched_c / (|O_c| + extra_c)        (n/a when both are 0)

where ``O`` are the original's leaves, ``R`` the restored state's, and ``≡``
is equality of value *and* type (``1``, ``1.0``, ``True`` and ``"1"`` are four
different values).  Every entry of the original's ``uncaptured`` list (state
in scope the capture never read) counts as one original leaf of its class that
nothing can match, so a snapshot that missed something never scores 1.0.  When the
original carries an outside oracle's record (the server's dump of its schema, see
:mod:`.oracle`), every dump line one side has and the other lacks is an unmatched
original (or an extra) ``metadata`` leaf, listed as ``uncaptured (oracle)``.  The
same formula over the union of ``content`` and ``metadata`` gives
``restorable`` (what a client can bring back — the number CI gates on), and
over every class gives ``overall``.  ``access`` (access times, moved by any
reader of the restored state) is scored on its own and is not part of
``restorable``; ``score --on content+metadata+access`` includes it.

Invariants (tested): identical snapshots score 1.0 in every class that has
leaves and n/a in the others; a restore that brought nothing back scores 0.0;
damaging more leaves never raises a score; leaves the original did not have
lower it.  Every difference is listed with its class and the reason (missing
item, missing field, changed value, changed type, extra item, extra field, not
captured); a missing or extra item is listed once, however many leaves it
has.  ``server``-class differences carry the schema's reason (or the
snapshot's, or a generic one) and, when a restore reported the identity remap
that explains them, that remap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
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
from preimage.similarity.oracle import FIDELITY as ORACLE_CLASS
from preimage.similarity.oracle import PATH as ORACLE_PATH
from preimage.similarity.oracle import REASON as ORACLE_REASON
from preimage.similarity.oracle import compare_oracles, describe_line, split_accounted
from preimage.similarity.report import (
    CLASSES,
    ClassScore,
    LeafDifference,
    SimilarityReport,
    merge_reports,
)
from preimage.similarity.streamed import (
    DuplicateKey,
    Unordered,
    compare_paired,
    order_of,
    paired,
)
from preimage.snapshot_schemas import Fidelity, Item, Leaf, Snapshot, iter_leaves
from preimage.snapshot_schemas.oracle import SchemaOracle

__all__ = [
    "ClassScore", "LeafDifference", "Leaves", "SimilarityReport", "compare", "flatten",
    "merge_reports", "score",
]

Leaves = dict[tuple[str, str], Leaf]

SERVER = Fidelity.SERVER.value
UNCAPTURED_PATH = "(not captured)"


def flatten(
    items: Iterable[Item], server_note: Callable[[Item, str], str] | None = None
) -> tuple[Leaves, dict[str, str]]:
    """Leaves of ``items`` keyed by ``(natural key, path)``, and each item's label
    by natural key.  ``server_note`` supplies the reason for a ``server`` leaf
    whose schema gives none."""
    leaves: Leaves = {}
    labels: dict[str, str] = {}
    for item in items:
        k = item.natural_key()
        labels[k] = item.label()
        for path, leaf in iter_leaves(item, Fidelity.CONTENT.value):
            if leaf.fidelity == SERVER and not leaf.note and server_note is not None:
                leaf = leaf._replace(note=server_note(item, path))
            leaves[(k, path)] = leaf
    return leaves, labels


def compare(
    original: Leaves,
    orig_items: Mapping[str, str],
    restored: Leaves,
    rest_items: Mapping[str, str],
    remaps: Iterable[IdRemap] = (),
) -> SimilarityReport:
    """Score flattened leaves (see the module docstring for the formula).

    ``orig_items`` / ``rest_items`` map the natural keys of each side's items to
    their labels (as :func:`flatten` returns them).
    """
    remaps = list(remaps)
    counts = {c: [0, 0, 0] for c in CLASSES}  # original, matched, extra
    diffs: list[LeafDifference] = []
    whole: dict[tuple[str, str], list[Any]] = {}  # (key, reason) → [leaves, class]

    def whole_item(key: str, reason: str, fidelity: str) -> None:
        entry = whole.setdefault((key, reason), [0, fidelity])
        entry[0] += 1
        if CLASS_WEIGHT.get(fidelity, 9) < CLASS_WEIGHT.get(entry[1], 9):
            entry[1] = fidelity

    for (key, path), leaf in original.items():
        fidelity = leaf.fidelity
        counts[fidelity][0] += 1
        got = restored.get((key, path))
        if got is not None and got.fidelity == fidelity and same_value(got.value, leaf.value):
            counts[fidelity][1] += 1
            continue
        if key not in rest_items:
            whole_item(key, "missing item", fidelity)
            continue
        reason = difference_reason(got, leaf, fidelity)
        note = ""
        if fidelity == SERVER:
            remapped = remap_note(
                (key, orig_items.get(key, key)), path, leaf.value, got.value if got else None,
                remaps,
            )
            note = "; ".join(n for n in (leaf.note or SERVER_REASON, remapped) if n)
        diffs.append(LeafDifference(
            item=orig_items.get(key, key), key=key, path=path, fidelity=fidelity,
            reason=reason, original=jsonable(leaf.value),
            restored=jsonable(got.value) if got else None, note=note, display=leaf.display,
        ))
    for (key, path), leaf in restored.items():
        if (key, path) in original:
            continue
        counts[leaf.fidelity][2] += 1
        if key not in orig_items:
            whole_item(key, "extra item", leaf.fidelity)
            continue
        diffs.append(LeafDifference(
            item=rest_items.get(key, key), key=key, path=path, fidelity=leaf.fidelity,
            reason="extra field", restored=jsonable(leaf.value), display=leaf.display,
        ))
    for (key, reason), (n, fidelity) in whole.items():
        label = (orig_items if reason == "missing item" else rest_items).get(key, key)
        diffs.append(LeafDifference(
            item=label, key=key, path="", fidelity=fidelity, reason=reason, leaves=n,
        ))
    report = SimilarityReport(items_original=len(orig_items), items_restored=len(rest_items))
    report.set_counts(counts)
    diffs.sort(key=lambda d: (CLASS_WEIGHT.get(d.fidelity, 9), d.item, d.path))
    report.differences = diffs
    return report


def score(
    original: Snapshot,
    restored: Snapshot | None,
    blobs: Any | None = None,
    *,
    remaps: Iterable[IdRemap] = (),
) -> SimilarityReport:
    """Score ``restored`` against ``original`` (``None``: nothing could be read).

    ``blobs`` is the store to expand blob-backed items from (table rows); it is
    only needed for snapshots that keep bulk data outside their items.
    ``remaps`` are the identity remaps a restore reported; server-class
    differences they explain say so.  The original's uncaptured entries are
    unmatched original leaves (see above).
    """
    report = _compare_items(original, restored, blobs, remaps)
    oracle = getattr(original, "oracle", None)
    if not original.uncaptured and not isinstance(oracle, SchemaOracle):
        return report
    counts = {c: [s.original, s.matched, s.extra] for c, s in report.classes.items()}
    for u in original.uncaptured:
        fidelity = u.fidelity if u.fidelity in counts else Fidelity.CONTENT.value
        counts[fidelity][0] += 1
        report.differences.append(LeafDifference(
            item=u.label(), path=UNCAPTURED_PATH, fidelity=fidelity,
            reason="not captured", note=u.reason,
        ))
    if isinstance(oracle, SchemaOracle):
        _count_oracle(report, counts, oracle, getattr(restored, "oracle", None), blobs)
    report.differences.sort(key=lambda d: CLASS_WEIGHT.get(d.fidelity, 9))  # stable: classes first
    report.set_counts(counts)
    report.uncaptured = len(original.uncaptured)
    return report


def _compare_items(original: Snapshot, restored: Snapshot | None, blobs: Any,
                   remaps: Iterable[IdRemap]) -> SimilarityReport:
    """:func:`compare` of the two snapshots' items, item by item (:mod:`.streamed`): as
    two sorted streams when both promise one order, else holding the live side's items
    by natural key, and the whole way when a side repeats a natural key."""
    remaps = list(remaps)
    order = order_of(original, restored)
    for merge in (True, False) if order is not None else (False,):
        try:
            return compare_paired(paired(
                original.scoring_items(blobs),
                () if restored is None else restored.scoring_items(blobs),
                o_note=original.server_note,
                r_note=None if restored is None else restored.server_note,
                order=order if merge else None,
            ), remaps)
        except Unordered:
            continue   # a side out of its order: pair by natural key
        except DuplicateKey:
            break
    o_leaves, o_items = flatten(original.scoring_items(blobs), original.server_note)
    r_leaves: Leaves = {}
    r_items: dict[str, str] = {}
    if restored is not None:
        r_leaves, r_items = flatten(restored.scoring_items(blobs), restored.server_note)
    return compare(o_leaves, o_items, r_leaves, r_items, remaps)


def _count_oracle(report: SimilarityReport, counts: dict[str, list[int]],
                  original: SchemaOracle, live: SchemaOracle | None, blobs: Any) -> None:
    """Add the schema oracle's differing lines (:mod:`.oracle`) to ``counts``."""
    outcome = compare_oracles(original, live, blobs)
    accounted = split_accounted(outcome, report.differences)
    report.oracles.append(outcome.note if not accounted else
                          f"{outcome.note} ({accounted} of them shown by the snapshot's own "
                          "fields, not counted twice)")
    for lines, side in ((outcome.missing, 0), (outcome.extra, 2)):
        for line in lines:
            counts[ORACLE_CLASS][side] += 1
            entry, text = describe_line(line)
            report.differences.append(LeafDifference(
                item=entry, path=ORACLE_PATH, fidelity=ORACLE_CLASS, reason=ORACLE_REASON,
                original=text if side == 0 else None, restored=text if side == 2 else None,
                note="the server's dump tool prints this line "
                + ("for the backup, not for the live state" if side == 0
                   else "for the live state, not for the backup"),
            ))
