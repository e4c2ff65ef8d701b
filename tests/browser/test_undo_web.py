"""Undo one call on a web app, against a real isso and a real Trac through real Chromium:
records by the adapter's natural key; everyone else's records and later changes stay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import preimage
from fixtures.isso import IssoServer, seed_thread
from fixtures.trac import TracServer
from preimage import Store
from preimage.engine.undo import capture_after

from .conftest import (
    CliRunner,
    moderator_deletes,
    trac_agent_confirms_delete,
)

pytestmark = [pytest.mark.browser, pytest.mark.webapp]


@pytest.fixture
def own_profile(cli_profile: Path) -> Path:
    """preimage's own signed-in profile (the session's ``cli_profile``), as a hook's would
    be: the agent's browser (``profile``) and preimage's reads do not share connections."""
    return cli_profile


def _isso(server: IssoServer, thread: str, profile: Path) -> str:
    return f"web+isso://127.0.0.1:{server.port}{thread}?profile={profile}"


def _trac(server: TracServer, path: str, profile: Path) -> str:
    return f"web+trac://127.0.0.1:{server.port}{path}?profile={profile}&env={server.env}"


def call(store: Store, uri: str, what: str, run: Any) -> str:
    """A protected call as the layer records it: pre-call backup, the call, post-call backup."""
    pre = preimage.capture([uri], store=store, kind="layer", tier="pair", session="w1",
                           tool_call={"tool": "mcp__playwright__browser_click",
                                      "input": {"element": what}}, label=what)
    run()
    assert capture_after(pre.id, store=store) is not None
    return pre.id


def _published(server: IssoServer, thread: str) -> dict[str, str]:
    return {c["text"]: c["author"] for c in server.comments(thread) if c["mode"] == 1}


def test_isso_undo_brings_deleted_comments_back_and_keeps_new_ones(
    isso_server: IssoServer, profile: Path, own_profile: Path, store: Store
) -> None:
    """A moderator agent deletes two comments; a reader then replies to another one.  Undo
    re-creates the two (text, author, e-mail, nesting) and keeps the reader's reply."""
    thread = "/blog/undo-isso"
    ids = seed_thread(isso_server, thread)
    uri = _isso(isso_server, thread, own_profile)
    before = _published(isso_server, thread)
    pre = call(store, uri, "Delete comment",
               lambda: moderator_deletes(isso_server, profile, thread, [ids["root2"], ids["reply1"]]))
    isso_server.post(thread, "A later reply by a reader.", author="erin", parent=ids["root3"])

    result = preimage.undo(pre, store=store)
    assert result.ok and result.conflicts == 0, result.to_dict()
    verdicts = sorted(p.verdict.value for p in result.plans[0].items)
    assert verdicts == ["revert", "revert"]
    assert _published(isso_server, thread) == {**before, "A later reply by a reader.": "erin"}
    report, _ = preimage.score(pre, store=store)
    lost = [d for d in report.differences if d.fidelity in ("content", "metadata")
            and d.reason != "extra item"]
    assert lost == [], lost[:5]


def test_trac_undo_relinks_tickets_and_keeps_a_later_comment(
    trac_server: TracServer, profile: Path, own_profile: Path, store: Store
) -> None:
    """An agent deletes a milestone in Trac's UI (its tickets are retargeted).  A person then
    comments on one ticket, moves the other to another milestone and files a new ticket.
    Undo re-creates the milestone and links the commented ticket again with the person's
    comment kept after its history; the moved ticket is a conflict, left where the person
    put it; the new ticket is untouched."""
    first, second = trac_server.seed({
        "milestones": [{"name": "undo-label", "description": "Undo *me*.",
                        "due": "2025-02-01T09:00:00Z"}],
        "tickets": [
            {"time": "2024-06-01T10:00:00Z",
             "fields": {"summary": "Keep me linked", "reporter": "alice",
                        "milestone": "undo-label", "status": "new"},
             "changes": [{"author": "bob", "time": "2024-06-02T10:00:00Z", "comment": "+1"}]},
            {"time": "2024-06-03T10:00:00Z",
             "fields": {"summary": "Moved by a person", "reporter": "carol",
                        "milestone": "undo-label", "status": "new"}},
        ]})
    uri = _trac(trac_server, "/milestone/undo-label", own_profile)
    pre = call(store, uri, "Delete milestone", lambda: trac_agent_confirms_delete(
        trac_server, profile, "/milestone/undo-label", "input#delete"))
    later = (datetime.now(UTC) + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    trac_server.change_ticket(first, "erin", later, comment="Still needed for 2.0.")
    trac_server.change_ticket(second, "erin", later, fields={"milestone": "1.0"})
    (new,) = trac_server.seed({"tickets": [{"time": later, "fields": {
        "summary": "Filed later", "reporter": "erin", "milestone": "", "status": "new"}}]})

    result = preimage.undo(pre, store=store)
    plan = result.plans[0]
    # A record's label is its ref: ``milestone:undo-label``, ``ticket:<time> <reporter>``.
    verdicts = {p.label.split(":", 1)[0] + " " + p.label.split(":", 1)[1].rsplit(" ", 1)[-1]:
                p.verdict.value for p in plan.items}
    assert result.conflicts == 1, plan.to_dict()
    assert verdicts == {"milestone undo-label": "revert", "ticket alice": "merge",
                        "ticket carol": "conflict"}, verdicts
    (conflict,) = plan.conflicts
    assert [c.path for c in conflict.conflicts] == ["content.milestone"]

    tickets = {t: preimage.capture([_trac(trac_server, f"/ticket/{t}", own_profile)], store=store)
               .snapshots[0].items[0] for t in (first, second, new)}
    kept = tickets[first]
    assert kept.content["milestone"] == "undo-label"
    assert [c["comment"] for c in kept.content["changes"]] == ["+1", "Still needed for 2.0."]
    assert [m["author"] for m in kept.metadata["change_log"]] == ["bob", "erin"]
    assert tickets[second].content["milestone"] == "1.0"
    assert tickets[new].content["summary"] == "Filed later"
    milestone = preimage.capture([uri], store=store).snapshots[0].items[0]
    assert (milestone.kind, milestone.content["description"]) == ("milestone", "Undo *me*.")


def _hook(event: str, tool: str, tool_input: dict[str, Any], env: dict[str, str],
          cwd: Path, **extra: Any) -> Any:
    payload = json.dumps({"hook_event_name": event, "tool_name": tool, "tool_input": tool_input,
                          "cwd": str(cwd), "session_id": "web-undo", "tool_use_id": tool,
                          **extra})
    proc = subprocess.run([sys.executable, "-m", "preimage", "hook", "claude-code"],
                          input=payload, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def test_hook_flow_undo_on_isso(
    isso_server: IssoServer, profile: Path, cli_profile: Path, preimage_cli: CliRunner,
    store: Store, tmp_path: Path,
) -> None:
    """Through the hook processes: PreToolUse backs up the thread, PostToolUse captures it
    again, and `preimage undo` (CLI) by the call's id brings back what the agent deleted
    while a comment posted afterwards stays."""
    thread = "/blog/hook-undo"
    ids = seed_thread(isso_server, thread)
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.yaml").write_text(json.dumps({
        "mcp": {"playwright": {"kind": "browser", "profile": str(profile)}},
        "sites": {isso_server.url: "isso"},
    }))
    env = {**os.environ, "PREIMAGE_HOME": str(store.home),
           "PREIMAGE_CONFIG_DIR": str(config), "PREIMAGE_BROWSER_PROFILE": str(cli_profile)}
    page = f"{isso_server.url}/admin/?comment_search_url=https://blog.example{thread}"
    _hook("PreToolUse", "mcp__playwright__browser_navigate", {"url": page}, env, tmp_path)
    click = "mcp__playwright__browser_click"
    answer = _hook("PreToolUse", click, {"element": "Delete comment", "ref": "e12"}, env,
                   tmp_path)
    assert "additionalContext" in answer["hookSpecificOutput"]
    moderator_deletes(isso_server, profile, thread, [ids["root3"], ids["reply3"]])
    _hook("PostToolUse", click, {"element": "Delete comment", "ref": "e12"}, env, tmp_path,
          tool_response={"content": "clicked"})
    isso_server.post(thread, "Posted after the agent.", author="frank")

    (entry,) = [e for e in preimage_cli("log") if e["tool"] == click]
    assert entry["post_backup"] and "2 removed" in entry["delta"]
    done = preimage_cli("undo", click)
    assert done["ok"] and done["conflicts"] == 0
    published = _published(isso_server, thread)
    assert "Spam? No, a real question about the API." in published
    assert "Answering Dave:\n\n    code block" in published
    assert published["Posted after the agent."] == "frank"
