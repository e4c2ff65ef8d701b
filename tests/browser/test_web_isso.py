"""The isso adapter against a real isso, through real Chromium: read-only capture and bad input.

B-delete-comments itself runs through the CLI in test_browser_scenarios.py.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import preimage
from fixtures.isso import IssoServer, seed_thread
from preimage import Store, TransientConnectorError
from preimage.connectors.browser import browser_context
from preimage.connectors.web import LoginRequiredError, SelectorMismatchError

from .conftest import moderator_deletes

pytestmark = [pytest.mark.browser, pytest.mark.webapp]


def _uri(server: IssoServer, thread: str, profile: Path) -> str:
    return f"web+isso://127.0.0.1:{server.port}{thread}?profile={profile}"


def _dump(db: Path) -> str:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return "\n".join(con.iterdump())
    finally:
        con.close()


def test_capture_changes_nothing_in_isso(isso_server: IssoServer, profile: Path, store: Store) -> None:
    """Capturing reads the public API and the admin page only: isso's database is unchanged."""
    thread = "/blog/read-only"
    seed_thread(isso_server, thread)
    before = _dump(isso_server.db)
    preimage.capture([_uri(isso_server, thread, profile)], store=store)
    assert _dump(isso_server.db) == before


def test_profile_without_admin_login_is_refused(
    isso_server: IssoServer, unsigned_profile: Path, store: Store
) -> None:
    """A profile that is not signed in to isso's admin page gets a login error, not a snapshot."""
    fresh = unsigned_profile
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
        moderator_deletes(strict, profile, thread, [ids["root2"], ids["root3"]])
        result = preimage.restore(backup.id, store=store)
    assert not result.ok
    failed = [i for i in result.reports[0].items if i.outcome.value == "failed"]
    assert len(failed) == 1 and "anonymous" in failed[0].key
    assert "refused" in failed[0].reason and "email" in failed[0].reason.lower()
    back = [i for i in result.reports[0].items if i.outcome.value == "restored"]
    assert any("dave" in i.key for i in back)
    # isso's per-comment edit cookies were not collected by the profile.
    names = {c["name"] for c in browser_context(profile).cookies()}
    assert not {n for n in names if n.removeprefix("isso-").isdigit()}
