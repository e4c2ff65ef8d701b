"""Which backups a retention policy keeps: restic's ``forget`` rules.

A policy is applied to the complete backups of a group (all of them, or each
session's separately), newest first:

* ``keep_last N`` — the N newest;
* ``keep_within D`` — every backup taken within D of the group's newest one;
* ``keep_hourly/daily/weekly/monthly N`` — for the N newest hours (days, ISO
  weeks, months) that have backups, the newest backup of each.

A backup kept by any rule is kept.  A policy with no rule keeps everything
(``forget`` refuses to run one, so an empty command line never deletes).
``failed`` and ``abandoned`` backups are always removed by a policy run (they
cannot be restored); ``open`` ones (their capture is running) and ``damaged``
ones (they may hold the only copy of what is left) are never removed by a
policy — only by naming them.

A protected call's two backups count as one: the capture taken right after
the call (kind ``post-call``) is no backup of its own for the rules — it is
kept exactly as long as the pre-call backup it belongs to (its ``parent_id``),
so ``undo`` never finds half a pair, and goes with it (or once that one is gone).
The parts of a call (its ``rm`` moved into the trash, what ``preimage guard`` saw it
change: kinds ``trash`` and ``observed`` whose parent is the call's own ``layer``
capture — :mod:`preimage.engine.call_parts`) count with it the same way, and their own
post-call backups with them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from preimage.interface.errors import UsageError
from preimage.store.backend import BackupRow

POST_CALL = "post-call"
PART_KINDS = ("trash", "observed")   # a call's parts, when their parent is its capture
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def parse_duration(text: str) -> timedelta:
    """``2d``, ``36h``, ``1w3d``, ``90m`` → a timedelta; UsageError otherwise."""
    parts = re.findall(r"(\d+)([smhdwy])", text.strip().lower())
    if not parts or "".join(n + u for n, u in parts) != text.strip().lower():
        raise UsageError(
            f"cannot read the duration {text!r} — write it like 2d, 36h, 1w3d or 90m"
        )
    return timedelta(seconds=sum(int(n) * _UNITS[u] for n, u in parts))


@dataclass(frozen=True)
class RetentionPolicy:
    """The ``--keep-*`` rules of ``forget`` (and of the store's quota)."""

    keep_last: int | None = None
    keep_within: timedelta | None = None
    keep_hourly: int | None = None
    keep_daily: int | None = None
    keep_weekly: int | None = None
    keep_monthly: int | None = None
    per_session: bool = False

    @property
    def empty(self) -> bool:
        """True when no rule is set."""
        return all(
            v is None
            for v in (self.keep_last, self.keep_within, self.keep_hourly, self.keep_daily,
                      self.keep_weekly, self.keep_monthly)
        )

    def to_dict(self) -> dict[str, object]:
        """The rules that are set, for the store's settings and ``--json``."""
        out: dict[str, object] = {}
        for name in ("keep_last", "keep_hourly", "keep_daily", "keep_weekly", "keep_monthly"):
            if (value := getattr(self, name)) is not None:
                out[name] = value
        if self.keep_within is not None:
            out["keep_within"] = f"{int(self.keep_within.total_seconds())}s"
        if self.per_session:
            out["per_session"] = True
        return out

    @classmethod
    def from_dict(cls, doc: dict[str, object]) -> RetentionPolicy:
        """Read what :meth:`to_dict` wrote."""
        within = doc.get("keep_within")
        ints = {
            k: int(str(doc[k]))
            for k in ("keep_last", "keep_hourly", "keep_daily", "keep_weekly", "keep_monthly")
            if doc.get(k) is not None
        }
        return cls(
            keep_within=parse_duration(str(within)) if within else None,
            per_session=bool(doc.get("per_session")),
            **ints,
        )

    def describe(self) -> str:
        """``keep-last 10, keep-daily 7`` as a person reads it."""
        parts = [f"{k.replace('_', '-')} {v}" for k, v in self.to_dict().items()
                 if k not in ("keep_within", "per_session")]
        if self.keep_within is not None:
            parts.append(f"keep-within {self.keep_within}")
        if self.per_session:
            parts.append("per session")
        return ", ".join(parts) or "no rule"


def _bucket(fmt: Callable[[datetime], object], rows: list[BackupRow], n: int) -> set[str]:
    kept: set[str] = set()
    seen: list[object] = []
    for row in rows:   # newest first
        key = fmt(datetime.fromtimestamp(row.created_at, tz=UTC))
        if key in seen:
            continue
        if len(seen) >= n:
            break
        seen.append(key)
        kept.add(row.id)
    return kept


def _keep(policy: RetentionPolicy, group: list[BackupRow]) -> set[str]:
    # Newest first by the time each was taken (the ID breaks ties).
    rows = sorted(group, key=lambda r: (r.created_at, r.id), reverse=True)
    kept: set[str] = set()
    if policy.keep_last:
        kept |= {r.id for r in rows[: policy.keep_last]}
    if policy.keep_within is not None and rows:
        newest = rows[0].created_at
        limit = policy.keep_within.total_seconds()
        kept |= {r.id for r in rows if newest - r.created_at <= limit}
    rules: list[tuple[int | None, Callable[[datetime], object]]] = [
        (policy.keep_hourly, lambda t: (t.year, t.month, t.day, t.hour)),
        (policy.keep_daily, lambda t: (t.year, t.month, t.day)),
        (policy.keep_weekly, lambda t: t.isocalendar()[:2]),
        (policy.keep_monthly, lambda t: (t.year, t.month)),
    ]
    for n, fmt in rules:
        if n:
            kept |= _bucket(fmt, rows, n)
    return kept


def select_forget(policy: RetentionPolicy, backups: Iterable[BackupRow]) -> list[BackupRow]:
    """The backups ``policy`` removes, newest first (see the module docstring)."""
    if policy.empty:
        raise UsageError(
            "a retention policy needs at least one --keep-* rule (or name the backups to forget)"
        )
    rows = list(backups)
    kind_of = {r.id: r.kind for r in rows}
    groups: dict[str | None, list[BackupRow]] = {}
    drop: list[BackupRow] = []
    belonging: list[BackupRow] = []   # post-call backups and a call's parts
    for row in rows:
        if row.status in ("failed", "abandoned"):
            drop.append(row)
            continue
        if _belongs(row, kind_of):
            if row.status in ("complete", "overlapped"):
                belonging.append(row)
            continue
        if row.status != "complete":
            continue
        groups.setdefault(row.session if policy.per_session else None, []).append(row)
    for group in groups.values():
        kept = _keep(policy, group)
        drop.extend(r for r in group if r.id not in kept)
    gone = {r.id for r in drop}
    standing = {r.id for r in rows if r.id not in gone and r.status not in ("failed", "abandoned")}
    while True:   # a part's post-call backup goes with the part, the part with its call
        going = [b for b in belonging
                 if b.id not in gone and (b.parent_id in gone or b.parent_id not in standing)]
        if not going:
            break
        drop.extend(going)
        gone.update(b.id for b in going)
        standing.difference_update(b.id for b in going)
    return sorted(drop, key=lambda r: r.id, reverse=True)


def is_part(kind: str, parent_kind: str | None) -> bool:
    """Whether a backup of ``kind`` whose parent is of ``parent_kind`` is a part of the
    call that parent captured (:mod:`preimage.engine.call_parts`)."""
    return kind in PART_KINDS and parent_kind == "layer"


def _belongs(row: BackupRow, kind_of: dict[str, str]) -> bool:
    """Whether ``row`` is kept and forgotten with its parent, not counted on its own."""
    if not row.parent_id:
        return False
    return row.kind == POST_CALL or is_part(row.kind, kind_of.get(row.parent_id))


def with_post_calls(chosen: list[BackupRow], backups: Iterable[BackupRow]) -> list[BackupRow]:
    """``chosen`` plus what belongs to the calls it names: each one's post-call backup,
    its parts (:data:`PART_KINDS`) and theirs."""
    rows = list(backups)
    kind_of = {r.id: r.kind for r in rows}
    ids = {r.id for r in chosen}
    out = list(chosen)
    while True:
        more = [r for r in rows if r.id not in ids and r.parent_id in ids and _belongs(r, kind_of)]
        if not more:
            return out
        out.extend(more)
        ids.update(r.id for r in more)
