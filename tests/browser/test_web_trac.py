"""The Trac adapter against a real Trac, through real Chromium: read-only capture and bad input.

B-delete-issue and B-delete-label run through the CLI in test_browser_scenarios.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import preimage
from fixtures.trac import TracServer
from preimage import Store
from preimage.connectors.browser.chromium import browser_context
from preimage.connectors.web import LoginRequiredError

from .conftest import trac_agent_confirms_delete

pytestmark = [pytest.mark.browser, pytest.mark.webapp]


def _uri(server: TracServer, path: str, profile: Path) -> str:
    return f"web+trac://127.0.0.1:{server.port}{path}?profile={profile}&env={server.env}"


def test_capture_changes_nothing_in_trac(
    trac_server: TracServer, profile: Path, store: Store
) -> None:
    """Reading a milestone and its tickets through the pages writes nothing to Trac's database."""
    before = trac_server.dump()
    preimage.capture([_uri(trac_server, "/milestone/1.0", profile)], store=store)
    assert trac_server.dump() == before


def test_profile_without_trac_login_is_refused(
    trac_server: TracServer, unsigned_profile: Path, store: Store
) -> None:
    """A profile not signed in to Trac gets a login error naming the adapter."""
    fresh = unsigned_profile
    with pytest.raises(LoginRequiredError, match="'trac'"):
        preimage.capture([_uri(trac_server, "/ticket/1", fresh)], store=store)


def _wiki(name: str) -> dict[str, Any]:
    return {"wiki": [{"name": name, "versions": [
        {"text": "= Onboarding =\n\nAsk **alice** for keys.\n", "author": "alice",
         "comment": "first cut", "time": "2024-02-01T09:00:00Z"},
        {"text": "= Onboarding =\n\nAsk **bob** for keys.\n * VPN: see [wiki:VPN]\n",
         "author": "bob", "comment": "bob has the keys now", "time": "2024-02-03T10:30:00Z"},
        {"text": "= Onboarding =\n\nAsk **bob** for keys.\n * VPN: see [wiki:VPN]\n * Ünïcode ok\n",
         "author": "carol", "comment": "", "time": "2024-03-01T08:15:05Z"},
    ]}]}


def _wiki_rows(server: TracServer, name: str) -> list[tuple[int, str, str, str, str]]:
    """Every version of a wiki page as Trac's database holds it (version, author, time
    in seconds, comment, text): the outside reading."""
    import sqlite3

    con = sqlite3.connect(f"file:{server.env / 'db' / 'trac.db'}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT version, author, time / 1000000, comment, text FROM wiki "
                           "WHERE name = ? ORDER BY version", (name,)).fetchall()
    finally:
        con.close()
    return [tuple(r) for r in rows]


def test_deleted_wiki_page_comes_back_with_every_version(
    trac_server: TracServer, profile: Path, store: Store
) -> None:
    """A wiki page deleted through Trac's delete form comes back with every version: its
    number, text, author, time and change comment, as Trac's database held them."""
    name = "TeamOnboarding"
    trac_server.seed(_wiki(name))
    before = _wiki_rows(trac_server, name)
    backup = preimage.capture([_uri(trac_server, f"/wiki/{name}", profile)], store=store)
    trac_agent_confirms_delete(trac_server, profile, f"/wiki/{name}", "input#delete")
    assert _wiki_rows(trac_server, name) == []
    result = preimage.restore(backup.id, store=store)
    assert result.ok, [(i.key, i.reason) for r in result.reports for i in r.items]
    assert _wiki_rows(trac_server, name) == before
    total, _ = preimage.score(backup.id, store=store)
    assert total.value("content") == 1.0 and total.value("metadata") == 1.0


def test_wiki_edit_after_capture_is_taken_back(
    trac_server: TracServer, profile: Path, store: Store
) -> None:
    """A version saved after the capture is removed by the restore; the earlier versions
    stay as they were."""
    name = "TeamRunbook"
    trac_server.seed(_wiki(name))
    before = _wiki_rows(trac_server, name)
    backup = preimage.capture([_uri(trac_server, f"/wiki/{name}", profile)], store=store)
    trac_server.seed({"wiki": [{"name": name, "versions": [
        {"text": "gone\n", "author": "mallory", "comment": "cleanup",
         "time": "2024-04-01T00:00:00Z"}]}]})
    result = preimage.restore(backup.id, store=store)
    assert result.ok, [(i.key, i.reason) for r in result.reports for i in r.items]
    assert _wiki_rows(trac_server, name) == before


def _repositories(server: TracServer) -> str:
    """Trac's own listing of its repositories (``trac-admin repository list``)."""
    return server.admin("repository", "list")


def test_removed_repository_comes_back(
    trac_server: TracServer, profile: Path, store: Store, tmp_path: Path
) -> None:
    """A git repository removed from Trac's repository admin comes back with its type,
    directory, description, URL and flags; its branches are browsable again."""
    import subprocess

    repo = tmp_path / "proj.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(repo)], check=True)
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(repo), str(work)], check=True,
                   capture_output=True)
    git = ["git", "-C", str(work), "-c", "user.name=a", "-c", "user.email=a@x"]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "one"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "main", "main:feature-x"], check=True,
                   capture_output=True)
    trac_server.seed({"repositories": [{"name": "proj-r", "dir": str(repo), "type": "git",
                                        "description": "The **main** repository.",
                                        "url": "https://git.example/proj"}]})
    before = _repositories(trac_server)
    uri = _uri(trac_server, "/admin/versioncontrol/repository", profile)
    backup = preimage.capture([uri], store=store)
    trac_server.admin("repository", "remove", "proj-r")
    assert "proj-r" not in _repositories(trac_server)
    result = preimage.restore(backup.id, store=store)
    assert result.ok, [(i.key, i.reason) for r in result.reports for i in r.items]
    assert _repositories(trac_server) == before
    total, _ = preimage.score(backup.id, store=store)
    assert total.value("content") == 1.0 and total.value("metadata") == 1.0
    page = browser_context(profile).new_page()
    page.goto(f"{trac_server.url}/browser/proj-r?rev=feature-x")
    assert page.locator("#content.browser").count()
    page.close()


def test_ticket_recreated_under_a_new_number_is_reported_restored(
    trac_server: TracServer, profile: Path, store: Store
) -> None:
    """A ticket deleted while a newer one exists comes back under the next number: the
    restore reports it restored with the number remapped, not as failed."""
    first, _newer = trac_server.seed({"tickets": [
        {"time": "2024-05-01T10:00:00Z", "fields": {"summary": "Old one", "reporter": "ann",
                                                    "status": "new"},
         "changes": [{"author": "bob", "time": "2024-05-02T10:00:00Z", "comment": "Seen."}]},
        {"time": "2024-05-03T10:00:00Z", "fields": {"summary": "Newer", "reporter": "cy",
                                                    "status": "new"}}]})
    backup = preimage.capture([_uri(trac_server, f"/ticket/{first}", profile)], store=store)
    trac_agent_confirms_delete(trac_server, profile, f"/ticket/{first}",
                               "input[value='Delete ticket']")
    result = preimage.restore(backup.id, store=store)
    assert result.ok, [(i.key, i.outcome.value, i.reason) for r in result.reports for i in r.items]
    [remap] = result.remaps
    assert remap.old == first and remap.new > first
    import sqlite3

    con = sqlite3.connect(f"file:{trac_server.env / 'db' / 'trac.db'}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT summary, reporter FROM ticket WHERE id = ?",
                          (remap.new,)).fetchone()
    finally:
        con.close()
    assert row == ("Old one", "ann")
