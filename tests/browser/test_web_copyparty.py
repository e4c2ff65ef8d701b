"""The copyparty adapter against a real copyparty, through real Chromium: folders, files with
their times, old versions and share links captured and restored; read-only capture; bad input."""

from __future__ import annotations

import base64
import hashlib
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import preimage
from fixtures.copyparty import CopypartyServer
from preimage import Store
from preimage.connectors.browser.chromium import browser_context
from preimage.connectors.web import LoginRequiredError

pytestmark = [pytest.mark.browser, pytest.mark.webapp]

PNG = base64.b64encode(bytes(range(256)) * 4).decode()


def _uri(server: CopypartyServer, path: str, profile: Path) -> str:
    return f"web+copyparty://127.0.0.1:{server.port}{path}?profile={profile}"


def _seed(server: CopypartyServer, team: str) -> None:
    server.seed({
        "folders": [f"/{team}/empty/deeper"],
        "files": [
            {"path": f"/{team}/notes.md", "text": "# final\n", "versions": ["# draft 1\n",
                                                                            "# draft 2\n"]},
            {"path": f"/{team}/img/logo.png", "base64": PNG, "mtime": 1700000000},
            {"path": f"/{team}/img/ünïcode name.txt", "text": "ok\n", "mtime": 1600000000},
        ],
        "shares": [{"key": f"{team}-img", "paths": [f"/{team}/img/"], "minutes": 600},
                   {"key": f"{team}-notes", "paths": [f"/{team}/notes.md"]}],
    })


def _anonymous(server: CopypartyServer, path: str) -> int:
    try:
        with urllib.request.urlopen(server.url + path, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_deleted_folder_versions_and_shares_come_back(
    copyparty: CopypartyServer, cp_profile: Path, store: Store
) -> None:
    """A folder deleted with its files, its old versions and its share links comes back:
    bytes, modification times, versions and the same share links (they open again)."""
    _seed(copyparty, "team-a")
    backup = preimage.capture([_uri(copyparty, "/team-a/", cp_profile)], store=store)
    assert _anonymous(copyparty, "/share/team-a-img/logo.png") == 200
    for key in ("team-a-img", "team-a-notes"):
        copyparty.request("POST", f"/?eshare=rm&skey={key}")
    copyparty.delete("/team-a")
    assert _anonymous(copyparty, "/share/team-a-img/logo.png") != 200
    result = preimage.restore(backup.id, store=store)
    assert result.ok, [(i.key, i.outcome.value, i.reason) for r in result.reports for i in r.items]
    total, _ = preimage.score(backup.id, store=store, remaps=result.remaps)
    assert total.value("content") == 1.0 and total.value("metadata") == 1.0
    logo = (copyparty.files / "team-a" / "img" / "logo.png").read_bytes()
    assert hashlib.sha256(logo).hexdigest() == hashlib.sha256(base64.b64decode(PNG)).hexdigest()
    assert int((copyparty.files / "team-a" / "img" / "logo.png").stat().st_mtime) == 1700000000
    versions = sorted(p.read_text() for p in (copyparty.files / "team-a" / ".hist").iterdir())
    assert versions == ["# draft 1\n", "# draft 2\n"]
    assert (copyparty.files / "team-a" / "empty" / "deeper").is_dir()
    assert _anonymous(copyparty, "/share/team-a-img/logo.png") == 200
    assert _anonymous(copyparty, "/share/team-a-notes/notes.md") == 200


def test_overwritten_file_and_later_upload_are_put_back(
    copyparty: CopypartyServer, cp_profile: Path, store: Store
) -> None:
    """A file edited after the capture gets its captured bytes back (the edit's version is
    dropped), and a file uploaded after the capture is removed."""
    _seed(copyparty, "team-b")
    backup = preimage.capture([_uri(copyparty, "/team-b/", cp_profile)], store=store)
    copyparty.edit("/team-b/notes.md", "# vandalised\n")
    copyparty.put("/team-b/later.txt", "new\n")
    result = preimage.restore(backup.id, store=store)
    assert result.ok, [(i.key, i.outcome.value, i.reason) for r in result.reports for i in r.items]
    assert (copyparty.files / "team-b" / "notes.md").read_text() == "# final\n"
    assert not (copyparty.files / "team-b" / "later.txt").exists()
    total, _ = preimage.score(backup.id, store=store, remaps=result.remaps)
    assert total.value("content") == 1.0 and total.value("metadata") == 1.0


def test_password_share_is_refused_not_made_public(
    copyparty: CopypartyServer, cp_profile: Path, store: Store
) -> None:
    """A share that had a password is reported as refused with the reason, and no share
    without the password appears under its key."""
    copyparty.seed({"files": [{"path": "/team-c/secret.txt", "text": "s\n"}],
                    "shares": [{"key": "team-c-pw", "paths": ["/team-c/"], "password": "hunter2"}]})
    backup = preimage.capture([_uri(copyparty, "/team-c/", cp_profile)], store=store)
    copyparty.request("POST", "/?eshare=rm&skey=team-c-pw")
    result = preimage.restore(backup.id, store=store)
    assert not result.ok
    failed = [i for i in result.reports[0].items if i.outcome.value == "failed"]
    assert [i.key for i in failed] == ["share:team-c-pw"]
    assert "password" in failed[0].reason
    assert _anonymous(copyparty, "/share/team-c-pw/secret.txt") != 200


def test_capture_changes_nothing(copyparty: CopypartyServer, cp_profile: Path,
                                 store: Store) -> None:
    """Reading folders, files, versions and shares leaves copyparty's files and share
    table as they were."""
    _seed(copyparty, "team-d")

    def state() -> tuple[list[tuple[str, int, float]], list[str]]:
        files = sorted((str(p.relative_to(copyparty.root)), p.stat().st_size, p.stat().st_mtime)
                       for p in copyparty.files.rglob("*") if p.is_file())
        con = sqlite3.connect(f"file:{copyparty.state / 'shares.db'}?mode=ro", uri=True)
        try:
            return files, list(con.iterdump())
        finally:
            con.close()

    before = state()
    preimage.capture([_uri(copyparty, "/team-d/", cp_profile)], store=store)
    assert state() == before


def test_profile_without_login_is_refused(
    copyparty: CopypartyServer, unsigned_profile: Path, store: Store
) -> None:
    """A profile not signed in to copyparty gets a login error naming the adapter."""
    _seed(copyparty, "team-e")
    with pytest.raises(LoginRequiredError, match="'copyparty'"):
        preimage.capture([_uri(copyparty, "/team-e/", unsigned_profile)], store=store)


def test_a_record_outside_the_target_folder_is_refused(
    copyparty: CopypartyServer, cp_profile: Path, store: Store
) -> None:
    """A snapshot whose record names a path outside its target's folder (edited by hand)
    is refused for that record; nothing is written there."""
    from preimage.connectors.web.adapter import RecordRefusedError, Site
    from preimage.connectors.web.copyparty import CopypartyAdapter
    from preimage.snapshot_schemas.web import WebRecord

    adapter = CopypartyAdapter()
    site = Site(adapter="copyparty", base_url=copyparty.url, location="/team-f/", params={},
                profile=cp_profile, context=browser_context(cp_profile))
    try:
        evil = [WebRecord(kind="file", name=name, content={"data": "eA=="},
                          metadata={"mtime": 1})
                for name in ("/elsewhere/x.txt", "/team-f/../elsewhere/y.txt")]
        results = adapter.create_many(site, evil, {})
    finally:
        site.close()
    assert all(isinstance(r, RecordRefusedError) and "not inside" in r.reason for r in results)
    assert not (copyparty.files / "elsewhere").exists()


def test_shares_an_account_may_not_see_are_recorded_uncaptured(
    copyparty: CopypartyServer, cp_member_profile: Path, store: Store
) -> None:
    """A profile whose account is not the share admin cannot see the admin's share of the
    folder: the capture records other accounts' shares as uncaptured, the score stays below
    1.0 and diff names them."""
    _seed(copyparty, "team-f")
    backup = preimage.capture([_uri(copyparty, "/team-f/", cp_member_profile)], store=store)
    snap = backup.snapshots[0]
    assert not [r for r in snap.items if r.kind == "share"]  # copyparty hid them from member
    assert [(u.kind, u.name) for u in snap.uncaptured] == [
        ("share", "shares from /team-f/ of accounts other than 'member'")]
    assert "share admin" in snap.uncaptured[0].reason
    total, _ = preimage.score(backup.id, store=store)
    assert total.overall.score is not None and total.overall.score < 1.0
    diffs = preimage.diff(backup.id, store=store)
    assert any("accounts other than 'member'" in line for d in diffs for line in d.uncaptured)


def test_shares_own_narrows_the_target_to_the_accounts_shares(
    copyparty: CopypartyServer, cp_member_profile: Path, store: Store
) -> None:
    """With ``?shares=own`` the member's capture holds its own share, records nothing as
    uncaptured, and its notes say other accounts' shares are outside the target."""
    copyparty.seed({"files": [{"path": "/team-h/m.txt", "text": "m\n"}],
                    "shares": [{"key": "team-h-mine", "paths": ["/team-h/m.txt"],
                                "owner": "member"},
                               {"key": "team-h-admins", "paths": ["/team-h/"]}]})
    uri = _uri(copyparty, "/team-h/", cp_member_profile) + "&shares=own"
    snap = preimage.capture([uri], store=store).snapshots[0]
    assert [r.name for r in snap.items if r.kind == "share"] == ["team-h-mine"]
    assert snap.uncaptured == []
    assert any("shares=own" in n and "'member'" in n for n in snap.notes)


def test_the_share_admin_captures_other_accounts_shares_with_nothing_uncaptured(
    copyparty: CopypartyServer, cp_profile: Path, store: Store
) -> None:
    """The admin profile sees the member's share of the folder (the share table shows
    another account's share, so it is the share admin): captured with its owner, nothing
    recorded as uncaptured."""
    copyparty.seed({"files": [{"path": "/team-g/m.txt", "text": "m\n"}],
                    "shares": [{"key": "team-g-member", "paths": ["/team-g/m.txt"],
                                "owner": "member"}]})
    snap = preimage.capture([_uri(copyparty, "/team-g/", cp_profile)], store=store).snapshots[0]
    shares = [r for r in snap.items if r.kind == "share"]
    assert [(r.name, r.metadata["owner"]) for r in shares] == [("team-g-member", "member")]
    assert snap.uncaptured == []
