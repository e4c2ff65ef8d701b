"""The layer audited by execution on fixed samples of corpora nobody on the project wrote.

Each tldr example runs in a bubblewrap sandbox after the layer's backup;
each PostgreSQL regression call runs against a scratch database after it.
An oracle that shares no code with the connectors (a stat + sha256 walk,
``git ls-files``, ``sqlite3 .dump``, ``pg_dump``) says what changed.  The
full corpora run in ``benchmarks/bench_layer_audit.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))

from layer_audit import report, sql, tldr
from layer_audit.shell import CallResult, ShellAudit

from preimage import Store


@pytest.fixture(scope="module")
def tldr_sample(tmp_path_factory: pytest.TempPathFactory) -> list[CallResult]:
    """Every example of the committed tldr CI sample, audited."""
    from bench_layer_audit import sample_ids

    workdir = tmp_path_factory.mktemp("tldr-audit")
    store = Store(workdir / "store")
    audit = ShellAudit(workdir / "audit", store)
    wanted = set(sample_ids())
    results = []
    for e in tldr.load():
        if e.id in wanted:
            command = tldr.instantiate(e, str(audit.work))
            results.append(audit.audit(e.id, tldr.program(command), command))
    store.close()
    print("\n" + report.table(results, title="tldr CI sample"))
    return results


@pytest.fixture(scope="module")
def sql_sample(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> list[CallResult]:
    """Every call of the committed PostgreSQL CI sample, audited (with restore checks)."""
    results = sql.run_corpus(tmp_path_factory.mktemp("sql-audit"), sample=True, server=pg_server)
    print("\n" + report.table(results, title="PostgreSQL regression CI sample"))
    return results


def test_tldr_sample_runs_what_it_lists(tldr_sample: list[CallResult]) -> None:
    """The sample's programs are installed (fixtures/setup.d), so every example really runs."""
    assert len(tldr_sample) >= 150
    assert [r.id for r in tldr_sample if r.status != "ran"] == []
    # 51 of the 200 change state in the sandbox (the rest print, or fail offline); a few
    # of those may time out on a loaded machine
    assert sum(bool(r.changed) for r in tldr_sample) >= 45


def test_tldr_sample_misses_nothing(tldr_sample: list[CallResult]) -> None:
    """No command changes a path the backup taken before it does not hold."""
    assert report.misses(tldr_sample) == ""


def test_tldr_sample_restores_what_changed(tldr_sample: list[CallResult]) -> None:
    """Restoring each backup brings back every path the command changed inside its scope."""
    assert {r.id: r.restore_differs for r in tldr_sample if r.restore_differs} == {}


def test_unnecessary_captures_do_not_grow(tldr_sample: list[CallResult]) -> None:
    """Of the examples that changed nothing, no fewer pass uncaptured than measured (44 of
    149: the rest are programs the layer cannot read, or writes that fail offline in the
    sandbox — `git push`, `systemctl` — which the layer cannot know before they run)."""
    unchanged = [r for r in tldr_sample if r.status == "ran" and not r.changed]
    passed = [r for r in unchanged if not r.captured]
    assert unchanged and len(passed) >= 40


def test_sql_sample_misses_nothing(sql_sample: list[CallResult]) -> None:
    """No statement changes a dump section outside the scope the backup holds."""
    assert len(sql_sample) >= 100
    assert sum(bool(r.changed) for r in sql_sample) >= 30
    assert report.misses(sql_sample) == ""


# Calls whose backup holds everything they change (no miss) but whose restore does not yet
# bring every schema object of the scope back — gaps of the PostgreSQL connector, named so
# that a new one fails this test and a fixed one shows in the printed table.
RESTORE_GAPS: dict[str, str] = {
    # none now: a dropped partitioned table's key and index copies on its partitions, a
    # view of another schema and a domain a column uses are restored exactly (each kept
    # as a test in tests/sql/test_postgres_regressions.py)
}


def test_sql_sample_restores_what_changed(sql_sample: list[CallResult]) -> None:
    """Restoring each backup brings pg_dump of its scope back to before the call — except the
    named connector gaps, which must never lose rows."""
    differs = {r.id: r.restore_differs for r in sql_sample if r.restore_differs}
    assert {i: d for i, d in differs.items() if i not in RESTORE_GAPS} == {}
    rows = {i: [x for x in d if x.startswith(("TABLE DATA", "SEQUENCE SET"))]
            for i, d in differs.items()}
    assert {i: x for i, x in rows.items() if x} == {}
