"""The layer audited by execution on a fixed sample of a corpus nobody on the project wrote.

Each tldr example runs in a bubblewrap sandbox after the layer's backup; an
oracle that shares no code with the connectors (a stat + sha256 walk, ``git
ls-files``, ``sqlite3 .dump``) says what changed.  The PostgreSQL regression
sample is audited in ``test_layer_audit_sql.py`` (a unit of its own, so the two
samples can run side by side); the full corpora run in
``benchmarks/bench_layer_audit.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))

from layer_audit import report, tldr
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
