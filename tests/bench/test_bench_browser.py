"""`preimage bench --suite browser`: the B-* scenarios against Chromium, isso and Trac.

The backup layer decides from the agent's own calls (the page it navigated
to, the button it clicks, the script it runs) what to capture; every
baseline is measured in the same run.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.webapp]


@pytest.fixture(scope="module")
def browser_suite(tmp_path_factory: pytest.TempPathFactory,
                  bench_web_servers: dict[str, str]) -> dict[str, Any]:
    """One `preimage bench --suite browser` run shared by the tests of this module, against
    the session's isso and Trac (as a user points it at theirs)."""
    import json
    import os
    import subprocess
    import sys

    home = tmp_path_factory.mktemp("home")
    env = {**os.environ, "PREIMAGE_HOME": str(home), **bench_web_servers}
    proc = subprocess.run(
        # the protectors these tests read (a workspace checkpoint holds no browser state;
        # what no backup leaves is every run's damage, scored before its restore)
        [sys.executable, "-m", "preimage", "bench", "--suite", "browser", "--json",
         "--protectors", "content,preimage"],
        capture_output=True, text=True, env=env, timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def _runs(report: dict[str, Any], protector: str) -> dict[str, dict[str, Any]]:
    return {r["scenario"]: r for r in report["runs"] if r["protector"] == protector}


def test_layer_backs_up_and_restores_every_browser_scenario(browser_suite: dict[str, Any]) -> None:
    """Through the backup layer: every B-* scenario (B-purge-user included) is captured
    before the call and comes back at content and metadata 1.0."""
    runs = _runs(browser_suite, "preimage")
    assert set(runs) == {"B-clear-storage", "B-delete-comments", "B-delete-issue",
                         "B-delete-label", "B-purge-user"}
    for sid, run in runs.items():
        assert run["status"] == "ok", (sid, run["reason"])
        assert run["backed_up"], (sid, run["targets"], run["notes"])
        assert (run["content"], run["metadata"]) == (1.0, 1.0), (sid, run["differences"][:5])
        assert run["model_tokens"] == 0
        assert run["rules"], sid  # the rule that routed the call is recorded


def test_layer_targets_name_the_records_not_the_page(browser_suite: dict[str, Any]) -> None:
    """The layer captures the ticket, the milestone and every forum thread — not the URL of
    the delete page the agent was on."""
    runs = _runs(browser_suite, "preimage")
    issue = runs["B-delete-issue"]["targets"]
    assert any("/ticket/" in t and "action=delete" not in t and "env=" in t for t in issue), issue
    label = runs["B-delete-label"]["targets"]
    assert any("/milestone/sprint-" in t and "action=" not in t for t in label), label
    assert any("/*?" in t for t in runs["B-purge-user"]["targets"])


def test_baselines_are_measured_on_web_state(browser_suite: dict[str, Any]) -> None:
    """No backup leaves the damage (each run scores the state after the call, before its
    restore); the content-only export is taken and written back, and loses what an export
    cannot carry (authors, e-mails, cookie flags, histories)."""
    layer, content = _runs(browser_suite, "preimage"), _runs(browser_suite, "content")
    for sid, run in layer.items():
        assert run["damage"] < 1.0, sid
    for sid, run in content.items():
        assert run["status"] == "ok", (sid, run["reason"])
        assert run["backed_up"], sid
        assert run["restorable"] < 1.0, sid
        assert run["damage"] < 1.0, sid
    assert content["B-purge-user"]["restorable"] > content["B-purge-user"]["damage"]
