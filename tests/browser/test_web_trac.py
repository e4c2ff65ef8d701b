"""B-delete-issue and B-delete-label against a real Trac, read through real Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest
from preimage.connectors.browser import browser_context
from preimage.connectors.web import LoginRequiredError

import preimage
from fixtures.trac import DEMO, TracServer
from preimage import Store

pytestmark = [pytest.mark.browser, pytest.mark.webapp]


def _uri(server: TracServer, path: str, profile: Path) -> str:
    return f"web+trac://127.0.0.1:{server.port}{path}?profile={profile}&env={server.env}"


def _agent_confirms_delete(server: TracServer, profile: Path, path: str, button: str) -> None:
    """What a browser agent does: open the delete page and press the button."""
    page = browser_context(profile).new_page()
    page.goto(f"{server.url}{path}?action=delete")
    page.click(f"form#delete-confirm {button}")
    page.wait_for_load_state()
    page.close()


def test_deleted_ticket_comes_back_with_history(
    trac_server: TracServer, profile: Path, store: Store
) -> None:
    """B-delete-issue: a deleted ticket returns with every field, every comment, their authors
    and times; only its number is new, and the report maps old → new."""
    ids = trac_server.seed({"tickets": DEMO["tickets"][:1]})
    tid = ids[0]
    backup = preimage.capture([_uri(trac_server, f"/ticket/{tid}", profile)], store=store)
    ticket = backup.snapshots[0].items[0]
    assert [m["author"] for m in ticket.metadata["change_log"]] == ["bob", "carol", "bob"]
    assert ticket.content["changes"][0]["comment"] == "I can reproduce it."

    _agent_confirms_delete(trac_server, profile, f"/ticket/{tid}", "input[value='Delete ticket']")
    gone, _ = preimage.score(backup.id, store=store)
    assert gone.classes["content"].score == 0.0

    result = preimage.restore(backup.id, store=store)
    assert result.ok
    report = result.reports[0]
    # Trac numbers a new ticket max+1: the old number comes back only if it was the highest.
    assert [(m.old, m.field) for m in report.remaps] in ([(tid, "server.id")], [])
    new_id = report.remaps[0].new if report.remaps else tid
    # The restored ticket has a new number, so score it where it lives now.
    again = preimage.capture([_uri(trac_server, f"/ticket/{new_id}", profile)], store=store)
    back = again.snapshots[0].items[0]
    assert back.content == ticket.content
    assert back.metadata == ticket.metadata
    assert back.server == {"id": new_id}
    assert "ticket.id" in backup.snapshots[0].server_reasons


def test_deleted_milestone_and_its_links_come_back(
    trac_server: TracServer, profile: Path, store: Store
) -> None:
    """B-delete-label: deleting a milestone in the UI unlinks its tickets; restore re-creates
    the milestone (description, due date) and re-links the same tickets, history unchanged."""
    trac_server.seed({"milestones": [{"name": "2.0", "description": "Next *major*.",
                                      "due": "2025-01-15T09:00:00Z"}],
                      "tickets": [
                          {"time": "2024-04-01T10:00:00Z",
                           "fields": {"summary": "Plugin API", "reporter": "alice",
                                      "milestone": "2.0", "status": "new"},
                           "changes": [{"author": "bob", "time": "2024-04-02T10:00:00Z",
                                        "comment": "+1"}]},
                          {"time": "2024-04-03T10:00:00Z",
                           "fields": {"summary": "Dark theme", "reporter": "carol",
                                      "milestone": "2.0", "status": "new"}}]})
    uri = _uri(trac_server, "/milestone/2.0", profile)
    backup = preimage.capture([uri], store=store)
    kinds = sorted(r.kind for r in backup.snapshots[0].items)
    assert kinds == ["milestone", "ticket", "ticket"]

    _agent_confirms_delete(trac_server, profile, "/milestone/2.0", "input#delete")
    gone, _ = preimage.score(backup.id, store=store)
    assert gone.restorable.score < 0.1

    result = preimage.restore(backup.id, store=store)
    assert result.ok
    assert result.reports[0].remaps == []  # the same tickets were re-linked, not re-created
    score, _ = preimage.score(backup.id, store=store)
    assert score.classes["content"].score == 1.0
    assert score.classes["metadata"].score == 1.0
    assert score.overall.score == 1.0


def test_capture_changes_nothing_in_trac(
    trac_server: TracServer, profile: Path, store: Store
) -> None:
    """Reading a milestone and its tickets through the pages writes nothing to Trac's database."""
    before = trac_server.dump()
    preimage.capture([_uri(trac_server, "/milestone/0.9", profile)], store=store)
    assert trac_server.dump() == before


def test_profile_without_trac_login_is_refused(
    trac_server: TracServer, tmp_path: Path, store: Store
) -> None:
    """A profile not signed in to Trac gets a login error naming the adapter."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    with pytest.raises(LoginRequiredError, match="'trac'"):
        preimage.capture([_uri(trac_server, "/ticket/1", fresh)], store=store)
