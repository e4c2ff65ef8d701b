"""Running scenarios under protectors: seed, ground truth, protect, call, restore, score.

Per (scenario, protector), in a fresh sandbox:

1. the system seeds the scenario's state;
2. the expected targets are captured into a private *truth* store — the
   ground truth every protector is scored against;
3. the protector acts before the call (timed) and says what it holds;
4. the call runs as the agent sent it (or as the protector rewrote it);
5. the live state is scored against the truth (*damage*);
6. the protector restores (timed) and the live state is scored again.

Servers start once per run, on first use, and stop at the end.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import preimage
from preimage.bench.protector import NotCoveredError, Protection, Protector, RunContext
from preimage.bench.results import RunResult
from preimage.bench.scenario import CallSpec, Scenario
from preimage.bench.systems.base import CallOutcome, Sandbox, System, run_shell
from preimage.interface.registry import get_connector
from preimage.interface.target import Target
from preimage.similarity import SimilarityReport, merge_reports, score
from preimage.similarity.render import difference_line
from preimage.snapshot_schemas import Snapshot
from preimage.store.store import Store

Progress = Callable[[str], None]
MAX_DIFFERENCES = 8
_LOST = ("missing item", "missing field", "changed value", "changed type")
_UNRESTORABLE = ("server", "access")  # no restore brings them back; reads move access times


def capture_truth(expected: list[str], store: Store) -> dict[str, Snapshot]:
    """The ground truth: each expected target captured with its connector."""
    truth: dict[str, Snapshot] = {}
    for uri in expected:
        target = Target.parse(uri)
        truth[uri] = get_connector(target.scheme).capture(target, store.blobs)
    return truth


def score_live(truth: dict[str, Snapshot], store: Store) -> SimilarityReport:
    """Similarity of the live state of every expected target to its ground truth.

    A target the connector cannot read any more (a dropped database) scores
    as empty.  Each difference's item is prefixed with its target's URI.
    """
    scratch = store.scratch()
    reports = []
    try:
        for uri, original in truth.items():
            target = Target.parse(uri)
            live: Snapshot | None
            try:
                live = get_connector(target.scheme).capture(target, scratch)
            except preimage.PreimageError:
                live = None  # nothing left to read: scored as empty
            rep = score(original, live, scratch)
            for d in rep.differences:
                d.item = f"{uri} {d.item}"
            reports.append(rep)
    finally:
        shutil.rmtree(scratch.root, ignore_errors=True)
    return merge_reports(reports)


def run_call(call: CallSpec, system: System, sandbox: Sandbox) -> CallOutcome:
    """Run the destructive call: a shell line with bash, an MCP call with the system."""
    if call.is_shell:
        command = call.input.get("command")
        if not isinstance(command, str):
            raise preimage.UsageError("a shell call needs input.command")
        return run_shell(command, sandbox)
    server, tool = call.mcp
    return system.run_mcp(server, tool, call.input, sandbox)


def _differences(report: SimilarityReport) -> list[str]:
    out = []
    for d in report.differences:
        if d.fidelity in _UNRESTORABLE:
            continue
        out.append(difference_line(d, aligned=False))
        if len(out) == MAX_DIFFERENCES:
            break
    return out


@dataclass
class SeedCache:
    """Seeded sandboxes of systems whose whole state is files, reused across protectors.

    The first protector's run seeds the scenario and the tree is copied with
    ``cp -a`` (modes, times, links, xattrs); later runs of the same scenario
    start from that copy at the same path instead of seeding again (a
    virtualenv with packages takes a minute to build, a copy a second).
    """

    seeded: dict[str, tuple[Path, dict[str, str], dict[str, str]]] = field(default_factory=dict)

    def sandbox(self, scenario: Scenario, system: System, where: Path) -> Sandbox:
        """A seeded sandbox at ``where``: copied from the cache, or seeded (and cached)."""
        if where.exists():
            shutil.rmtree(where)
        hit = self.seeded.get(scenario.id)
        if hit is not None:
            template, variables, env = hit
            subprocess.run(["cp", "-a", str(template), str(where)], check=True)
            return Sandbox(root=where, variables=dict(variables), env=dict(env))
        sandbox = Sandbox.create(where, scenario.cwd)
        system.seed(scenario, sandbox)
        if system.files_only:
            template = where.parent / "seeded"
            subprocess.run(["cp", "-a", str(where), str(template)], check=True)
            self.seeded[scenario.id] = (template, dict(sandbox.variables), dict(sandbox.env))
        return sandbox


def _shorten_paths(result: RunResult, root: str) -> None:
    """Write the (deleted) sandbox's path as ``<sandbox>`` in what the report shows."""

    def short(text: str) -> str:
        return text.replace(root, "<sandbox>")

    result.reason = short(result.reason)
    for name in ("targets", "expected", "differences", "notes"):
        setattr(result, name, [short(t) for t in getattr(result, name)])



def _backed_up_by_evidence(
    result: RunResult, damaged: SimilarityReport, final: SimilarityReport,
    classes: tuple[str, ...] = ("content", "metadata"),
) -> None:
    """Count a backup whose targets differ from the expected ones when it brought back
    every leaf the call destroyed (a predicate-scoped before-image of exactly the rows a
    DELETE touched holds the affected state without containing the whole table)."""
    lost = {
        (d.item, d.path) for d in damaged.differences
        if d.fidelity in classes and d.reason in _LOST
    }
    still = {(d.item, d.path) for d in final.differences if d.fidelity in classes}
    still_items = {item for item, _ in still}

    def came_back(item: str, path: str) -> bool:
        # a whole missing item (path "") came back only if no field of it still differs
        return (item, path) not in still and (item, "") not in still and (
            path != "" or item not in still_items
        )

    if lost and all(came_back(item, path) for item, path in lost):
        result.backed_up = True
        result.notes.append(
            f"{result.reason}; but every leaf the call changed came back from the backup, "
            "so it held the affected state"
        )
        result.reason = ""


@dataclass
class GuardedRun:
    """A run's result, and its sandbox once there is one (to tear down)."""

    result: RunResult
    sandbox: Sandbox | None = None


@contextmanager
def guarded_run(scenario: Scenario, system: System, protector: Protector, root: Path, *,
                keep: bool = False) -> Iterator[GuardedRun]:
    """A fresh ``root`` for one (scenario, protector) run; an exception in the block is the
    run's ``error`` result; the sandbox is torn down and, unless ``keep``, removed."""
    run = GuardedRun(RunResult(
        scenario=scenario.id, title=scenario.title, category=scenario.category,
        system=scenario.system, protector=protector.name, label=protector.label,
    ))
    result = run.result
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    began = time.perf_counter()
    try:
        yield run
    except Exception as exc:  # one broken run must not stop the benchmark
        result.status = "error"
        result.reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:400]
        result.notes.append(traceback.format_exc(limit=4)[-1500:])
    finally:
        if run.sandbox is not None:
            try:
                system.teardown(run.sandbox)
            except Exception as exc:  # leftovers on a test server are worth a note, no more
                result.notes.append(f"teardown: {exc}")
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
            if run.sandbox is not None:
                shutil.rmtree(run.sandbox.root, ignore_errors=True)
                _shorten_paths(result, str(run.sandbox.root))
        result.seconds = time.perf_counter() - began


def run_earlier(call: CallSpec, system: System, sandbox: Sandbox, what: str) -> None:
    """Run a call that sets the scene (filled from the sandbox); raise if it fails."""
    done = run_call(CallSpec.model_validate(sandbox.fill(call.model_dump())), system, sandbox)
    if done.exit_code != 0:
        raise preimage.UsageError(f"{what} failed (exit {done.exit_code}): {done.output[-300:]}")


def seeded_sandbox(run: GuardedRun, scenario: Scenario, system: System, root: Path,
                   cache: SeedCache | None) -> Sandbox:
    """The run's seeded, settled sandbox: ``root/sandbox``, or with a ``cache`` the
    scenario's shared ``root/../sandbox`` (every protector sees the same paths)."""
    if cache is not None:
        sandbox = run.sandbox = cache.sandbox(scenario, system, root.parent / "sandbox")
    else:
        sandbox = run.sandbox = Sandbox.create(root / "sandbox", scenario.cwd)
        system.seed(scenario, sandbox)
    system.settle(sandbox)
    return sandbox


@contextmanager
def opened_scene(run: GuardedRun, scenario: Scenario, system: System, protector: Protector,
                 root: Path, cache: SeedCache | None = None
                 ) -> Iterator[tuple[RunContext, Store]]:
    """The seeded sandbox (``root/sandbox``, or with a ``cache`` the scenario's shared
    ``root/../sandbox``, so every protector sees the same paths), the run's store and a
    truth store under ``root``, and the session's earlier calls made (each seen by the
    protector first): yields the run's context and the truth store."""
    sandbox = seeded_sandbox(run, scenario, system, root, cache)
    expected = [str(u) for u in sandbox.fill(scenario.expected_lost)]
    call = CallSpec.model_validate(sandbox.fill(scenario.call.model_dump()))
    run.result.expected = expected
    scratch = root / "scratch"
    scratch.mkdir()
    with ExitStack() as stack:
        truth_store = stack.enter_context(Store(root / "truth"))
        store = stack.enter_context(Store(root / "store"))
        sandbox.env["PREIMAGE_HOME"] = str(store.home)
        ctx = RunContext(scenario, system, sandbox, call, expected, {}, store, scratch)
        protector.setup(ctx)
        for earlier in scenario.before:
            protector.observe(ctx, CallSpec.model_validate(sandbox.fill(earlier.model_dump())))
            run_earlier(earlier, system, sandbox, f"earlier call {earlier.tool}")
        yield ctx, truth_store


def run_one(
    scenario: Scenario,
    system: System,
    protector: Protector,
    root: Path,
    *,
    keep: bool = False,
    cache: SeedCache | None = None,
) -> RunResult:
    """One scenario under one protector, in a fresh sandbox (see :func:`opened_scene`)."""
    with guarded_run(scenario, system, protector, root, keep=keep) as run, \
            opened_scene(run, scenario, system, protector, root, cache) as (ctx, truth_store):
        result, sandbox, expected = run.result, ctx.sandbox, ctx.expected
        # The truth is the state at the moment of the call, after what the agent did first.
        truth = ctx.truth = capture_truth(expected, truth_store)
        protection = protect(result, ctx, protector)
        if protection is None:
            return result
        outcome = run_call(protection.call or ctx.call, system, sandbox)
        result.call_exit = outcome.exit_code
        if outcome.exit_code != 0:
            result.notes.append(f"call exited {outcome.exit_code}: {outcome.output[-300:]}")
        system.settle(sandbox)
        protector.after_call(ctx, protection, outcome.exit_code)
        result.moved_bytes = protector.moved_bytes(ctx, protection)
        damaged = score_live(truth, truth_store)
        record_damage(result, damaged)
        if protection.backup_id is not None:
            result.restored = True
            started = time.perf_counter()
            try:
                result.notes.extend(protector.restore(ctx, protection))
            except preimage.PreimageError as exc:  # a failed restore is a result: score it
                result.notes.append(f"restore failed: {exc}")
            result.restore_s = time.perf_counter() - started
        system.settle(sandbox)
        final = score_live(truth, truth_store)
        result.content = final.classes["content"].score
        result.metadata = final.classes["metadata"].score
        result.server = final.classes["server"].score
        result.restorable = final.restorable.score
        result.differences = _differences(final)
        if protection.backup_id is not None and not result.backed_up:
            _backed_up_by_evidence(result, damaged, final, protector.evidence)
    return run.result


def record_damage(result: RunResult, damaged: SimilarityReport) -> None:
    """The state right after the call, before any restore: what the call destroyed."""
    result.damage = damaged.restorable.score
    result.damage_content = damaged.classes["content"].score
    result.damage_metadata = damaged.classes["metadata"].score


def protect(result: RunResult, ctx: RunContext, protector: Protector) -> Protection | None:
    """The protector's work before the call, timed and recorded in ``result``; ``None``
    (the run marked "not covered") when the protector cannot cover the scenario."""
    started = time.perf_counter()
    try:
        protection = protector.before(ctx)
    except NotCoveredError as exc:
        result.status, result.reason = "not covered", str(exc)
        return None
    result.capture_s = time.perf_counter() - started
    _record_protection(result, ctx, protector, protection)
    return protection


def _record_protection(
    result: RunResult, ctx: RunContext, protector: Protector, protection: Protection
) -> None:
    result.stored_bytes = protection.stored_bytes
    result.model_tokens = protection.model_tokens
    result.tier = protection.tier
    result.rules = list(protection.rules)
    result.targets = list(protection.targets)
    result.notes.extend(protection.notes)
    if protection.call is not None:
        result.rewritten = str(protection.call.input.get("command", protection.call.input))
    covered = [protector.covers(ctx, protection, u) for u in ctx.expected]
    result.coverage = sum(covered) / len(covered)
    result.backed_up = all(covered)
    if not result.backed_up:
        missing = [u for u, c in zip(ctx.expected, covered, strict=True) if not c]
        result.reason = "not captured before the call: " + ", ".join(missing)
