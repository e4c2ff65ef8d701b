"""The tldr CI sample of the layer audit, with every call supervised instead of read.

Each example runs in the audit's bubblewrap sandbox under ``preimage run``'s
supervisor; the audit's own oracle (a stat + sha256 walk, ``git ls-files``,
``sqlite3 .dump``) says what changed, and the observed backup must hold all
of it and restore it — every changed path, not only those in a read scope.
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
from preimage.observe import unavailable_reason

pytestmark = pytest.mark.skipif(unavailable_reason() is not None,
                                reason=f"no supervision here: {unavailable_reason()}")


@pytest.fixture(scope="module")
def observed_sample(tmp_path_factory: pytest.TempPathFactory) -> list[CallResult]:
    """Every example of the committed tldr CI sample, run supervised and audited."""
    from bench_layer_audit import sample_ids

    workdir = tmp_path_factory.mktemp("tldr-observed")
    store = Store(workdir / "store")
    audit = ShellAudit(workdir / "audit", store, supervised=True)
    wanted = set(sample_ids())
    results = []
    for e in tldr.load():
        if e.id in wanted:
            command = tldr.instantiate(e, str(audit.work))
            results.append(audit.audit(e.id, tldr.program(command), command))
    store.close()
    print("\n" + report.table(results, title="tldr CI sample, supervised"))
    return results


def test_supervised_sample_misses_nothing(observed_sample: list[CallResult]) -> None:
    """No supervised command changes a path its observed backup does not hold."""
    assert sum(bool(r.changed) for r in observed_sample) >= 45
    assert report.misses(observed_sample) == ""


def test_supervised_sample_restores_every_change(observed_sample: list[CallResult]) -> None:
    """Restoring each observed backup brings back every path the command changed."""
    assert {r.id: r.restore_differs for r in observed_sample if r.restore_differs} == {}


def test_supervised_sample_captures_little_for_unchanged_calls(
        observed_sample: list[CallResult]) -> None:
    """Of the calls that changed nothing, under a tenth leave a backup (a write that failed,
    a lock file made and removed); reading the command line captured for most of them."""
    unchanged = [r for r in observed_sample if r.status == "ran" and not r.changed]
    assert unchanged
    assert sum(r.captured for r in unchanged) < len(unchanged) / 10
