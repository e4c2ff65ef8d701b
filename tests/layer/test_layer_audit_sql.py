"""The layer audited by execution on a fixed sample of PostgreSQL's own regression statements.

Each call runs against a scratch database after the layer's backup; ``pg_dump``
— an oracle that shares no code with the connectors — says what changed.  The
full corpus runs in ``benchmarks/bench_layer_audit.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))

from layer_audit import report, sql
from layer_audit.shell import CallResult


@pytest.fixture(scope="module")
def sql_sample(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> list[CallResult]:
    """Every call of the committed PostgreSQL CI sample, audited (with restore checks)."""
    results = sql.run_corpus(tmp_path_factory.mktemp("sql-audit"), sample=True, server=pg_server)
    print("\n" + report.table(results, title="PostgreSQL regression CI sample"))
    return results


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
