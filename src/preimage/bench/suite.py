"""Run a suite: every scenario under every protector, each system started once, and
the report of the whole run (:func:`run_bench`)."""
from __future__ import annotations

import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import preimage
from preimage.bench.protector import Protector
from preimage.bench.results import BenchReport, NotRun, totals_for
from preimage.bench.runner import Progress, SeedCache, run_one
from preimage.bench.scenario import Scenario
from preimage.bench.systems.base import System, get_system
from preimage.interface.registry import get_connector

if TYPE_CHECKING:
    from preimage.bench.harness_session import HarnessRig


def run_bench(
    scenarios: list[Scenario],
    protectors: list[Protector],
    workdir: Path,
    *,
    suite: str = "all",
    progress: Progress | None = None,
    finished: Progress | None = None,
    keep: bool = False,
    through: HarnessRig | None = None,
) -> BenchReport:
    """Run every scenario under every protector; systems start on first use.

    ``through``: every task runs through that real harness
    (:func:`~preimage.bench.harness_session.run_harness_session`); a task with a step no
    tool of the harness or a published MCP server carries is listed as not run.

    ``progress`` hears what is starting (a status line); ``finished`` gets one line per
    finished run (:func:`~preimage.bench.report.progress_line`), so a run without a
    terminal still shows that it moves.
    """
    from preimage.bench.harness_protectors import HookedProtector
    from preimage.bench.harness_session import run_harness_session
    from preimage.bench.intervening import run_intervening
    from preimage.bench.report import progress_line
    from preimage.bench.session import run_session

    say = progress or (lambda _msg: None)
    done = finished or (lambda _msg: None)
    total, count = len(scenarios) * len(protectors), 0
    began = time.perf_counter()
    report = BenchReport(
        version=preimage.__version__, suite=suite,
        started_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), seconds=0.0,
        protectors={p.name: p.label for p in protectors},
    )
    systems: dict[str, System] = {}
    failed: dict[str, str] = {}
    cache = None if keep else SeedCache()
    try:
        for sc in scenarios:
            reason = (through.untranslatable(sc) if through is not None else None) or \
                _prepare(sc, systems, failed, workdir / "servers")
            if reason is not None:
                count += len(protectors)
                done(f"[{count}/{total}] {sc.id}: not run — {reason}")
                report.not_run.append(NotRun(
                    scenario=sc.id, title=sc.title, category=sc.category, system=sc.system,
                    reason=reason,
                ))
                continue
            for prot in protectors:
                say(f"{sc.id}: {prot.label}")
                started = time.perf_counter()
                if through is not None:
                    assert isinstance(prot, HookedProtector)
                    res = run_harness_session(sc, systems[sc.system], prot,
                                              workdir / sc.id / prot.name, through,
                                              keep=keep, cache=cache)
                else:
                    runner = (run_intervening if sc.after else
                              run_session if sc.then or sc.family else run_one)
                    res = runner(
                        sc, systems[sc.system], prot, workdir / sc.id / prot.name, keep=keep,
                        cache=cache,
                    )
                report.runs.append(res)
                count += 1
                done(progress_line(count, total, res, time.perf_counter() - started))
            shutil.rmtree(workdir / sc.id / "seeded", ignore_errors=True)
    finally:
        for system in systems.values():
            try:
                system.stop()
            except Exception as exc:  # stopping a test server must not hide the results
                say(f"stopping {system.name}: {exc}")
    report.totals = [totals_for(p.name, p.label, report.runs) for p in protectors]
    report.seconds = time.perf_counter() - began
    return report


def missing_connector(sc: Scenario) -> str | None:
    """``connector missing: <scheme> (…)`` when a scheme the scenario needs has no connector."""
    for scheme in sc.requires:
        try:
            get_connector(scheme)
        except preimage.NoSuchConnectorError as exc:
            return f"connector missing: {scheme} ({exc.hint or 'not installed'})"
    return None


def _prepare(
    sc: Scenario, systems: dict[str, System], failed: dict[str, str], servers: Path
) -> str | None:
    """Start the scenario's system if needed; the reason it cannot run, or ``None``."""
    if sc.needs:
        return f"app not available: needs {sc.needs}"
    missing = missing_connector(sc)
    if missing is not None:
        return missing
    if sc.system in failed:
        return failed[sc.system]
    if sc.system not in systems:
        try:
            system = get_system(sc.system)
        except preimage.UsageError as exc:
            failed[sc.system] = f"system plug-in missing: {exc}"
            return failed[sc.system]
        missing = system.unavailable(sc)
        if missing is not None:
            return missing
        try:
            system.start(servers / sc.system)
        except Exception as exc:  # the report says which server did not start and why
            failed[sc.system] = f"server unavailable: {str(exc).splitlines()[0][:300]}"
            return failed[sc.system]
        systems[sc.system] = system
        return None
    return systems[sc.system].unavailable(sc)
