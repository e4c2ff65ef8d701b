"""The regret suite: 205 multi-turn tasks in the published proportions, run as sessions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from preimage.bench.library import load_scenarios
from preimage.bench.scenario import select
from preimage.bench.tasks import PUBLISHED, PUBLISHED_BROWSER, regret_tasks


def test_the_suite_has_the_published_size_and_proportions() -> None:
    """205 tasks: terminal 65, sql 50, browser 50 (forum 20, forge 10, files 20), k8s 20, email 20."""
    tasks = regret_tasks()
    assert len(tasks) == 205 == sum(PUBLISHED.values())
    assert Counter(t.category for t in tasks) == PUBLISHED
    browser = Counter(
        "forum" if t.system == "isso" else "forge" if t.system == "trac" else "file-sharing"
        for t in tasks if t.category == "browser")
    assert browser == PUBLISHED_BROWSER
    assert len({t.id for t in tasks}) == 205


def test_every_task_is_a_session_that_reads_then_destroys() -> None:
    """Each task states its request, reads first, names its regret moments and what must
    survive; families vary (no two tasks of a family run the same calls on the same seed)."""
    tasks = regret_tasks()
    for t in tasks:
        assert t.task and t.notes and t.family, t.id
        assert t.before, f"{t.id}: a task reads before it destroys"
        assert t.expected_lost and all(s.lost for s in t.then if s.regret), t.id
    multi = [t for t in tasks if any(s.regret for s in t.then)]
    later_work = [t for t in tasks if any(not s.regret for s in t.then)]
    assert len(multi) >= 20 and len(later_work) >= 60
    for family in {t.family for t in tasks}:
        members = [t for t in tasks if t.family == family]
        shapes = {(t.call.model_dump_json(), repr(t.setup)) for t in members}
        assert len(shapes) == len(members), family


def test_the_ci_sample_covers_every_domain_and_stays_out_of_other_suites() -> None:
    """About 20 tasks, each domain represented; tasks are not part of all/quick/a category."""
    everything = load_scenarios()
    sample = select(everything, "regret-ci")
    assert 18 <= len(sample) <= 22
    assert set(Counter(t.category for t in sample)) == set(PUBLISHED)
    assert len(select(everything, "regret")) == 205
    for suite in ("all", "quick", "terminal", "sql"):
        assert not any(s.family for s in select(everything, suite)), suite


def test_a_task_needing_an_absent_app_is_not_run_with_that_reason(
    bench: Callable[..., Any], tmp_path: Path
) -> None:
    """A task that names an app this build does not run is listed as not run for it, never
    counted, and a run that requires its servers still passes."""
    d = tmp_path / "absent"
    d.mkdir()
    (d / "absent.yaml").write_text(
        """
id: U.absent-app.01
title: "clean up a wiki farm"
family: absent-app
task: "delete the stale wikis"
category: browser
system: files
needs: "a wiki farm with its site adapter"
before:
  - {tool: Bash, input: {command: "true"}}
call: {tool: Bash, input: {command: "true"}}
expected_lost: ["file://{home}/proj"]
notes: "the wikis"
"""
    )
    report = bench("--scenarios", str(d), "--suite", "regret", "-k", "U.absent-app.01",
                   "--require-servers")
    assert report["runs"] == []
    assert report["not_run"][0]["reason"] == ("app not available: needs a wiki farm with its "
                                              "site adapter")


def test_file_sharing_and_forge_tasks_cover_their_published_shapes() -> None:
    """The file-sharing tasks run on copyparty over trash, versions, shares, folders and
    files; the forge's on Trac over milestones, issues, wiki pages, repositories and a branch."""
    tasks = [t for t in regret_tasks() if t.category == "browser"]
    files = Counter(t.family for t in tasks if t.system == "copyparty")
    assert files == {f"files-{f}": 4 for f in ("empty-trash", "prune-versions", "revoke-shares",
                                               "delete-folder", "dedupe")}
    forge = Counter(t.family for t in tasks if t.system == "trac")
    assert forge == {"forge-milestone": 2, "forge-issue": 3, "forge-wiki": 3,
                     "forge-repository": 2}
    assert not any(t.needs for t in tasks)
    branch = [s for t in tasks for s in t.then if s.regret and any(
        u.startswith("git://") for u in s.lost)]
    assert branch, "a forge task deletes a branch with git"


def test_a_session_restores_every_regret_moment_and_counts_them(
    bench: Callable[..., Any], tmp_path: Path
) -> None:
    """Two regret steps and unrelated work between: the declared protector covers both
    moments and the restore brings both targets back; no backup covers neither."""
    d = tmp_path / "mine"
    d.mkdir()
    (d / "two-steps.yaml").write_text(
        """
id: U.two-steps.01
title: "clean up, in two steps"
family: two-steps
task: "free some space"
category: terminal
system: files
setup:
  files:
    - {path: "{home}/proj/out/a.csv", text: "a\\n", mode: "640"}
    - {path: "{home}/cache/state.json", text: "{}\\n", mode: "600"}
before:
  - {tool: Bash, input: {command: "du -sh out ~/cache"}}
call: {tool: Bash, input: {command: "rm -rf out"}}
then:
  - {tool: Bash, input: {command: "echo done > NOTES"}}
  - {tool: Bash, input: {command: "rm -rf ~/cache"}, regret: true,
     lost: ["file://{home}/cache"]}
expected_lost: ["file://{home}/proj/out"]
notes: "out/ and ~/cache"
"""
    )
    report = bench("--scenarios", str(d), "--suite", "regret", "-k", "U.*",
                   "--protectors", "none,declared")
    runs = {r["protector"]: r for r in report["runs"]}
    declared, none = runs["declared"], runs["none"]
    assert (declared["moments"], declared["moments_covered"], declared["calls"]) == (2, 2, 4)
    assert declared["backed_up"] and declared["restorable"] == 1.0
    assert len(declared["expected"]) == 2
    assert (none["moments_covered"], none["restored"]) == (0, False)
    assert none["damage"] == none["restorable"] == 0.0


def test_backupper_runs_through_its_own_hooks_beside_preimage(
    bench: Callable[..., Any],
) -> None:
    """BackUpper 0.1.0, installed into the run's project as its README says, rewrites an
    rm into its trash and restores it; the report puts the published figures beside ours."""
    report = bench("--suite", "regret", "-k", "T.prune-logs.01", "--protectors",
                   "none,backupper,preimage")
    runs = {r["protector"]: r for r in report["runs"]}
    theirs = runs["backupper"]
    assert theirs["status"] == "ok", theirs["reason"]
    assert "backupper" in theirs["rewritten"]
    assert theirs["backed_up"] and theirs["restorable"] == 1.0
    assert runs["preimage"]["restorable"] == 1.0
    assert runs["none"]["restorable"] == runs["none"]["damage"] < 1.0


def test_published_figures_stand_beside_ours() -> None:
    """The report quotes the publication's 15.2% and 92.2% next to this run's numbers."""
    from preimage.bench.report import published_lines
    from preimage.bench.results import BenchReport, RunResult, totals_for

    labels = {"none": "no backup", "backupper": "BackUpper 0.1.0 (tiers 1-3)"}
    runs = [RunResult(scenario="T.x.01", title="t", category="terminal", system="files",
                      protector=p, label=label, backed_up=p != "none", restored=p != "none",
                      content=1.0, metadata=1.0, restorable=1.0 if p != "none" else 0.0)
            for p, label in labels.items()]
    rep = BenchReport(version="0", suite="regret", started_at="now", seconds=1.0,
                      protectors=labels, runs=runs)
    rep.totals = [totals_for(p, label, runs) for p, label in labels.items()]
    lines = published_lines(rep)
    assert "15.2% of tasks" in lines[0] and "0%" in lines[0]
    assert "92.2% average similarity" in lines[1] and "100.0% restorable" in lines[1]


def test_the_ci_sample_runs_end_to_end(bench: Callable[..., Any]) -> None:
    """Every CI task runs on its real server (the file-sharing one on copyparty, a forge one
    on Trac's repositories and git); preimage holds every regret moment and ends at or above
    the unprotected state."""
    report = bench("--suite", "regret-ci", "--protectors", "none,preimage",
                   "--require-servers", timeout=1800)
    assert report["not_run"] == []
    runs: dict[str, dict[str, Any]] = {}
    for r in report["runs"]:
        assert r["status"] == "ok", (r["scenario"], r["reason"])
        runs.setdefault(r["scenario"], {})[r["protector"]] = r
    assert len(runs) == len(select(load_scenarios(), "regret-ci")) == 21
    for sid, pair in runs.items():
        ours, none = pair["preimage"], pair["none"]
        assert ours["moments_covered"] == ours["moments"] >= 1, sid
        assert none["moments_covered"] == 0 and not none["restored"], sid
        assert ours["restorable"] >= none["restorable"], sid
    assert report["totals"][1]["restorable"] > report["totals"][0]["restorable"]
