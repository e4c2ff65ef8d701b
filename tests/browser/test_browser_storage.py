"""B-clear-storage through the Python API, against real Chromium.

The API runs in the process that drives the agent's browser, so — unlike the
CLI (test_browser_scenarios.py) — it can read and write sessionStorage, which
lives in an open tab.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import preimage
from preimage import Store
from preimage.connectors.browser import browser_context, close_profile
from preimage.snapshot_schemas.browser import BrowserSnapshot, CookieEntry

from .conftest import SHOP_HOST, clear_site_data, seeded_tab, visit

pytestmark = pytest.mark.browser

READ_JS = """async () => {
  const open = indexedDB.open('app');
  const db = await new Promise((ok) => { open.onsuccess = () => ok(open.result); });
  const tx = db.transaction(['notes', 'blobs'], 'readwrite');
  const all = await new Promise((ok) => { const r = tx.objectStore('notes').getAll(); r.onsuccess = () => ok(r.result); });
  const blob = await new Promise((ok) => { const r = tx.objectStore('blobs').get([1, 'compound']); r.onsuccess = () => ok(r.result); });
  const nextKey = await new Promise((ok) => { const r = tx.objectStore('notes').add({slug: 'z'}); r.onsuccess = () => ok(r.result); });
  tx.abort();
  const a = all[0], b = all[1];
  const out = {
    version: db.version, count: all.length, nextKey,
    a: [a.when instanceof Date && a.when.getTime(), Number.isNaN(a.n), a.big === 2n ** 70n,
        a.m.get(1), a.s.has('p'), a.re.flags, a.nested.deep[1]],
    b: [Array.from(b.bytes), Object.is(b.neg0, -0), b.inf],
    blob: [blob.type, await blob.text()],
    indexes: Array.from(db.transaction('notes').objectStore('notes').indexNames),
    local: [localStorage.getItem('theme'), localStorage.getItem('unicode'), localStorage.getItem('after')],
    session: sessionStorage.getItem('draft'),
  };
  db.close();
  return out;
}"""


def _uri(profile: Path, site: Any) -> str:
    return f"browser://{profile}?origin={site.origin}"


def test_clear_storage_comes_back_whole(profile: Path, shop_site: Any, store: Store) -> None:
    """B-clear-storage: after site data is cleared, restore brings back every cookie attribute,
    both storages (sessionStorage into the open tab) and IndexedDB (schema, typed values,
    key generator) for the page reloaded after."""
    page = seeded_tab(profile, shop_site)
    ctx = browser_context(profile)
    ctx.add_cookies([{"name": "tls_only", "value": "1", "domain": SHOP_HOST, "path": "/",
                      "secure": True, "sameSite": "None", "expires": 2_000_000_000}])
    backup = preimage.capture([_uri(profile, shop_site)], store=store)
    snap = backup.snapshots[0]
    assert isinstance(snap, BrowserSnapshot) and snap.session_tab
    cookies = {c.name: c for c in snap.items if isinstance(c, CookieEntry)}
    assert cookies["sid"].http_only and cookies["sid"].same_site == "Strict"
    assert cookies["cart"].path == "/shop" and cookies["tls_only"].secure

    clear_site_data(profile, page)
    damaged, _ = preimage.score(backup.id, store=store)
    assert damaged.classes["content"].score < 0.2

    result = preimage.restore(backup.id, store=store)
    assert result.ok
    report, _ = preimage.score(backup.id, store=store)
    assert report.classes["content"].score == 1.0
    assert report.classes["metadata"].score == 1.0
    assert report.differences == []

    page.reload()
    state = page.evaluate(READ_JS)
    assert state["version"] == 3 and state["count"] == 2 and state["nextKey"] == 4
    assert state["a"] == [86400000, True, True, "one", True, "gi", None]
    assert state["b"] == [[0, 255, 7], True, None] or state["b"][:2] == [[0, 255, 7], True]
    assert state["blob"] == ["text/plain", "hello blob"]
    assert sorted(state["indexes"]) == ["by_slug", "by_tag"]
    assert state["local"] == ["dark", "żółw 🐢", None]
    assert state["session"] == "half-written reply"
    live = {c["name"]: c for c in ctx.cookies() if c["domain"] == SHOP_HOST}
    assert live["sid"]["httpOnly"] and live["sid"]["sameSite"] == "Strict"
    assert live["tls_only"]["secure"] and live["tls_only"]["sameSite"] == "None"
    assert abs(live["tls_only"]["expires"] - cookies["tls_only"].expires) < 1
    page.close()


def test_capture_and_restore_never_reach_the_site(
    profile: Path, shop_site: Any, store: Store
) -> None:
    """Capture and restore work in a tab whose document preimage serves itself: the site gets
    no request (none that could set a cookie over a restored one), and the state comes back."""
    page = seeded_tab(profile, shop_site)
    page.close()  # no live tab: sessionStorage cannot be read and the snapshot says so
    before = shop_site.hits
    backup = preimage.capture([_uri(profile, shop_site)], store=store)
    snap = backup.snapshots[0]
    assert isinstance(snap, BrowserSnapshot) and not snap.session_tab
    assert any("sessionStorage" in n for n in snap.notes)
    again = preimage.capture([_uri(profile, shop_site)], store=store)
    assert again.snapshots[0].model_dump(exclude={"captured_at"}) == snap.model_dump(
        exclude={"captured_at"}
    )

    page = browser_context(profile).new_page()
    visit(page, shop_site)
    clear_site_data(profile, page)
    page.close()
    before = shop_site.hits
    assert preimage.restore(backup.id, store=store).ok
    close_profile(profile)  # nothing can send a request any more; count what arrived
    assert shop_site.settle() == before
    report, _ = preimage.score(backup.id, store=store)
    assert report.restorable.score == 1.0, report.differences[:5]


def test_idb_records_are_scored_one_by_one(profile: Path, shop_site: Any, store: Store) -> None:
    """Changing one IndexedDB record shows up as that record's value, not as a whole store."""
    page = seeded_tab(profile, shop_site)
    backup = preimage.capture([_uri(profile, shop_site)], store=store)
    page.evaluate("""async () => {
      const o = indexedDB.open('app'); const db = await new Promise((ok) => { o.onsuccess = () => ok(o.result); });
      const tx = db.transaction('notes', 'readwrite');
      const st = tx.objectStore('notes');
      const r = st.get(2); await new Promise((ok) => { r.onsuccess = ok; });
      st.put(Object.assign(r.result, {bytes: new Uint8Array([9])}));
      await new Promise((ok) => { tx.oncomplete = ok; }); db.close(); }""")
    report, _ = preimage.score(backup.id, store=store)
    changed = {d.item for d in report.differences if d.reason == "changed value"}
    assert any("idb-record" in k and json.dumps(2) in k for k in changed)
    preimage.restore(backup.id, store=store)
    report, _ = preimage.score(backup.id, store=store)
    assert report.restorable.score == 1.0
    page.close()


def test_the_cli_goes_through_the_browser_that_holds_the_profile(
    tmp_path: Path, shop_site: Any, preimage_cli: Any
) -> None:
    """The agent's Chromium keeps its profile open, with remote debugging on: `preimage
    capture` and `restore` in other processes go through that browser — a cookie that lives
    only in it (no expiry: never written to the profile) comes back after the browser's
    cookies were cleared — and leave its tabs as they were."""
    prof = tmp_path / "agent-profile"
    ctx = browser_context(prof, args=["--remote-debugging-port=0"])
    try:
        visit(ctx.new_page(), shop_site)
        ctx.add_cookies([{"name": "in_memory", "value": "only-here", "domain": SHOP_HOST,
                          "path": "/"}])
        tabs = [p.url for p in ctx.pages]
        backup = preimage_cli("capture", _uri(prof, shop_site))
        ctx.clear_cookies()
        assert preimage_cli("restore", backup["id"])["ok"]
        ctx.pages[-1].evaluate("1")  # a round trip: every tab event sent before it has arrived
        assert [p.url for p in ctx.pages] == tabs
        cookies = {c["name"]: c for c in ctx.cookies()}
        assert cookies["in_memory"]["value"] == "only-here"
        assert cookies["in_memory"]["expires"] == -1
        assert cookies["sid"]["httpOnly"]
    finally:
        close_profile(prof)


def test_a_debugging_port_is_used_only_while_its_browser_holds_the_profile(tmp_path: Path) -> None:
    """The port a browser named in the profile is attached to only while that browser
    (the profile lock's process) lives, and only by the browser's own id."""
    import os
    import subprocess

    from preimage.connectors.browser.chromium import _debugging_endpoint

    prof = tmp_path / "profile"
    prof.mkdir()
    assert _debugging_endpoint(prof) is None   # no browser ever had it open
    (prof / "DevToolsActivePort").write_text("40123\n/devtools/browser/1b2c\n")
    os.symlink(f"host-{os.getpid()}", prof / "SingletonLock")
    assert _debugging_endpoint(prof) == "ws://127.0.0.1:40123/devtools/browser/1b2c"
    dead = subprocess.Popen(["true"])
    dead.wait()
    (prof / "SingletonLock").unlink()
    os.symlink(f"host-{dead.pid}", prof / "SingletonLock")
    assert _debugging_endpoint(prof) is None
    (prof / "SingletonLock").unlink()
    assert _debugging_endpoint(prof) is None   # a file a crashed browser left, no lock
