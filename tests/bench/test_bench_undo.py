"""`preimage bench --suite undo`: intervening changes after the call.

A person changes more right after the agent's call; a workspace checkpoint
and a whole-target restore lose that work, `preimage undo` keeps it, reverts
the rest of the call and reports every conflict.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from preimage.bench import load_scenarios
from preimage.bench.intervening import Outcome, measure
from preimage.bench.scenario import select


def _leaves(**items: dict[str, Any] | None) -> dict[str, dict[str, tuple[str, Any]]]:
    return {k: {p: ("str", v) for p, v in fields.items()}
            for k, fields in items.items() if fields is not None}


def test_measure_counts_collateral_reverted_and_conflicts() -> None:
    """Four captures of one target: the call changed a, b and c; a person then changed b
    again (a conflict) and d (new).  A restore that puts back the state before the call
    loses both of the person's changes and reports nothing."""
    s0 = _leaves(a={"x": "1"}, b={"x": "1"}, c={"x": "1", "y": "1"})
    s1 = _leaves(a={"x": "2"}, b={"x": "2"}, c={"x": "1", "y": "2"})
    s2 = _leaves(a={"x": "2"}, b={"x": "3"}, c={"x": "1", "y": "2"}, d={"x": "9"})
    undone = _leaves(a={"x": "1"}, b={"x": "3"}, c={"x": "1", "y": "1"}, d={"x": "9"})
    got = measure(s0, s1, s2, undone, reported={"b"})
    assert (got.intervening, got.collateral) == (2, 0)
    assert (got.call_leaves, got.reverted) == (2, 1.0)
    assert (got.conflicts, got.reported, got.silent) == (["b"], 1, 0)

    overwritten = measure(s0, s1, s2, s0, reported=set())
    assert (overwritten.collateral, sorted(overwritten.lost)) == (2, ["b", "d"])
    assert (overwritten.reverted, overwritten.reported, overwritten.silent) == (1.0, 0, 1)


def test_a_change_the_person_put_back_is_no_conflict_and_not_to_revert() -> None:
    """The person undid the call's change to an item by hand: nothing is left to revert
    there and nothing conflicts."""
    s0 = _leaves(a={"x": "1"})
    s1 = _leaves(a={"x": "2"})
    got = measure(s0, s1, s0, s0, reported=set(), out=Outcome())
    assert (got.conflicts, got.call_leaves, got.reverted, got.collateral) == ([], 0, None, 0)


def test_the_undo_suite_has_two_scenarios_per_system_and_no_regret_suite_runs_them() -> None:
    """Two intervening-change scenarios per category; `all` and the categories run the
    regret scenarios only."""
    scenarios = load_scenarios()
    undo = select(scenarios, "undo")
    by_category: dict[str, int] = {}
    for sc in undo:
        by_category[sc.category] = by_category.get(sc.category, 0) + 1
    assert by_category == {c: by_category[c] for c in
                           ("terminal", "sql", "kubernetes", "email", "browser")}
    assert min(by_category.values()) >= 2
    assert not {s.id for s in undo} & {s.id for s in select(scenarios, "all")}


def test_undo_keeps_later_work_where_overwrite_and_a_checkpoint_lose_it(
        bench: Callable[..., Any], tmp_path: Path) -> None:
    """The terminal and SQLite scenarios of the suite, in a real `preimage bench` process:
    undo loses no intervening change, reverts every change of the call outside conflicts
    and reports every conflict; the whole-target restore and the workspace checkpoint
    lose the person's work and report nothing."""
    report = bench("--suite", "undo", "-k", "TU-*", "-k", "SU-update-*",
                   "--report", str(tmp_path / "report"))
    totals = {t["protector"]: t for t in report["totals"]}
    assert set(totals) == {"workspace", "overwrite", "undo"}
    undo, over, ws = totals["undo"], totals["overwrite"], totals["workspace"]
    assert undo["ran"] == 3 and undo["errors"] == 0
    assert undo["intervening"] > 0 and undo["collateral"] == 0
    assert undo["reverted"] == 1.0
    assert undo["conflicts"] >= 3 and undo["conflicts_reported"] == undo["conflicts"]
    assert undo["silently_overwritten"] == 0
    assert over["collateral"] > 0 and over["conflicts_reported"] == 0
    assert over["silently_overwritten"] == over["conflicts"]
    assert ws["collateral"] > 0 and ws["conflicts_reported"] == 0
    # the cost of the delta: only undo takes a post-call capture, and it stores little
    assert undo["post_mean_s"] is not None and undo["post_to_call"] is not None
    assert over["post_mean_s"] is None
    for run in report["runs"]:
        if run["protector"] == "undo":
            assert run["post_bytes"] is not None and run["post_bytes"] > 0, run["scenario"]
    # the report has the suite's own tables, not the regret benchmark's similarity
    assert "collateral (lost / intervening)" in (tmp_path / "report" / "table.md").read_text()
    page = (tmp_path / "report" / "index.html").read_text()
    assert "intervening changes" in page and "post-call / call" in page


@pytest.mark.postgres
@pytest.mark.kubernetes
@pytest.mark.imap
@pytest.mark.browser
@pytest.mark.webapp
def test_undo_suite_on_every_system(bench: Callable[..., Any], control_plane: Any,
                                    bench_web_servers: dict[str, str]) -> None:
    """The whole suite against the real servers (PostgreSQL, kube-apiserver, Dovecot,
    Chromium, isso, Trac): undo loses nothing a person did after the call on any of them,
    reverts all of the call outside conflicts, and reports every conflict.  The cluster,
    isso and Trac are the session's (the run's own namespaces, threads and milestones), as
    a user points the benchmark at theirs."""
    servers = {
        **bench_web_servers,
        "PREIMAGE_BENCH_KUBECONFIG": str(control_plane.kubeconfig_path),
        "PREIMAGE_BENCH_KUBE_CONTEXT": "preimage-test",
        "PATH": f"{control_plane.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    report = bench("--suite", "undo", "--protectors", "undo", timeout=1800, env=servers)
    assert not report["not_run"], report["not_run"]
    runs = [r for r in report["runs"] if r["protector"] == "undo"]
    assert {r["system"] for r in runs} >= {"files", "sqlite", "postgres", "kubernetes", "imap",
                                           "browser", "isso", "trac"}
    for run in runs:
        sid = run["scenario"]
        assert run["status"] == "ok", (sid, run["reason"], run["notes"][-3:])
        assert run["collateral"] == 0, (sid, run["notes"])
        assert run["reverted"] in (None, 1.0), (sid, run["notes"])
        assert run["conflicts_reported"] == run["conflicts"], (sid, run["notes"])
        assert run["post_bytes"], sid  # the post-call capture was taken and stored
    (total,) = report["totals"]
    assert total["conflicts"] >= 8 and total["intervening"] >= 20
