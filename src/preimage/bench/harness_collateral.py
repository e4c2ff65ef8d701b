"""Collateral through a real harness: what bringing the state back loses of later work.

A task whose destructive steps are followed by unrelated work (a note in ``NOTES.md``, a
row in a maintenance log, a ConfigMap listed) asks what a way back costs that work: a
restore puts the whole captured target back as it was, an undo reverts only what the
destructive calls changed.  Over the task's *work scope* — the system's state the
session can touch (the project directory, the database, the namespace, the mail
account) — the states are captured as the undo suite captures them
(:mod:`preimage.bench.intervening`): before the first regret step (S0), when the later
work begins (S1), after the session (S2) and after the way back (S3).  Collateral is
the items the later work changed whose change S3 lost.

Measured only where every unrelated step after the first regret step comes after the
last one (work interleaved with destruction has no single "later work" to lose).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from preimage.bench.intervening import Outcome, capture_state, leaves_of, measure
from preimage.bench.session import Moment
from preimage.bench.systems.base import Sandbox
from preimage.snapshot_schemas import Snapshot

#: The state a session of each system can touch, by system name.
WORK_SCOPES = {"files": "file://{cwd}", "sqlite": "file://{cwd}", "postgres": "{pg_uri}",
               "kubernetes": "{k8s_uri}/{ns}", "imap": "{imap_uri}/"}


def later_work_step(moments: list[Moment]) -> int | None:
    """The index of the first unrelated step after the last regret step, when all the
    unrelated work after the first regret step follows the last one; else ``None``."""
    regret = [k for k, m in enumerate(moments) if m.regret]
    work = [k for k, m in enumerate(moments) if not m.regret and k > regret[0]]
    if not work or work[0] < regret[-1]:
        return None
    return work[0]


def outside_own(leaves: dict[str, Any], own: list[str]) -> dict[str, Any]:
    """``leaves`` without the files under the folders in ``own``."""
    prefixes = tuple(f"kind=file|path={p.rstrip('/')}" for p in own)
    if not prefixes:
        return leaves
    return {k: v for k, v in leaves.items()
            if not any(k == p or k.startswith(p + "/") for p in prefixes)}


@dataclass
class CollateralWatch:
    """The work scope's states through one run (S0 … S3)."""

    scope: list[str]
    step: int
    blobs: Any
    states: dict[str, dict[str, Snapshot | None]] = field(default_factory=dict)

    @classmethod
    def for_task(cls, system: str, sandbox: Sandbox, moments: list[Moment], blobs: Any
                 ) -> CollateralWatch | None:
        """The watch of a task with later work on a system with a known scope, or ``None``."""
        step = later_work_step(moments)
        scope = WORK_SCOPES.get(system)
        if step is None or scope is None:
            return None
        filled = str(sandbox.fill(scope))
        if "{" in filled:
            return None   # the task's system has no such scope variable
        return cls([filled], step, blobs)

    def take(self, name: str) -> None:
        """Capture the scope as state ``name`` (S1 … S3 follow S0's items)."""
        first = {u: snap for u, snap in self.states.get("s0", {}).items() if snap is not None}
        self.states[name] = capture_state(self.scope, self.blobs, first)

    def record(self, result: Any, reported: set[str], own: list[str]) -> None:
        """Set ``intervening`` (items the later work changed) and ``collateral`` (of those,
        items whose change the way back lost) on ``result``, naming what was lost; items
        under ``own`` (the protector's own store inside the project) are not the work's."""
        if not all(s in self.states for s in ("s0", "s1", "s2", "s3")):
            result.notes.append("collateral not measured: the session stopped before its "
                                "later work")
            return
        out = Outcome()
        for uri in self.scope:
            s0, s1, s2, s3 = (outside_own(leaves_of(uri, self.states[s][uri], self.blobs), own)
                              for s in ("s0", "s1", "s2", "s3"))
            measure(s0, s1, s2, s3, reported, out)
        result.intervening, result.collateral = out.intervening, out.collateral
        if out.lost:
            result.notes.append("later work lost by the way back: " + ", ".join(out.lost[:6]))
