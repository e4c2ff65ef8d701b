"""Scenarios with intervening changes: undo one call without destroying later work.

A scenario of the ``undo`` suite has, besides the agent's destructive
``call``, the changes a person makes right after it (``after``): edits of
other items and of some of the items the call changed.  Per (scenario,
protector), in a fresh sandbox:

1. seed; capture the expected targets — *S0*, the state before the call;
2. the protector acts before the call (as in the regret benchmark);
3. the call runs; the protector sees it finish (the undo protector's layer
   takes its post-call capture); capture — *S1*;
4. the person's changes run (no protector sees them); capture — *S2*;
5. the protector brings the state back its way; capture — *S3*.

Every capture is compared item by item (natural keys) over restorable leaves
(``content`` and ``metadata``), minus the fields the connector declares as
derived (a directory's mtime, a table's row count, a folder's message count),
which move whenever anything else does — the leaves an undo itself tells
changes apart by (:meth:`Reverter.leaves <preimage.restoration.revert.Reverter.leaves>`:
a Trac ticket's change log keyed by each change's time).  Then:

* the call's changes are the leaves S0 → S1 changed (a whole item created or
  removed counts as one); the person's changes those S1 → S2 changed;
* an item is a **conflict** when both changed the same leaf (or one of them
  created or removed the item the other changed) and the person did not put it
  back as it was before the call;
* **collateral** — items the person changed whose change S3 lost (goal 0);
* **reverted** — the share of the call's changed leaves, in items without a
  conflict and not already put back by the person, that S3 has as S0 had them
  (goal 1.0);
* **conflicts reported** — conflicts the protector reported (goal: all);
  **silently overwritten** — conflicts it did not report where S3 lost the
  person's change (goal 0).

The cost of knowing the call's delta is measured too: the call's own run time,
the protector's post-call capture (step 3; only ``undo`` takes one), its time
relative to the call's and to the pre-call capture's, and the bytes it stored
(unchanged blobs dedupe, so only what the call wrote and a snapshot document).

A capture of a target that is gone (a dropped database) counts as empty.
Records that leave a target's listing while they still exist (a Trac ticket
unlinked from a deleted milestone) are followed from S0, as the undo's own
captures follow them.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import preimage
from preimage.bench.protector import Protector
from preimage.bench.results import RunResult
from preimage.bench.scenario import Scenario
from preimage.bench.systems.base import System
from preimage.interface.registry import get_connector
from preimage.interface.target import Target
from preimage.restoration.revert import compared_leaves, reverter_for
from preimage.snapshot_schemas import Snapshot

Leaves = dict[str, dict[str, tuple[str, Any]]]   # item key → leaf path → (type, value)
_GONE: Any = object()                              # an item, or a leaf, that is not there


def absolute_key(uri: str, key: str) -> str:
    """An item's natural key that names the same item whatever target it was captured
    through: a file's path is made absolute (other connectors' keys already are)."""
    prefix = "kind=file|path="
    target = Target.parse(uri)
    if target.scheme == "file" and key.startswith(prefix):
        return prefix + os.path.normpath(os.path.join(target.path, key[len(prefix):]))
    return key


def leaves_of(uri: str, snap: Snapshot | None, blobs: Any) -> Leaves:
    """Restorable, non-derived leaves of every item of ``snap`` (a capture of ``uri``;
    empty when ``None``), by :func:`absolute_key`."""
    if snap is None:
        return {}
    rv = reverter_for(get_connector(Target.parse(uri).scheme), snap)
    return {absolute_key(uri, k): v for k, v in compared_leaves(snap, blobs, rv).items()}


def _changed(a: dict[str, Any] | None, b: dict[str, Any] | None) -> set[str]:
    """Leaf paths that differ between two versions of an item; ``{""}`` when the item was
    created or removed."""
    if a is None or b is None:
        return set() if a is b else {""}
    return {p for p in a.keys() | b.keys() if a.get(p, _GONE) != b.get(p, _GONE)}


def _lost(was: dict[str, Any] | None, now: dict[str, Any] | None, paths: set[str]) -> bool:
    """Whether ``now`` no longer has ``was`` at ``paths`` (``""``: the whole item)."""
    if "" in paths or was is None or now is None:
        return was != now
    return any(was.get(p, _GONE) != now.get(p, _GONE) for p in paths)


@dataclass
class Outcome:
    """The three metrics of one run (see the module docstring)."""

    intervening: int = 0
    collateral: int = 0
    call_leaves: int = 0
    reverted_leaves: int = 0
    conflicts: list[str] = field(default_factory=list)
    reported: int = 0
    silent: int = 0
    lost: list[str] = field(default_factory=list)      # what collateral lost, for the notes
    missed: list[str] = field(default_factory=list)    # call changes not reverted

    @property
    def reverted(self) -> float | None:
        """Share of the call's leaves (outside conflicts) that came back; ``None``: none."""
        return self.reverted_leaves / self.call_leaves if self.call_leaves else None


def measure(s0: Leaves, s1: Leaves, s2: Leaves, s3: Leaves, reported: set[str],
            out: Outcome | None = None) -> Outcome:
    """Compare the four states of one target (``reported``: item keys the protector
    reported as conflicts); adds to ``out`` when given."""
    res = out or Outcome()
    for key in sorted(s0.keys() | s1.keys() | s2.keys() | s3.keys()):
        b, t, p, r = (s.get(key) for s in (s0, s1, s2, s3))
        call, person = _changed(b, t), _changed(t, p)
        overlap = (call & person) if "" not in call | person else {""}
        conflict = bool(call and person) and bool(overlap) and _lost(b, p, overlap)
        if person:
            res.intervening += 1
            if _lost(p, r, person):
                res.collateral += 1
                res.lost.append(key)
        if conflict:
            res.conflicts.append(key)
            if key in reported:
                res.reported += 1
            elif _lost(p, r, person | call):
                res.silent += 1
            continue
        for path in call:
            if not _lost(b, p, {path}):
                continue  # put back by the person already: nothing left to revert
            res.call_leaves += 1
            if not _lost(b, r, {path}):
                res.reverted_leaves += 1
            else:
                res.missed.append(f"{key} {path}".strip())
    return res


def capture_state(uris: list[str], blobs: Any, previous: dict[str, Snapshot] | None = None
                  ) -> dict[str, Snapshot | None]:
    """Each target captured by its connector (``None`` when it cannot be read any more),
    following ``previous``'s items out of the target's listing where the connector can."""
    out: dict[str, Snapshot | None] = {}
    for uri in uris:
        target = Target.parse(uri)
        conn = get_connector(target.scheme)
        follow = getattr(conn, "capture_following", None)
        before = (previous or {}).get(uri)
        try:
            if follow is not None and before is not None:
                out[uri] = follow(target, blobs, before)
            else:
                out[uri] = conn.capture(target, blobs)
        except preimage.PreimageError:
            out[uri] = None
    return out


def run_intervening(
    scenario: Scenario,
    system: System,
    protector: Protector,
    root: Path,
    *,
    keep: bool = False,
    cache: Any = None,
) -> RunResult:
    """One scenario of the ``undo`` suite under one protector (see the module docstring)."""
    from preimage.bench.runner import guarded_run, opened_scene, protect, run_call, run_earlier

    with guarded_run(scenario, system, protector, root, keep=keep) as run, \
            opened_scene(run, scenario, system, protector, root, cache) as (ctx, truth):
        result, sandbox, expected = run.result, ctx.sandbox, ctx.expected
        first = capture_state(expected, truth.blobs)
        ctx.truth = {u: s for u, s in first.items() if s is not None}
        protection = protect(result, ctx, protector)
        if protection is None:
            return result
        if result.reason:
            # The measured scope is wider than the call on purpose (it holds the
            # person's other changes); what the call changed is judged by *reverted*.
            result.notes.append(f"narrower than the measured scope — {result.reason}")
            result.reason = ""
        started = time.perf_counter()
        outcome = run_call(protection.call or ctx.call, system, sandbox)
        result.call_s = time.perf_counter() - started
        result.call_exit = outcome.exit_code
        if outcome.exit_code != 0:
            result.notes.append(f"call exited {outcome.exit_code}: {outcome.output[-300:]}")
        system.settle(sandbox)
        started = time.perf_counter()
        protector.after_call(ctx, protection, outcome.exit_code)
        if protection.post_bytes is not None:
            result.post_s = time.perf_counter() - started
            result.post_bytes = protection.post_bytes
        followed = ctx.truth
        second = capture_state(expected, truth.blobs, followed)
        for n, change in enumerate(scenario.after, 1):
            run_earlier(change, system, sandbox, f"intervening change {n} ({change.tool})")
        system.settle(sandbox)
        third = capture_state(expected, truth.blobs, followed)
        if protection.backup_id is not None:
            started = time.perf_counter()
            try:
                result.notes.extend(protector.restore(ctx, protection))
            except preimage.PreimageError as exc:  # a failed restore is a result
                result.notes.append(f"restore failed: {exc}")
            result.restore_s = time.perf_counter() - started
        system.settle(sandbox)
        fourth = capture_state(expected, truth.blobs, followed)
        reported = set(protection.reported)
        got = Outcome()
        for uri in expected:
            s0, s1, s2, s3 = (leaves_of(uri, s[uri], truth.blobs)
                              for s in (first, second, third, fourth))
            measure(s0, s1, s2, s3, reported, got)
        _record(result, got)
    return run.result


def _record(result: RunResult, got: Outcome) -> None:
    result.intervening = got.intervening
    result.collateral = got.collateral
    result.call_leaves = got.call_leaves
    result.reverted = got.reverted
    result.conflicts = len(got.conflicts)
    result.conflicts_reported = got.reported
    result.silently_overwritten = got.silent
    if got.lost:
        result.notes.append("intervening changes lost: " + ", ".join(got.lost[:5]))
    if got.missed:
        result.notes.append("call changes not reverted: " + ", ".join(got.missed[:5]))
    if got.conflicts:
        result.notes.append("conflicts: " + ", ".join(got.conflicts[:5]))
