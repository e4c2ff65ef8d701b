"""`preimage bench --quick`: preimage brings every quick scenario back; no backup does not."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from preimage.bench import load_scenarios


def _preimage_row(report: dict[str, Any]) -> str:
    names = [t["protector"] for t in report["totals"]]
    return "preimage" if "preimage" in names else "declared"


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """One `preimage bench --quick --json --report DIR` run shared by the tests of this
    module: its results and the report folder it wrote."""
    import json
    import os
    import subprocess
    import sys

    home = tmp_path_factory.mktemp("home")
    report = tmp_path_factory.mktemp("quick") / "report"
    env = {**os.environ, "PREIMAGE_HOME": str(home)}
    proc = subprocess.run(
        [sys.executable, "-m", "preimage", "bench", "--quick", "--json", "--report", str(report),
         "--require-servers"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout), report


@pytest.fixture
def quick(quick_run: tuple[dict[str, Any], Path]) -> dict[str, Any]:
    """The results of the module's quick run."""
    return quick_run[0]


def test_preimage_backs_up_and_restores_every_quick_scenario(quick: dict[str, Any]) -> None:
    """The preimage row: backup rate 1.0 and content/metadata 1.0 on every quick scenario."""
    name = _preimage_row(quick)
    total = next(t for t in quick["totals"] if t["protector"] == name)
    assert total["ran"] >= 4
    assert total["errors"] == 0
    assert total["backup_rate"] == 1.0
    assert total["content"] == 1.0
    assert total["metadata"] == 1.0
    for run in quick["runs"]:
        if run["protector"] == name:
            assert run["backed_up"], run["scenario"]
            assert (run["content"], run["metadata"]) == (1.0, 1.0), run["differences"]


def test_no_backup_scores_lower_than_preimage(quick: dict[str, Any]) -> None:
    """Measured, not assumed: the no-backup baseline ends below preimage's similarity."""
    name = _preimage_row(quick)
    totals = {t["protector"]: t for t in quick["totals"]}
    none, ours = totals["none"], totals[name]
    assert none["backup_rate"] == 0.0
    assert none["restorable"] < ours["restorable"]
    assert none["content"] < ours["content"]
    for run in quick["runs"]:
        if run["protector"] == "none":
            assert run["damage"] is not None and run["damage"] < 1.0, run["scenario"]


def test_every_quick_scenario_runs_under_every_protector(quick: dict[str, Any]) -> None:
    """A quick scenario never vanishes, and none is "not run": the run requires its servers."""
    wanted = {s.id for s in load_scenarios() if s.quick}
    ran = {r["scenario"] for r in quick["runs"]}
    assert quick["not_run"] == []
    assert wanted == ran
    for sid in ran:
        protectors = {r["protector"] for r in quick["runs"] if r["scenario"] == sid}
        assert protectors == {t["protector"] for t in quick["totals"]}


def test_workspace_baseline_misses_state_outside_the_cwd(quick: dict[str, Any]) -> None:
    """The shadow-git checkpoint covers only the cwd: ~/Documents is not backed up."""
    run = next(
        r for r in quick["runs"] if r["scenario"] == "T-rm-home" and r["protector"] == "workspace"
    )
    assert not run["backed_up"]
    assert run["content"] == 0.0


def test_content_only_baseline_loses_hard_metadata(quick: dict[str, Any]) -> None:
    """A content-only copy brings the bytes back but not the modes and times."""
    run = next(
        r for r in quick["runs"] if r["scenario"] == "T-chmod-R" and r["protector"] == "content"
    )
    assert run["content"] == 1.0
    assert run["metadata"] < 1.0
    assert any("mode" in d or "mtime" in d for d in run["differences"])


def test_user_scenario_directory_runs(bench: Callable[..., Any], tmp_path: Path) -> None:
    """A scenario file in --scenarios DIR is loaded, run and scored like a built-in one."""
    d = tmp_path / "mine"
    d.mkdir()
    (d / "my-truncate.yaml").write_text(
        """
id: U-truncate-log
title: "truncate a log file an agent thought was junk"
category: terminal
system: files
cwd: "{home}/proj"
setup:
  files:
    - {path: "{home}/proj/app.log", text: "line 1\\nline 2\\n", mode: "640",
       mtime: "2025-01-01T00:00:00Z"}
call:
  tool: Bash
  input: {command: "truncate -s 0 app.log"}
expected_lost:
  - "file://{home}/proj/app.log"
"""
    )
    report = bench("--scenarios", str(d), "-k", "U-*", "--protectors", "none,declared")
    runs = {r["protector"]: r for r in report["runs"]}
    assert runs["declared"]["content"] == 1.0 and runs["declared"]["metadata"] == 1.0
    assert runs["none"]["content"] < 1.0


def test_html_report_has_table_and_plots(quick_run: tuple[dict[str, Any], Path]) -> None:
    """--report DIR writes an HTML page showing the table and both PNG plots."""
    out = quick_run[1]
    page = (out / "index.html").read_text()
    assert "T-chmod-R" in page and "backup rate" in page
    for png in ("similarity_by_category.png", "latency.png"):
        data = (out / png).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 5000
        assert png in page
    assert "| protector |" in (out / "table.md").read_text()


def test_truth_is_the_state_after_earlier_calls(bench: Callable[..., Any], tmp_path: Path) -> None:
    """Calls the agent made first run before the truth is taken: restore brings back their result."""
    d = tmp_path / "mine"
    d.mkdir()
    (d / "earlier.yaml").write_text(
        """
id: U-earlier
title: "an edit, then a delete"
category: terminal
system: files
setup:
  files:
    - {path: "{home}/proj/notes.txt", text: "v1\\n"}
before:
  - {tool: Bash, input: {command: "echo v2 > notes.txt"}}
call:
  tool: Bash
  input: {command: "rm notes.txt"}
expected_lost:
  - "file://{home}/proj/notes.txt"
"""
    )
    work = tmp_path / "work"
    report = bench("--scenarios", str(d), "-k", "U-*", "--protectors", "declared",
                   "--workdir", str(work))
    assert report["runs"][0]["content"] == 1.0
    kept = work / "U-earlier" / "declared" / "sandbox" / "home" / "proj" / "notes.txt"
    assert kept.read_text() == "v2\n"


def test_a_server_that_does_not_start_fails_a_required_run(
    bench: Callable[..., Any], tmp_path: Path
) -> None:
    """With --require-servers (the default under $CI) PostgreSQL not starting is a failure
    naming the scenario and the reason; --allow-missing-servers lists it as not run."""
    env = {"PREIMAGE_FIXTURES": str(tmp_path / "no-launchers")}
    args = ("-k", "S-truncate-identity", "--protectors", "none")
    failed = bench(*args, "--require-servers", env=env, expect_exit=1)
    assert failed["runs"] == []
    assert failed["not_run"][0]["reason"].startswith("server unavailable")
    allowed = bench(*args, "--allow-missing-servers", env=env)
    assert allowed["not_run"][0]["scenario"] == "S-truncate-identity"
