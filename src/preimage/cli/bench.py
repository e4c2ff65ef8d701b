"""``preimage bench``: the regret benchmark from the command line.

Kept light at import time (the main CLI attaches it on every start): the
runner, the systems and matplotlib load only when the command runs.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

DEFAULT_PROTECTORS = "none,workspace,content,preimage"
#: Through a real harness: what installs into one.
HARNESS_PROTECTORS = "none,preimage,backupper"


@click.command()
@click.option("--suite", default="all", show_default=True,
              help="all, quick, a category (terminal, sql, kubernetes, email, browser), "
                   "a system name, or undo (intervening changes after the call).")
@click.option("--quick", is_flag=True, help="The quick suite (same as --suite quick).")
@click.option("-k", "--scenario", "patterns", multiple=True, metavar="GLOB",
              help="Only scenarios whose id matches (repeatable), e.g. -k 'T-rm-*'.")
@click.option("--scenarios", "extra", multiple=True, metavar="DIR",
              type=click.Path(file_okay=False, path_type=Path),
              help="Also load *.yaml scenarios from DIR (repeatable).")
@click.option("--protectors", default=None,
              help="Comma list of: none, workspace, content, preimage (the backup layer; "
                   "the declared targets when this build has no layer), declared, overwrite "
                   "(the layer's backup restored), undo (the layer's call undone). Default: "
                   f"{DEFAULT_PROTECTORS}; for the undo suite workspace,overwrite,undo.")
@click.option("--json", "as_json", is_flag=True, help="Print the full results as JSON.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write an HTML report with plots (and results.json, table.md) here.")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path),
              help="Run sandboxes here and keep them (default: a temp dir, removed after).")
@click.option("--list", "list_only", is_flag=True, help="List the selected scenarios and exit.")
@click.option("--harness", type=click.Choice(["claude-code", "codex"]), default=None,
              help="Run each task through this real harness (its pinned binary, driven by a "
                   "scripted model on loopback; MCP steps through the published servers), "
                   "with the protectors installed into it: none, preimage, backupper.")
@click.option("--require-servers/--allow-missing-servers", "require_servers", default=None,
              help="Exit 1 when a scenario did not run because its server did not start or "
                   "its connector is missing (default: required when $CI is set).")
def bench(
    suite: str,
    quick: bool,
    patterns: tuple[str, ...],
    extra: tuple[Path, ...],
    protectors: str | None,
    as_json: bool,
    report_dir: Path | None,
    workdir: Path | None,
    list_only: bool,
    require_servers: bool | None,
    harness: str | None,
) -> None:
    """Run the regret scenarios: seed, destroy as an agent would, restore, score.

    Every scenario runs under each protector in the same run — no backup, a
    workspace-only shadow-git checkpoint, a content-only copy, and preimage —
    and the table reports the backup rate, similarity per fidelity class,
    capture latency, restore time, bytes stored and model tokens.

    --suite undo runs the scenarios where a person changes more right after the
    call, under a workspace checkpoint, preimage restore and preimage undo, and
    reports collateral (later changes lost), reverted (the call's changes brought
    back) and conflicts reported.
    """
    from preimage.cli.main import _fail, err, handle_errors, out

    @handle_errors
    def run() -> None:
        from preimage.bench.library import load_scenarios
        from preimage.bench.protectors import UNDO_PROTECTORS, resolve_protectors
        from preimage.bench.report import render_terminal
        from preimage.bench.scenario import select
        from preimage.bench.suite import run_bench

        chosen_suite = "quick" if quick else suite
        scenarios = select(load_scenarios(extra), chosen_suite, patterns)
        if not scenarios:
            _fail("no scenario matches the selection", 1)
        if list_only:
            for sc in scenarios:
                out.print(f"{sc.id:28} {sc.category:10} {sc.system:10} {sc.title}")
            return
        default = UNDO_PROTECTORS if chosen_suite == "undo" else DEFAULT_PROTECTORS
        if harness is not None:
            from preimage.bench.harness_protectors import hooked_protectors

            chosen: list[Any] = list(hooked_protectors(protectors or HARNESS_PROTECTORS))
        else:
            chosen = list(resolve_protectors(protectors or default))
        base = workdir or Path(tempfile.mkdtemp(prefix="preimage-bench-"))
        status = err.status("starting…") if err.is_terminal else None

        def progress(msg: str) -> None:
            if status is not None:
                status.update(msg)

        def finished(line: str) -> None:
            # one line per finished run on stderr — above the spinner on a terminal, and
            # the only sign of life in CI, where a full run takes minutes
            err.print(line, markup=False, highlight=False)

        try:
            if status is not None:
                status.start()
            with ExitStack() as stack:
                rig = None
                if harness is not None:
                    from preimage.bench.harness_session import HarnessRig

                    rig = stack.enter_context(HarnessRig.opened(harness))
                report = run_bench(
                    scenarios, chosen, base, suite=chosen_suite, progress=progress,
                    finished=finished, keep=workdir is not None, through=rig,
                )
        finally:
            if status is not None:
                status.stop()
            if workdir is None:
                shutil.rmtree(base, ignore_errors=True)
        if report_dir is not None:
            write_report(report, report_dir)
        if as_json:
            click.echo(json.dumps(report.model_dump(mode="json"), indent=2))
        else:
            render_terminal(report, out)
            if harness is not None:
                from preimage.bench.harness_report import harness_table

                out.print(harness_table(report), markup=False, highlight=False)
            if report_dir is not None:
                out.print(f"report: {report_dir / 'index.html'}")
        missing = unmet_requirements(report)
        if missing and (ci_requires_servers() if require_servers is None else require_servers):
            for line in missing:
                err.print(f"not run: {line}", markup=False, highlight=False)
            _fail(f"{len(missing)} scenario(s) did not run because a server or connector is "
                  "missing; start it (fixtures/setup.sh installs the servers) or pass "
                  "--allow-missing-servers", 1)
        if any(r.status == "error" for r in report.runs):
            sys.exit(1)

    run()


#: Reasons a scenario did not run that a required run (CI) treats as a failure.
UNMET = ("server unavailable", "connector missing", "system plug-in missing")


def unmet_requirements(report: object) -> list[str]:
    """``scenario — reason`` of each scenario that did not run for a missing server or
    connector (an app marked as not yet available is no failure: it is a known gap)."""
    from preimage.bench.results import BenchReport

    assert isinstance(report, BenchReport)
    return [f"{nr.scenario} — {nr.reason}" for nr in report.not_run
            if nr.reason.startswith(UNMET)]


def ci_requires_servers() -> bool:
    """In CI (``$CI`` set and not ``false``/``0``) a server that does not start fails."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def write_report(report: object, out_dir: Path) -> None:
    """``index.html`` with plots, ``results.json`` and ``table.md`` in ``out_dir``."""
    from preimage.bench.plots import make_plots
    from preimage.bench.report import markdown, write_html
    from preimage.bench.results import BenchReport

    assert isinstance(report, BenchReport)
    out_dir.mkdir(parents=True, exist_ok=True)
    from preimage.bench.undo_report import is_undo, undo_html

    if is_undo(report):  # similarity plots say nothing about intervening changes
        (out_dir / "results.json").write_text(
            json.dumps(report.model_dump(mode="json"), indent=2))
        (out_dir / "table.md").write_text(markdown(report))
        undo_html(report, out_dir)
        return
    from preimage.bench.harness_report import harness_table

    images = make_plots(report, out_dir)
    (out_dir / "results.json").write_text(json.dumps(report.model_dump(mode="json"), indent=2))
    through = harness_table(report)
    (out_dir / "table.md").write_text(markdown(report) + (f"\n{through}" if through else ""))
    write_html(report, out_dir, images)
