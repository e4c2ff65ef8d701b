"""Running a multi-turn task: a session of calls, some of them regret moments.

A task (a scenario with ``then:`` steps) is one agent session: the earlier
calls that read (``before:``), the first destructive call (``call:``, its
targets in ``expected_lost``), then more steps — further regret moments
(``regret: true`` with the targets each destroys in ``lost``) or unrelated
work.  Every call goes to the protector as a harness hook would send it; a
regret moment is where it must hold the state first.

Per (task, protector), in a fresh sandbox:

1. the system seeds the task's state and the earlier calls run;
2. before the first regret moment, the targets of every regret moment are
   captured into the truth store: the ground truth is their state before the
   session's first destructive step;
3. each call goes through the protector (its time is counted per call) and
   runs as the agent sent it (or as the protector rewrote it);
4. after the last step the live state is scored (*damage*);
5. the protector restores the backups of the regret moments, latest first,
   so the earliest state of each target wins, and the live state is scored
   again.

A regret moment counts as covered when the protector's backup before that step
held every target the step destroyed; the task is backed up when every moment
was.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import preimage
from preimage.bench.protector import NotCoveredError, Protection, Protector, RunContext
from preimage.bench.results import RunResult
from preimage.bench.runner import (
    SeedCache,
    _backed_up_by_evidence,
    _differences,
    capture_truth,
    guarded_run,
    opened_scene,
    record_damage,
    run_call,
    score_live,
)
from preimage.bench.scenario import CallSpec, Scenario
from preimage.bench.systems.base import System
from preimage.store.store import Store


@dataclasses.dataclass
class Moment:
    """One call of the session: what it is, and (for a regret step) what it destroys."""

    call: CallSpec
    lost: list[str]
    regret: bool


def session_moments(ctx: RunContext) -> list[Moment]:
    """The first regret call, then every ``then:`` step, filled from the sandbox."""
    moments = [Moment(ctx.call, list(ctx.expected), True)]
    for step in ctx.scenario.then:
        filled = ctx.sandbox.fill(step.model_dump())
        call = CallSpec(tool=filled["tool"], input=filled["input"])
        moments.append(Moment(call, [str(u) for u in filled["lost"]], bool(filled["regret"])))
    return moments


def run_session(
    scenario: Scenario,
    system: System,
    protector: Protector,
    root: Path,
    *,
    keep: bool = False,
    cache: SeedCache | None = None,
) -> RunResult:
    """One multi-turn task under one protector (see the module's description)."""
    with guarded_run(scenario, system, protector, root, keep=keep) as run, \
            opened_scene(run, scenario, system, protector, root, cache) as (ctx, truth_store):
        result, sandbox = run.result, ctx.sandbox
        truth = ctx.truth = {}
        protected: list[tuple[RunContext, Protection]] = []
        covered: list[bool] = []
        missing: list[str] = []
        protector_s = 0.0
        moments = session_moments(ctx)
        # The state that must survive is every regret target's state before the session's
        # first destructive step (targets overlap: a namespace a later step names holds the
        # object an earlier step deleted).
        every = [u for m in moments if m.regret for u in m.lost]
        truth.update(capture_truth(list(dict.fromkeys(every)), truth_store))
        for k, moment in enumerate(moments):
            if moment.regret:
                scratch = ctx.scratch / f"moment-{k}"
                scratch.mkdir()
                step_ctx = dataclasses.replace(ctx, call=moment.call, expected=moment.lost,
                                               scratch=scratch)
                started = time.perf_counter()
                try:
                    protection = protector.before(step_ctx)
                except NotCoveredError as exc:
                    result.status, result.reason = "not covered", str(exc)
                    return result
                protector_s += time.perf_counter() - started
                record_moment(result, protection)
                protected.append((step_ctx, protection))
                for uri in moment.lost:
                    ok = protector.covers(step_ctx, protection, uri)
                    covered.append(ok)
                    if not ok:
                        missing.append(f"step {k + 1}: {uri}")
                outcome = run_call(protection.call or moment.call, system, sandbox)
                system.settle(sandbox)
                protector.after_call(step_ctx, protection, outcome.exit_code)
                result.moved_bytes += protector.moved_bytes(step_ctx, protection)
            else:
                started = time.perf_counter()
                protector.observe(ctx, moment.call)
                protector_s += time.perf_counter() - started
                outcome = run_call(moment.call, system, sandbox)
                system.settle(sandbox)
            if outcome.exit_code != 0:
                result.notes.append(
                    f"step {k + 1} exited {outcome.exit_code}: {outcome.output[-300:]}")
        result.capture_s = protector_s
        result.calls = len(moments) + len(scenario.before)
        finish_session(result, ctx, protector, truth_store,
                       SessionAccount(moments, protected, covered, missing))
    return run.result


@dataclasses.dataclass
class SessionAccount:
    """What a session's protector did: each regret moment's protection, and which of the
    moments' targets it held before the step (``missing``: ``step N: uri`` of the others)."""

    moments: list[Moment]
    protected: list[tuple[RunContext, Protection]]
    covered: list[bool]
    missing: list[str]


def finish_session(result: RunResult, ctx: RunContext, protector: Protector,
                   truth_store: Store, account: SessionAccount) -> None:
    """After the session's last step: coverage, the damage, the restore of every regret
    moment's backup (latest first, so the earliest state of each target wins), the score."""
    truth, sandbox, system = ctx.truth, ctx.sandbox, ctx.system
    moments, protected, covered, missing = (account.moments, account.protected,
                                            account.covered, account.missing)
    result.moments = sum(1 for m in moments if m.regret)
    result.moments_covered = result.moments - len({m.split(":")[0] for m in missing})
    result.coverage = sum(covered) / len(covered) if covered else 0.0
    result.backed_up = bool(covered) and all(covered)
    if missing:
        result.reason = "not captured before the call: " + ", ".join(missing)
    damaged = score_live(truth, truth_store)
    record_damage(result, damaged)
    restorable = [(c, p) for c, p in protected if p.backup_id is not None]
    if restorable:
        result.restored = True
        started = time.perf_counter()
        for step_ctx, protection in reversed(restorable):
            try:
                result.notes.extend(protector.restore(step_ctx, protection))
            except preimage.PreimageError as exc:  # a failed restore is a result
                result.notes.append(f"restore failed: {exc}")
        result.restore_s = time.perf_counter() - started
    system.settle(sandbox)
    final = score_live(truth, truth_store)
    result.content = final.classes["content"].score
    result.metadata = final.classes["metadata"].score
    result.server = final.classes["server"].score
    result.restorable = final.restorable.score
    result.differences = _differences(final)
    result.expected = list(truth)
    if restorable and not result.backed_up:
        _backed_up_by_evidence(result, damaged, final, protector.evidence)
        if result.backed_up:  # every destroyed leaf came back: each moment was held
            result.moments_covered = result.moments


def record_moment(result: RunResult, protection: Protection) -> None:
    """Add one regret moment's protection to the run's account."""
    result.stored_bytes += protection.stored_bytes
    result.model_tokens += protection.model_tokens
    if protection.tier and protection.tier not in result.tier.split(","):
        result.tier = ",".join(t for t in (result.tier, protection.tier) if t)
    result.rules += [r for r in protection.rules if r not in result.rules]
    result.targets += [t for t in protection.targets if t not in result.targets]
    result.notes.extend(protection.notes)
    if protection.call is not None:
        rewrite = str(protection.call.input.get("command", protection.call.input))
        result.rewritten = "; ".join(x for x in (result.rewritten, rewrite) if x)
