"""B-delete-comments against a real isso, read and written through real Chromium."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from preimage.connectors.browser import browser_context
from preimage.connectors.web import LoginRequiredError, SelectorMismatchError

import preimage
from fixtures.isso import IssoServer, seed_thread
from preimage import Store, TransientConnectorError

pytestmark = [pytest.mark.browser, pytest.mark.webapp]


def _uri(server: IssoServer, thread: str, profile: Path) -> str:
    return f"web+isso://127.0.0.1:{server.port}{thread}?profile={profile}"


def _moderator_deletes(server: IssoServer, profile: Path, thread: str, ids: list[int]) -> None:
    """What a moderator agent does: the admin page's delete action, in the browser."""
    page = browser_context(profile).new_page()
    for cid in ids:
        page.goto(f"{server.url}/admin/?comment_search_url=http://x{thread}%23isso-{cid}")
        onclick = page.get_attribute(f"#send-edit-btn-{cid}", "onclick") or ""
        key = re.search(r"'([^']+)'", onclick)
        assert key is not None
        status = page.evaluate(
            "async (u) => (await fetch(u, {method: 'POST', headers: {'Content-Type': "
            "'application/json'}, body: '{}'})).status",
            f"{server.url}/id/{cid}/delete/{key.group(1)}",
        )
        assert status == 200
    page.close()


def _dump(db: Path) -> str:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return "\n".join(con.iterdump())
    finally:
        con.close()


def test_deleted_comments_come_back(isso_server: IssoServer, profile: Path, store: Store) -> None:
    """B-delete-comments: text, parent, author, e-mail and website return exactly; ids,
    created times and votes are reported as server-assigned with the reason."""
    thread = "/blog/release-1"
    ids = seed_thread(isso_server, thread)
    backup = preimage.capture([_uri(isso_server, thread, profile)], store=store)
    captured = {r.name: r for r in backup.snapshots[0].items}
    assert any(r.metadata.get("email") == "bob@example.org" for r in captured.values())

    # root1 has replies: isso keeps it as an empty placeholder; reply3 and root2 go entirely.
    _moderator_deletes(isso_server, profile, thread, [ids["root1"], ids["reply3"], ids["root2"]])
    assert len([c for c in isso_server.comments(thread) if c["mode"] == 1]) == 3

    result = preimage.restore(backup.id, store=store)
    report = result.reports[0]
    assert result.ok, [i for i in report.items if i.outcome.value == "failed"]
    restored = [i for i in report.items if i.outcome.value == "restored"]
    assert restored and all("created (isso stamps" in i.reason for i in restored)
    assert {m.old for m in report.remaps} >= {ids["root1"], ids["reply3"], ids["root2"]}

    score, _ = preimage.score(backup.id, store=store)
    assert score.classes["content"].score == 1.0
    assert score.classes["metadata"].score == 1.0
    server_fields = {d.path for d in score.differences}
    assert server_fields <= {"server['id']", "server['parent_id']", "server['created']",
                             "server['likes']", "server['dislikes']"}
    assert all(d.fidelity == "server" and d.note for d in score.differences)
    live = isso_server.comments(thread)
    assert sorted(c["text"] for c in live) == sorted(r.content["text"] for r in captured.values()
                                                     if r.kind == "comment")


def test_capture_changes_nothing_in_isso(isso_server: IssoServer, profile: Path, store: Store) -> None:
    """Capturing reads the public API and the admin page only: isso's database is unchanged."""
    thread = "/blog/read-only"
    seed_thread(isso_server, thread)
    before = _dump(isso_server.db)
    preimage.capture([_uri(isso_server, thread, profile)], store=store)
    assert _dump(isso_server.db) == before


def test_profile_without_admin_login_is_refused(
    isso_server: IssoServer, tmp_path: Path, store: Store
) -> None:
    """A profile that is not signed in to isso's admin page gets a login error, not a snapshot."""
    fresh = tmp_path / "fresh-profile"
    fresh.mkdir()
    with pytest.raises(LoginRequiredError, match=r"isso.*log in once"):
        preimage.capture([_uri(isso_server, "/blog/release-1", fresh)], store=store)


def test_origin_down_is_transient(profile: Path, store: Store) -> None:
    """An isso that is not running is reported as unreachable (worth retrying)."""
    from fixtures.isso import free_port

    with pytest.raises(TransientConnectorError, match="cannot reach"):
        preimage.capture([f"web+isso://127.0.0.1:{free_port()}/blog/x?profile={profile}"],
                         store=store)


def test_changed_admin_page_names_adapter_and_selector(
    isso_server: IssoServer, profile: Path, store: Store
) -> None:
    """When the admin page no longer has the comment list, the error names the adapter and
    the selector instead of capturing an empty thread."""
    ctx = browser_context(profile)
    pattern = f"{isso_server.url}/admin/**"
    ctx.route(pattern, lambda route: route.fulfill(
        status=200, content_type="text/html", body="<html><div id='comments-v2'></div></html>"))
    try:
        with pytest.raises(SelectorMismatchError) as err:
            preimage.capture([_uri(isso_server, "/blog/release-1", profile)], store=store)
    finally:
        ctx.unroute(pattern)
    assert err.value.adapter == "isso" and err.value.selector == "#isso-root"


def test_refused_comment_is_reported(
    isso_server: IssoServer, profile: Path, store: Store, tmp_path: Path
) -> None:
    """An isso that now requires an e-mail refuses to re-create an anonymous comment: the
    report names it with isso's reason, and the other deleted comment still comes back."""
    thread = "/blog/strict"
    ids = seed_thread(isso_server, thread)
    # The second isso shares the database (and so the signing key): the profile's admin
    # session cookie, kept per host, is valid there too.
    with IssoServer(tmp_path / "strict", db=isso_server.db, require_email=True) as strict:
        backup = preimage.capture([_uri(strict, thread, profile)], store=store)
        _moderator_deletes(strict, profile, thread, [ids["root2"], ids["root3"]])
        result = preimage.restore(backup.id, store=store)
    assert not result.ok
    failed = [i for i in result.reports[0].items if i.outcome.value == "failed"]
    assert len(failed) == 1 and "anonymous" in failed[0].key
    assert "refused" in failed[0].reason and "email" in failed[0].reason.lower()
    back = [i for i in result.reports[0].items if i.outcome.value == "restored"]
    assert any("dave" in i.key for i in back)
