"""The regret suite through a real harness: each task step as the harness's own tool call.

The unit tests check the translation of a task's steps (shell tool, the published MCP
servers' tools, emails-mcp's listing-then-ids); the CI sample runs the fixed sample of
the regret suite through the pinned Claude Code binary, driven by the scripted model,
with preimage installed by `preimage install` and with no protector.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from preimage.bench.harness_calls import NoHarnessToolError, harness_calls, without_force
from preimage.bench.harness_collateral import CollateralWatch, outside_own
from preimage.bench.harness_email import listed
from preimage.bench.harness_report import harness_table
from preimage.bench.results import BenchReport, RunResult, totals_for
from preimage.bench.scenario import CallSpec
from preimage.bench.tasks import CI_SAMPLE
from preimage.cli.bench import write_report

LISTING = """Folder: INBOX
Page: 1/1
Total emails: 3

1. ID: 1
   Subject: Newsletter 1
   From: news@shop.example
   Date: Mon, 02 Feb 2026 09:01:00 +0000

2. ID: 2
   Subject: Re: contract 1
   From: boss@example.org
   Date: Mon, 02 Feb 2026 09:02:00 +0000

3. ID: 3
   Subject: Newsletter 2
   From: news@shop.example
   Date: Tue, 03 Mar 2026 09:03:00 +0000
"""


def test_a_shell_step_is_each_harness_shell_tool() -> None:
    """Claude Code gets Bash with the line as is; Codex exec_command, without rm's -f
    (Codex refuses rm -f style commands by its own rules)."""
    step = CallSpec(tool="Bash", input={"command": "rm -rf out && find . -exec rm -f {} +"})
    (claude,) = harness_calls("claude-code", step, set())
    (codex,) = harness_calls("codex", step, set())
    assert (claude.tool, claude.arguments) == ("Bash", dict(step.input))
    assert (codex.tool, codex.arguments) == (
        "exec_command", {"cmd": "rm -r out && find . -exec rm {} +"})
    assert without_force("git clean -fdx; rm -v -f a") == "git clean -fdx; rm -v a"


def test_an_mcp_step_is_the_published_servers_tool_and_codex_searches_once() -> None:
    """postgres-mcp's execute_sql passes as is; Codex searches its deferred tools once per
    server, then calls in that server's namespace."""
    step = CallSpec(tool="mcp__postgres__execute_sql", input={"sql": "DROP TABLE t;"})
    (claude,) = harness_calls("claude-code", step, set())
    assert (claude.tool, claude.arguments) == ("mcp__postgres__execute_sql", {"sql": "DROP TABLE t;"})
    searched: set[str] = set()
    first = harness_calls("codex", step, searched)
    again = harness_calls("codex", step, searched)
    assert [c.kind for c in first] == ["tool_search", "function"]
    assert [(c.tool, c.namespace) for c in again] == [("execute_sql", "mcp__postgres")]


def test_an_email_step_lists_the_folder_then_acts_on_the_ids_it_read() -> None:
    """A delete by sender is emails-mcp's get_emails of the folder, then delete_emails of
    the ids that listing showed from that sender; a move BEFORE a date picks by the dates
    listed; a folder delete is delete_folder."""
    step = CallSpec(tool="mcp__email__delete_messages",
                    input={"folder": "INBOX", "search": "FROM news@shop.example"})
    listing, delete = harness_calls("claude-code", step, set())
    assert (listing.tool, listing.arguments["folder"]) == ("mcp__email__get_emails", "INBOX")
    assert delete.tool == "mcp__email__delete_emails" and delete.resolve is not None
    assert delete.resolve(LISTING) == {"email_ids": ["1", "3"]}
    move = CallSpec(tool="mcp__email__move_messages",
                    input={"folder": "INBOX", "search": "BEFORE 15-Feb-2026", "to": "Archive"})
    _, moved = harness_calls("claude-code", move, set())
    assert moved.resolve is not None
    assert moved.resolve(LISTING) == {"email_ids": ["1", "2"], "target_folder": "Archive"}
    gone = CallSpec(tool="mcp__email__delete_folder", input={"folder": "Projects"})
    assert [c.arguments for c in harness_calls("claude-code", gone, set())] == [
        {"folder_name": "Projects"}]
    assert [m["from"] for m in listed(LISTING)] == [
        "news@shop.example", "boss@example.org", "news@shop.example"]
    assert listed(json.dumps({"result": LISTING})) == listed(LISTING)   # as Claude Code passes it
    assert listed(json.dumps([{"type": "text", "text": LISTING}])) == listed(LISTING)
    codex = "Wall time: 0.1 seconds\nOutput:\n" + json.dumps({"result": LISTING})
    assert listed(codex) == listed(LISTING)


#: A page snapshot as @playwright/mcp 0.0.79's browser_snapshot answers it (Trac's ticket
#: delete page, cut down).
SNAPSHOT = """### Page
- Page URL: http://127.0.0.1:8000/ticket/1?action=delete
### Snapshot
```yaml
- generic [ref=e1]:
  - button "Search" [ref=e9] [cursor=pointer]
  - 'link "Ticket #1" [ref=e43] [cursor=pointer]':
    - /url: /ticket/1
  - generic [ref=e94]:
    - button "Delete ticket" [ref=e95] [cursor=pointer]
    - button "Cancel" [ref=e96] [cursor=pointer]
```
"""


def test_a_browser_click_names_the_ref_the_last_snapshot_showed() -> None:
    """A click is a browser_snapshot, then browser_click with the ref that snapshot gave the
    button of the element's name — read from the text as each harness passes it on; a
    snapshot without that button stops the run, naming what it showed."""
    from preimage.interface.errors import UsageError

    step = CallSpec(tool="mcp__playwright__browser_click",
                    input={"element": "Delete ticket", "ref": "e7"})
    snap, click = harness_calls("claude-code", step, set())
    assert (snap.tool, snap.arguments) == ("mcp__playwright__browser_snapshot", {})
    assert click.tool == "mcp__playwright__browser_click" and click.resolve is not None
    wanted = {"element": "Delete ticket", "target": "e95"}
    assert click.resolve(SNAPSHOT) == wanted
    assert click.resolve(json.dumps([{"type": "text", "text": SNAPSHOT}])) == wanted
    assert click.resolve("Wall time: 0.2 seconds\nOutput:\n"
                         + json.dumps({"result": SNAPSHOT})) == wanted
    _, other = harness_calls("claude-code", CallSpec(
        tool="mcp__playwright__browser_click", input={"element": "Delete page"}), set())
    assert other.resolve is not None
    with pytest.raises(UsageError, match=r"no button or link 'Delete page'.*Delete ticket"):
        other.resolve(SNAPSHOT)
    nav = CallSpec(tool="mcp__playwright__browser_navigate", input={"url": "http://h/x"})
    search, go = harness_calls("codex", nav, set())
    assert search.kind == "tool_search"
    assert (go.tool, go.namespace, go.arguments) == (
        "browser_navigate", "mcp__playwright", {"url": "http://h/x"})


def test_the_browser_server_opens_the_runs_profile_with_remote_debugging(tmp_path: Path) -> None:
    """@playwright/mcp is configured on the run's profile (where the logins were seeded),
    with remote debugging on so preimage reaches its open browser, and writes its files
    beside the run, not into the project."""
    from preimage.bench.harness_calls import mcp_definitions
    from preimage.bench.systems.base import Sandbox

    sandbox = Sandbox.create(tmp_path)
    sandbox.variables["profile"] = str(tmp_path / "profile")
    spec = mcp_definitions({"playwright"}, sandbox, lambda pin: Path(f"/bin/{pin}"))
    args = spec["playwright"]["args"]
    assert args[args.index("--user-data-dir") + 1] == str(tmp_path / "profile")
    config = json.loads(Path(args[args.index("--config") + 1]).read_text())
    assert config["browser"]["launchOptions"]["args"] == ["--remote-debugging-port=0"]
    assert not Path(args[args.index("--output-dir") + 1]).is_relative_to(sandbox.cwd)


def test_a_step_without_a_published_tool_is_refused_with_the_reason() -> None:
    """A step no published server's tool carries is refused with the reason (never
    simulated instead)."""
    step = CallSpec(tool="mcp__playwright__browser_drag", input={"from": "a", "to": "b"})
    with pytest.raises(NoHarnessToolError, match="@playwright/mcp"):
        harness_calls("claude-code", step, set())
    step = CallSpec(tool="mcp__postgres__vacuum_everything", input={})
    with pytest.raises(NoHarnessToolError, match="no published MCP server"):
        harness_calls("codex", step, set())


#: The CI sample's browser tasks that also run through the real harness: one per app (the
#: forum's script, the forge's click by a snapshot ref, the file-sharing app's script).
#: B.forge-repository.02 runs in the simulated sample only: CI's time budget.
HARNESS_BROWSER_SAMPLE = ("B.forum-moderate.01", "B.forge-milestone.01", "B.files-share.01")


@pytest.mark.harness
@pytest.mark.postgres
@pytest.mark.kubernetes
@pytest.mark.imap
@pytest.mark.slow
def test_the_ci_sample_through_claude_code(bench: Callable[..., Any]) -> None:
    """The fixed CI sample through the pinned Claude Code binary, all five domains (three
    browser tasks through @playwright/mcp on the run's profile): preimage's hook held every
    regret moment and brought the state back; with no protector the damage stays."""
    picked = [arg for sid in HARNESS_BROWSER_SAMPLE for arg in ("-k", sid)]
    report = bench("--suite", "regret-ci", "-k", "[TSKE].*", *picked, "--harness",
                   "claude-code", "--protectors", "none,preimage", "--require-servers",
                   timeout=2400)
    runs = report["runs"]
    assert report["not_run"] == []
    assert {r["scenario"] for r in runs} == {
        s for s in CI_SAMPLE if not s.startswith("B.")} | set(HARNESS_BROWSER_SAMPLE)
    assert Counter(r["category"] for r in runs if r["protector"] == "preimage") == {
        "terminal": 7, "sql": 5, "kubernetes": 2, "email": 3, "browser": 3}
    for r in runs:
        assert r["status"] == "ok" and r["harness"] == "claude-code", (r["scenario"], r["reason"])
        assert not any("refused" in n or " ran " in n for n in r["notes"]), (r["scenario"], r["notes"])
        assert len(r["call_gaps"]) == r["calls"], r["scenario"]
    for r in (r for r in runs if r["protector"] == "preimage"):
        assert r["backed_up"] and r["moments_covered"] == r["moments"], (r["scenario"], r)
        assert r["restorable"] == 1.0, (r["scenario"], r["differences"])
    for r in (r for r in runs if r["protector"] == "none"):
        assert not r["backed_up"] and r["restorable"] == pytest.approx(r["damage"]), r["scenario"]
        assert r["damage"] < 1.0, r["scenario"]


def _run(scenario: str, protector: str, gaps: list[float], **kw: Any) -> RunResult:
    return RunResult(scenario=scenario, title="t", category="sql", system="postgres",
                     protector=protector, label=protector, harness="claude-code",
                     call_gaps=gaps, moments=1, **kw)


def test_the_harness_table_pairs_each_call_with_the_unprotected_run(tmp_path: Path) -> None:
    """Per domain: moments held, restorable, the median gap per call and what the protector
    adds beside the same task's unprotected call; later work lost; the report folder is a
    regret report (not the undo suite's) with its plots."""
    report = BenchReport(version="0", suite="regret", started_at="now", seconds=1.0,
                         protectors={"none": "no backup", "preimage": "preimage (hook)"})
    report.runs = [
        _run("S.a", "none", [0.1, 0.2], moments_covered=0, restorable=0.2, damage=0.2),
        _run("S.a", "preimage", [0.4, 0.2], moments_covered=1, restorable=1.0, damage=0.2,
             stored_bytes=2048, intervening=3, collateral=0, capture_s=None),
    ]
    report.totals = [totals_for(p, label, report.runs) for p, label in report.protectors.items()]
    table = harness_table(report)
    assert "| sql | 1 | 0/1 held · 0.200 · 150 ms/call |" in table
    assert "1/1 held · 1.000 · 300 ms/call (+150 ms) · 2.0 KiB · 0 tok · later work lost 0/3" \
        in table
    write_report(report, tmp_path / "out")
    assert {p.name for p in (tmp_path / "out").iterdir()} >= {
        "index.html", "table.md", "latency.png", "similarity_by_category.png"}
    assert table in (tmp_path / "out" / "table.md").read_text()
    page = (tmp_path / "out" / "index.html").read_text()
    assert "<h3>claude-code</h3>" in page
    assert "<td>1/1 held · 1.000 · 300 ms/call (+150 ms) · 2.0 KiB · 0 tok · later work " \
           "lost 0/3</td>" in page
    assert "<dt>later work lost</dt>" in page and "<dt>held</dt>" in page


def test_every_preimage_run_below_full_names_why() -> None:
    """Each preimage run below 1.0 restorable is listed per harness with the leaves that
    differ (else its notes); unprotected runs and full restores are not."""
    report = BenchReport(version="0", suite="regret", started_at="now", seconds=1.0,
                         protectors={"none": "no backup", "preimage": "preimage (hook)"})
    report.runs = [
        _run("B.a", "none", [0.1], restorable=0.3, damage=0.3),
        _run("B.a", "preimage", [0.2], restorable=0.95, damage=0.3,
             differences=["share k1: expiry 1700 → 1800 (server-assigned: copyparty stamps it)"]),
        _run("B.b", "preimage", [0.2], restorable=0.9, damage=0.3, notes=["restore took 2 s"]),
        _run("B.c", "preimage", [0.2], restorable=1.0, damage=0.3),
    ]
    table = harness_table(report)
    assert "preimage below 1.0 restorable through claude-code: 2 runs" in table
    assert "- B.a (preimage): restorable 0.950 — share k1: expiry 1700 → 1800 " \
           "(server-assigned: copyparty stamps it)" in table
    assert "- B.b (preimage): restorable 0.900 — restore took 2 s" in table
    assert "B.c (" not in table


def test_collateral_counts_the_later_work_not_the_protectors_own_store() -> None:
    """Later work is what the session changed in its scope after the destructive steps;
    the records a protector keeps inside the project (BackUpper's .backupper/) are not."""
    from preimage.bench.harness_collateral import later_work_step
    from preimage.bench.session import Moment

    note = CallSpec(tool="Bash", input={"command": "echo done >> NOTES.md"})
    rm = CallSpec(tool="Bash", input={"command": "rm -rf out"})
    assert later_work_step([Moment(rm, ["file:///p/out"], True), Moment(note, [], False)]) == 1
    assert later_work_step([Moment(rm, ["a"], True), Moment(note, [], False),
                            Moment(rm, ["b"], True)]) is None   # interleaved: not measured
    watch = CollateralWatch(["file:///p"], 1, blobs=None)
    kept = {"kind=file|path=/p/NOTES.md": {}, "kind=file|path=/p/.backupper/x": {}}
    assert set(outside_own(kept, ["/p/.backupper"])) == {"kind=file|path=/p/NOTES.md"}
    assert outside_own(kept, []) == kept and watch.step == 1


def test_codex_waits_for_a_slow_mcp_server_as_claude_code_does(tmp_path: Path) -> None:
    """Codex's MCP servers are required and may take as long to start as Claude Code's
    (120 s): at its default 30 s postgres-mcp did not start on a loaded machine, and Codex
    ran none of the task's calls."""
    import tomllib

    from preimage.bench.harness_session import HarnessRig
    from preimage.bench.systems.base import Sandbox

    sandbox = Sandbox.create(tmp_path)
    env = {"CODEX_HOME": str(tmp_path / "codex")}
    HarnessRig("codex", {}, None).configure(
        sandbox, env, "http://127.0.0.1:9", {"postgres": {"command": "/bin/pg-mcp", "args": [],
                                                          "env": {"DATABASE_URI": "pg://x"}}})
    server = tomllib.loads((tmp_path / "codex" / "config.toml").read_text())["mcp_servers"]
    assert server["postgres"]["required"] is True
    assert server["postgres"]["startup_timeout_sec"] == 120
    claude = HarnessRig("claude-code", {}, None).environment(sandbox, tmp_path / "h", "http://m")
    assert claude["MCP_TIMEOUT"] == "120000"
