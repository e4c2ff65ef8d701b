"""The B-* regret scenarios through the ``preimage`` command line, against real apps and Chromium.

Each test: ``preimage capture URI`` → the agent's destructive action through the
app's real UI in real Chromium → ``preimage restore ID`` → ``preimage score ID``,
every command a separate process with PREIMAGE_HOME set.  Restorable fields must
come back at 1.0; every field that did not is ``server`` class, with the reason
in the restore report.

The isso and Trac scenarios' CLI processes attach to the one Chromium that holds
their profile open.  B-clear-storage's profile is closed, so each CLI process opens
its own Chromium and sessionStorage (which lives in one tab of one browser) cannot
travel from a capture to a restore; that part is covered through the Python API in
test_browser_storage.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fixtures.isso import IssoServer, seed_thread
from fixtures.trac import TracServer
from preimage.connectors.browser import browser_context, close_profile

from .conftest import (
    CliRunner,
    clear_site_data,
    moderator_deletes,
    seeded_tab,
    trac_agent_confirms_delete,
    visit,
)

pytestmark = [pytest.mark.browser, pytest.mark.webapp]


def _reasons(restored: dict[str, Any]) -> str:
    return "\n".join(i["reason"] for r in restored["reports"] for i in r["items"])


def _fully_restored(score: dict[str, Any]) -> list[dict[str, Any]]:
    """Assert content and metadata at 1.0; return the differences (all server class)."""
    restorable = [(d["item"], d["path"], d["original"], d["restored"])
                  for d in score["differences"] if d["fidelity"] != "server"]
    assert score["content"] == 1.0, restorable[:10]
    assert score["metadata"] == 1.0, restorable[:10]
    assert all(d["fidelity"] == "server" and d["note"] for d in score["differences"])
    return list(score["differences"])


def test_delete_comments(
    isso_server: IssoServer, profile: Path, cli_profile: Path, preimage_cli: CliRunner
) -> None:
    """B-delete-comments: a moderator deletes three comments of a thread (one with replies);
    text, parent, author, e-mail and website come back; new ids, created times and votes are
    server class, each with isso's reason."""
    thread = "/blog/release-2"
    ids = seed_thread(isso_server, thread)
    uri = f"web+isso://127.0.0.1:{isso_server.port}{thread}?profile={cli_profile}"
    backup = preimage_cli("capture", uri)
    assert backup["items"] == 7  # the thread and its six comments

    # root1 has replies: isso keeps it as an empty placeholder; reply3 and root2 go entirely.
    moderator_deletes(isso_server, profile, thread, [ids["root1"], ids["reply3"], ids["root2"]])
    assert [c["mode"] for c in isso_server.comments(thread)].count(1) == 3

    restored = preimage_cli("restore", backup["id"])
    assert restored["ok"]
    remaps = restored["reports"][0]["remaps"]
    assert {m["old"] for m in remaps} >= {ids["root1"], ids["reply3"], ids["root2"]}
    reasons = _reasons(restored)
    assert "created (isso stamps the time of POST /new" in reasons
    assert "likes (isso counts one vote per client address" in reasons

    diffs = _fully_restored(preimage_cli("score", backup["id"], "--show", "1000"))
    # root1 had three likes; the replies that followed it to its new id changed parent_id.
    assert {d["path"] for d in diffs} == {"server.id", "server.parent_id",
                                          "server.created", "server.likes"}
    # each carries isso's own reason, and a new id the restore's remap
    assert all(d["note"].startswith("isso ") or d["note"].startswith("follows ") for d in diffs)
    assert sorted(c["text"] for c in isso_server.comments(thread))[0] == "Anonymous opinion here."


def test_purge_user(
    isso_server: IssoServer, profile: Path, cli_profile: Path, preimage_cli: CliRunner
) -> None:
    """B-purge-user: every comment of one commenter goes, in every thread of a forum; the
    ``/forum/*`` target captures all its threads (and no other), and the comments — and the
    reply someone wrote to one of them — come back with their authors and e-mails."""
    threads = ["/forum-p/welcome", "/forum-p/faq"]
    spam: dict[str, list[int]] = {}
    for n, thread in enumerate(threads):
        seed_thread(isso_server, thread)
        spam[thread] = [isso_server.post(thread, f"Cheap watches {n}.{i}", author="maria",
                                         email="maria@mail.example", addr=f"10.9.{n}.{i}")["id"]
                        for i in range(2)]
    isso_server.post(threads[0], "Please stop.", author="erin", parent=spam[threads[0]][0],
                     addr="10.1.0.9")
    seed_thread(isso_server, "/other/untouched")
    uri = f"web+isso://127.0.0.1:{isso_server.port}/forum-p/*?profile={cli_profile}"
    backup = preimage_cli("capture", uri)
    assert backup["items"] == 2 * (1 + 6 + 2) + 1  # two threads: record, 6 + 2 comments; a reply

    for thread, ids in spam.items():
        moderator_deletes(isso_server, profile, thread, ids)
    assert not any(c["author"] == "maria" for t in threads for c in isso_server.comments(t))

    restored = preimage_cli("restore", backup["id"])
    assert restored["ok"]
    _fully_restored(preimage_cli("score", backup["id"], "--show", "1000"))
    for thread in threads:
        maria = [c for c in isso_server.comments(thread) if c["author"] == "maria"]
        assert len(maria) == 2 and all(c["mode"] == 1 for c in maria)
    erin = [c for c in isso_server.comments(threads[0]) if c["author"] == "erin"]
    assert erin and erin[0]["parent"] in {c["id"] for c in isso_server.comments(threads[0])
                                           if c["author"] == "maria"}


def _trac_uri(server: TracServer, path: str, profile: Path) -> str:
    return f"web+trac://127.0.0.1:{server.port}{path}?profile={profile}&env={server.env}"


def test_delete_issue(
    trac_server: TracServer, profile: Path, cli_profile: Path, preimage_cli: CliRunner
) -> None:
    """B-delete-issue: a ticket deleted in Trac's UI comes back with every field, comment,
    author and time; only its number is new (server class, mapped old → new)."""
    first, _second = trac_server.seed({
        "milestones": [{"name": "cli-issue", "description": "Issue scenario."}],
        "tickets": [
            {"time": "2024-05-01T08:00:00Z",
             "fields": {"summary": "Login loop", "reporter": "alice", "type": "defect",
                        "description": "Redirects **forever**.", "milestone": "cli-issue",
                        "keywords": "auth", "status": "new"},
             "changes": [
                 {"author": "bob", "time": "2024-05-01T09:00:00.125000Z",
                  "comment": "I can reproduce it.", "set": {"owner": "bob", "status": "accepted"}},
                 {"author": "carol", "time": "2024-05-02T10:00:00Z", "comment": "Same here."},
             ]},
            {"time": "2024-05-03T08:00:00Z",
             "fields": {"summary": "Slow search", "reporter": "dave", "milestone": "cli-issue",
                        "status": "new"}},
        ]})
    # The ticket is captured where it is listed by its natural key (its milestone), so the
    # score finds it again under the new number Trac gives it.
    backup = preimage_cli("capture", _trac_uri(trac_server, "/milestone/cli-issue", cli_profile))
    assert backup["items"] == 3

    trac_agent_confirms_delete(trac_server, profile, f"/ticket/{first}",
                               "input[value='Delete ticket']")

    restored = preimage_cli("restore", backup["id"])
    assert restored["ok"]
    remaps = restored["reports"][0]["remaps"]
    assert [(m["old"], m["field"]) for m in remaps] == [(first, "server.id")]
    assert "id (Trac numbers tickets itself" in _reasons(restored)

    diffs = _fully_restored(preimage_cli("score", backup["id"]))
    assert [(d["path"], d["original"], d["restored"]) for d in diffs] == [
        ("server.id", first, remaps[0]["new"])]


def test_delete_label(
    trac_server: TracServer,
    profile: Path,
    cli_profile: Path,
    preimage_cli: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """B-delete-label: deleting a milestone in Trac's UI unlinks its tickets; restore brings
    the milestone (description, due date) and the same tickets' links back, history intact
    (the target names no Trac environment: PREIMAGE_TRAC_ENV does)."""
    trac_server.seed({
        "milestones": [{"name": "cli-label", "description": "Next *major*.",
                        "due": "2025-01-15T09:00:00Z"}],
        "tickets": [
            {"time": "2024-04-01T10:00:00Z",
             "fields": {"summary": "Plugin API", "reporter": "alice", "milestone": "cli-label",
                        "status": "new"},
             "changes": [{"author": "bob", "time": "2024-04-02T10:00:00Z", "comment": "+1"}]},
            {"time": "2024-04-03T10:00:00Z",
             "fields": {"summary": "Dark theme", "reporter": "carol", "milestone": "cli-label",
                        "status": "new"}},
        ]})
    monkeypatch.setenv("PREIMAGE_TRAC_ENV", str(trac_server.env))
    uri = f"web+trac://127.0.0.1:{trac_server.port}/milestone/cli-label?profile={cli_profile}"
    backup = preimage_cli("capture", uri)
    assert backup["items"] == 3

    trac_agent_confirms_delete(trac_server, profile, "/milestone/cli-label", "input#delete")

    restored = preimage_cli("restore", backup["id"])
    assert restored["ok"]
    assert restored["reports"][0]["remaps"] == []  # re-linked, not re-created

    score = preimage_cli("score", backup["id"])
    assert _fully_restored(score) == []
    assert score["overall"]["score"] == 1.0


def test_clear_storage(
    shop_site: Any, tmp_path: Path, preimage_cli: CliRunner
) -> None:
    """B-clear-storage: cookies (every attribute), localStorage and IndexedDB of a closed
    browser profile come back after its site data was cleared; sessionStorage is reported as
    not captured (no tab survives between CLI processes)."""
    agent = tmp_path / "agent-profile"
    uri = f"browser://{agent}?origin={shop_site.origin}"
    seeded_tab(agent, shop_site)
    close_profile(agent)  # the CLI can open the profile only once the agent's browser is closed

    backup = preimage_cli("capture", uri)
    assert backup["items"] > 5

    page = browser_context(agent).new_page()
    visit(page, shop_site)
    clear_site_data(agent, page)
    close_profile(agent)

    restored = preimage_cli("restore", backup["id"])
    assert restored["ok"]
    assert any("sessionStorage was not captured" in n for n in restored["reports"][0]["notes"])

    score = preimage_cli("score", backup["id"])
    assert _fully_restored(score) == []
    assert score["overall"]["score"] == 1.0
