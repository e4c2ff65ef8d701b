"""What a benchmark run produces: one result per (scenario, protector), and totals.

Definitions (the same for every protector):

* **backed up** — before the call ran, the protector held the state of every
  expected target (:meth:`Protector.covers`: its backup's targets contain the
  expected ones), or — when its targets differ — restoring its backup brought
  back every leaf the call destroyed (a before-image of exactly the rows a
  ``DELETE`` matched holds the affected state without holding the table);
  the **backup rate** is the share of scenarios run where that was so;
* **content / metadata / server** — similarity per fidelity class of the
  state after the protector's restore against the ground truth captured
  just before the call (:func:`preimage.similarity.score`); **restorable**
  is the same over the content and metadata leaves together (the number
  ``preimage score --min`` gates on); **damage** is the ``restorable`` score
  right after the call, before any restore (``damage_content`` /
  ``damage_metadata`` per class).  A run with nothing to restore from (no
  backup) is not restored (``restored`` false): its after-restore numbers are
  the damage itself;
* **capture s** — wall time of the protector's work before the call
  (deciding + capturing); **restore s** — wall time of its restore;
* **stored bytes** — what the backup added to its store (blob bytes for
  preimage, the shadow repository for the workspace baseline, the copy for
  the content-only baseline); **moved bytes** — what a rewritten call moved
  into the store's trash instead of deleting it (``rm`` → ``preimage
  trash``): held by the store, though no blob was written; **model
  tokens** — tokens the protector spent on a model (0 for rule tiers and
  baselines).

Scenarios of the ``undo`` suite (intervening changes after the call, see
:mod:`preimage.bench.intervening`) add **collateral** (intervening changes
lost), **reverted** (share of the call's changes brought back where nothing
conflicts), **conflicts reported** and **silently overwritten**.

Totals average the scenarios a protector ran; a scenario it does not cover
(no copier for that system) is listed with the reason and left out of its
averages.
"""

from __future__ import annotations

import statistics
from typing import Literal

from pydantic import BaseModel, Field

Status = Literal["ok", "not covered", "error"]
#: Below this many runs a 95th percentile is the maximum (nearest rank): report the maximum.
P95_MIN_RUNS = 20


class RunResult(BaseModel):
    """One scenario under one protector."""

    scenario: str
    title: str
    category: str
    system: str
    protector: str
    label: str
    status: Status = "ok"
    reason: str = ""
    backed_up: bool = False
    coverage: float = 0.0
    damage: float | None = None
    damage_content: float | None = None
    damage_metadata: float | None = None
    restored: bool = Field(False, description="whether a restore ran (a backup was there)")
    rewritten: str = Field("", description="the call the protector ran instead (rm → trash)")
    content: float | None = None
    metadata: float | None = None
    server: float | None = None
    restorable: float | None = None
    capture_s: float | None = None
    restore_s: float | None = None
    stored_bytes: int = 0
    moved_bytes: int = Field(0, description="bytes a rewritten call moved into the trash")
    model_tokens: int = 0
    seconds: float = 0.0
    tier: str = ""
    rules: list[str] = Field(default_factory=list)
    targets: list[str] = Field(default_factory=list)
    expected: list[str] = Field(default_factory=list)
    call_exit: int | None = None
    calls: int | None = Field(None, description="a task's calls, every one seen by the protector")
    moments: int | None = Field(None, description="a task's regret moments")
    moments_covered: int | None = Field(
        None, description="regret moments whose state the protector held before the step")
    differences: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    # the undo suite (None elsewhere)
    intervening: int | None = Field(None, description="items a person changed after the call")
    collateral: int | None = Field(None, description="of those, items whose change was lost")
    call_leaves: int | None = Field(None, description="leaves the call changed, outside conflicts")
    reverted: float | None = Field(None, description="share of call_leaves brought back")
    conflicts: int | None = Field(None, description="items both the call and the person changed")
    conflicts_reported: int | None = None
    silently_overwritten: int | None = Field(
        None, description="conflicts not reported where the person's change was lost")
    call_s: float | None = Field(None, description="the call's own run time")
    post_s: float | None = Field(
        None, description="the protector's work after the call (the post-call capture)")
    post_bytes: int | None = Field(None, description="bytes the post-call capture stored")
    # the real-harness path (empty elsewhere)
    harness: str = Field("", description="the real harness the task ran through")
    call_gaps: list[float] = Field(
        default_factory=list,
        description="per tool call, seconds from the model's answer to the harness's next "
        "request: the tool's run plus every hook around it")


class NotRun(BaseModel):
    """A scenario that did not run at all, and why."""

    scenario: str
    title: str
    category: str
    system: str
    reason: str


class Totals(BaseModel):
    """One protector over all the scenarios it ran."""

    protector: str
    label: str
    ran: int = 0
    not_covered: int = 0
    errors: int = 0
    backup_rate: float | None = None
    content: float | None = None
    metadata: float | None = None
    server: float | None = None
    restorable: float | None = None
    damage: float | None = Field(None, description="mean restorable right after the call")
    capture_p50_s: float | None = None
    capture_p95_s: float | None = Field(
        None, description=f"None below {P95_MIN_RUNS} runs, where it would be the maximum")
    capture_max_s: float | None = None
    per_call_s: float | None = Field(
        None, description="the protector's time over every call it saw (a task's reads and "
        "later work included), per call")
    restore_mean_s: float | None = None
    stored_bytes: int = 0
    moved_bytes: int = 0
    rewritten: int = Field(0, description="runs whose call the protector rewrote")
    model_tokens: int = 0
    intervening: int | None = None
    collateral: int | None = None
    reverted: float | None = None
    conflicts: int | None = None
    conflicts_reported: int | None = None
    silently_overwritten: int | None = None
    capture_mean_s: float | None = None
    call_mean_s: float | None = None
    post_mean_s: float | None = None
    post_to_call: float | None = Field(
        None, description="post-call capture time over the call's time, summed over runs")
    post_to_pre: float | None = Field(
        None, description="post-call capture time over the pre-call capture's, summed")
    post_bytes: int | None = None
    short_of: list[str] = Field(
        default_factory=list,
        description="scenarios not backed up or below 1.0 content/metadata, with the reason",
    )


class BenchReport(BaseModel):
    """A whole benchmark run."""

    version: str
    suite: str
    started_at: str
    seconds: float
    protectors: dict[str, str] = Field(description="name → label, in column order")
    runs: list[RunResult] = Field(default_factory=list)
    not_run: list[NotRun] = Field(default_factory=list)
    totals: list[Totals] = Field(default_factory=list)

    def total(self, protector: str) -> Totals:
        """The totals row of ``protector``."""
        for t in self.totals:
            if t.protector == protector:
                return t
        raise KeyError(protector)


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[idx]


def _shortfall(r: RunResult) -> str | None:
    if r.status == "error":
        return f"{r.scenario}: error: {r.reason}"
    if not r.backed_up:
        missing = r.reason or "the expected state was not captured before the call"
        return f"{r.scenario}: not backed up ({missing})"
    failed = [n for n in r.notes if n.startswith("restore failed")]
    if failed:
        return f"{r.scenario}: {failed[0]}"
    low = [
        f"{name} {value:.3f}"
        for name, value in (("content", r.content), ("metadata", r.metadata))
        if value is not None and value < 1.0
    ]
    if low:
        why = "; ".join(r.differences[:3]) or "; ".join(r.notes[:2])
        return f"{r.scenario}: {', '.join(low)}" + (f" — {why}" if why else "")
    return None


def _weighted_reverted(runs: list[RunResult]) -> float | None:
    """The share of every run's call leaves brought back (runs weighted by their leaves)."""
    leaves = [(r.call_leaves, r.reverted) for r in runs if r.call_leaves and r.reverted is not None]
    total = sum(n for n, _ in leaves)
    return sum(n * share for n, share in leaves) / total if total else None


def _ratio(runs: list[RunResult], num: str, den: str) -> float | None:
    """``sum(num) / sum(den)`` over the runs that have both (``None``: none has)."""
    pairs = [(a, b) for r in runs
             if (a := getattr(r, num)) is not None and (b := getattr(r, den)) is not None]
    total = sum(b for _, b in pairs)
    return sum(a for a, _ in pairs) / total if pairs and total > 0 else None


def _per_call(runs: list[RunResult]) -> float | None:
    """Protector time per call seen: a task counts its calls, a one-call scenario one."""
    timed = [(r.capture_s, r.calls or 1) for r in runs if r.capture_s is not None]
    calls = sum(n for _, n in timed)
    return sum(t for t, _ in timed) / calls if calls else None


def totals_for(protector: str, label: str, runs: list[RunResult]) -> Totals:
    """Aggregate the runs of one protector."""
    mine = [r for r in runs if r.protector == protector]
    ok = [r for r in mine if r.status == "ok"]
    scored = [r for r in mine if r.status in ("ok", "error")]

    def vals(attr: str) -> list[float]:
        return [v for r in ok if (v := getattr(r, attr)) is not None]

    def total(attr: str) -> int | None:
        got = vals(attr)
        return int(sum(got)) if got else None

    return Totals(
        protector=protector,
        label=label,
        ran=len(ok),
        not_covered=sum(1 for r in mine if r.status == "not covered"),
        errors=sum(1 for r in mine if r.status == "error"),
        backup_rate=_mean([1.0 if r.backed_up else 0.0 for r in scored]),
        content=_mean(vals("content")),
        metadata=_mean(vals("metadata")),
        server=_mean(vals("server")),
        restorable=_mean(vals("restorable")),
        damage=_mean(vals("damage")),
        capture_p50_s=_quantile(vals("capture_s"), 0.5),
        capture_p95_s=(_quantile(vals("capture_s"), 0.95)
                       if len(vals("capture_s")) >= P95_MIN_RUNS else None),
        capture_max_s=max(vals("capture_s"), default=None),
        per_call_s=_per_call(ok),
        restore_mean_s=_mean(vals("restore_s")),
        stored_bytes=sum(r.stored_bytes for r in ok),
        moved_bytes=sum(r.moved_bytes for r in ok),
        rewritten=sum(1 for r in ok if r.rewritten),
        model_tokens=sum(r.model_tokens for r in ok),
        intervening=total("intervening"),
        collateral=total("collateral"),
        reverted=_weighted_reverted(ok),
        conflicts=total("conflicts"),
        conflicts_reported=total("conflicts_reported"),
        silently_overwritten=total("silently_overwritten"),
        capture_mean_s=_mean(vals("capture_s")),
        call_mean_s=_mean(vals("call_s")),
        post_mean_s=_mean(vals("post_s")),
        post_to_call=_ratio(ok, "post_s", "call_s"),
        post_to_pre=_ratio(ok, "post_s", "capture_s"),
        post_bytes=total("post_bytes"),
        short_of=[s for r in scored if (s := _shortfall(r)) is not None],
    )
