"""The meter's account as a person reads it: score rows and one line per difference.

Values are shown the way their schema declares (``display=``): permission bits
in octal (``0o644``), nanosecond and Unix times as ISO 8601 in UTC; items by
their label (``docs/a.txt``, ``Deployment shop/web``), not their natural key.
A missing or extra item is one line, however many fields it had.  ``access``
and ``server`` differences are summed up by field with the schema's or the
connector's reason, since no restore can (or should) make them equal.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from preimage.similarity.diff import StateDiff
from preimage.similarity.report import LeafDifference, SimilarityReport
from preimage.snapshot_schemas import Fidelity

SCORE_COLUMNS = ("content", "metadata", "access", "server", "restorable")
_WIDTH = 80


def _iso(seconds: int, fraction: str = "") -> str:
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}{fraction}Z"


def show(value: Any, display: str = "") -> str:
    """``value`` as a person reads it, following the schema's ``display`` hint."""
    if value is None:
        return "(none)"
    try:
        if display == "mode" and isinstance(value, int):
            return oct(value)
        if display == "ns" and isinstance(value, int):
            return _iso(value // 1_000_000_000, f".{value % 1_000_000_000:09d}")
        if display == "unix" and isinstance(value, int | float):
            return "session" if value < 0 else _iso(int(value))
    except (OverflowError, OSError, ValueError):
        pass
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "…"


def score_rows(
    total: SimilarityReport, per_target: list[tuple[str, SimilarityReport]]
) -> list[list[str]]:
    """One row per target (plus the total when there are several): the target, then
    each of :data:`SCORE_COLUMNS` as ``0.9876`` or ``n/a``."""
    rows = [*per_target, ("total", total)] if len(per_target) > 1 else per_target
    out = []
    for name, rep in rows:
        cells = [rep.score_of(c).text() for c in SCORE_COLUMNS]
        out.append([name, *cells])
    return out


def difference_line(d: LeafDifference, *, aligned: bool = True) -> str:
    """One difference: class, reason, item and, for a field, original → restored
    (``aligned`` pads class and reason into columns)."""
    head = f"{d.fidelity:8} {d.reason:14} {d.item}" if aligned else f"{d.fidelity} {d.reason}: {d.item}"
    if d.reason in ("missing item", "extra item"):
        return f"{head} ({d.leaves} field{'s' if d.leaves != 1 else ''})"
    if d.reason == "not captured":
        return f"{head} — {d.note}" if d.note else head
    if d.reason == "uncaptured (oracle)":
        side = "backup" if d.original is not None else "live only"
        return f"{head}  {side}: {d.original if d.original is not None else d.restored}"
    before = "(absent)" if d.reason == "extra field" else show(d.original, d.display)
    after = "(absent)" if d.reason == "missing field" else show(d.restored, d.display)
    return f"{head}  {d.path}: {before} → {after}"


def _field_name(d: LeafDifference) -> str:
    tail = d.path.rsplit(".", 1)[-1] if d.path else d.item
    return tail.split("[", 1)[0] or tail


def summary_lines(differences: Iterable[LeafDifference], fidelity: str) -> list[str]:
    """``access`` or ``server`` differences summed up by field, each with its reason
    and one example."""
    groups: dict[tuple[str, str], list[LeafDifference]] = defaultdict(list)
    for d in differences:
        if d.fidelity == fidelity and d.reason not in ("missing item", "extra item"):
            groups[(_field_name(d), d.note)].append(d)
    if not groups:
        return []
    n = sum(len(g) for g in groups.values())
    if fidelity == Fidelity.SERVER.value:
        lines = [f"{n} server-assigned field(s) differ (no client can set them):"]
    else:
        lines = [f"{n} access time(s) differ (reading the restored state moves them; "
                 "not part of restorable):"]
    for (name, note), group in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        ex = group[0]
        example = f"{ex.item}: {show(ex.original, ex.display)} → {show(ex.restored, ex.display)}"
        why = f" — {note}" if note else ""
        lines.append(f"  {name}: {len(group)}{why} (e.g. {example})")
    return lines


def report_lines(report: SimilarityReport, limit: int = 20) -> list[str]:
    """Every difference a person should read: the ``content`` and ``metadata`` ones
    (at most ``limit``), what was never captured, then access and server summaries."""
    restorable = [
        d for d in report.differences
        if d.fidelity in (Fidelity.CONTENT.value, Fidelity.METADATA.value)
        or d.reason in ("missing item", "extra item", "not captured")
    ]
    lines = [f"mapped   {m.text()}" for m in report.mapped]
    lines += [difference_line(d) for d in restorable[: max(limit, 0)]]
    if len(restorable) > limit >= 0:
        lines.append(f"… and {len(restorable) - limit} more (--show N, or --json)")
    if report.uncaptured:
        lines.append(
            f"{report.uncaptured} item(s) in scope were never captured; the score counts each "
            "as lost"
        )
    lines += report.oracles
    lines += summary_lines(report.differences, Fidelity.ACCESS.value)
    lines += summary_lines(report.differences, Fidelity.SERVER.value)
    return lines


def diff_lines(d: StateDiff, limit: int = 200) -> list[str]:
    """A state diff: a summary line, one line per changed item, then what was never read."""
    s = d.summary()
    lines = [
        f"{d.target}: {s['removed']} removed, {s['added']} added, {s['changed']} changed "
        "since the backup"
    ]
    lines += [f"  mapped   {m.text()}" for m in d.mapped]
    for c in d.changes[:limit]:
        fields = f" ({', '.join(c.fields[:6])}{', …' if len(c.fields) > 6 else ''})" if c.fields else ""
        lines.append(f"  {c.change:8} {c.label or c.key}{fields}")
    if len(d.changes) > limit:
        lines.append(f"  … and {len(d.changes) - limit} more (--json lists all)")
    lines += [f"  unknown  {u} (never captured, so no one can tell)" for u in d.uncaptured]
    return lines
