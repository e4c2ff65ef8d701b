"""Undo one call on browser state, against real Chromium: storage, cookies and IndexedDB by key.

The calls run in the process that drives the agent's browser (as the Python API
and the MCP proxy do), so sessionStorage is read from and written to its tab.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import preimage
from preimage import Store
from preimage.connectors.browser import browser_context
from preimage.engine.undo import capture_after

from .conftest import SHOP_HOST, seeded_tab

pytestmark = pytest.mark.browser

NOTES_JS = """async () => {
  const o = indexedDB.open('app'); const db = await new Promise((ok) => { o.onsuccess = () => ok(o.result); });
  const tx = db.transaction('notes');
  const all = await new Promise((ok) => { const r = tx.objectStore('notes').getAll(); r.onsuccess = () => ok(r.result); });
  const names = Array.from(db.objectStoreNames);
  db.close();
  return {version: db.version, stores: names,
          notes: Object.fromEntries(all.map((n) => [n.id, n.slug + (n.text ? ':' + n.text : '')]))};
}"""

# Runs its body against the 'notes' store of database 'app' (as the site's own script would).
NOTES_TX = """async () => {
  const o = indexedDB.open('app'); const db = await new Promise((ok) => { o.onsuccess = () => ok(o.result); });
  const tx = db.transaction('notes', 'readwrite'); const st = tx.objectStore('notes');
  %s
  await new Promise((ok) => { tx.oncomplete = ok; }); db.close(); }"""


def _uri(profile: Path, site: Any) -> str:
    return f"browser://{profile}?origin={site.origin}"


def call(store: Store, uri: str, what: str, run: Any) -> str:
    """A protected call as the layer records it: pre-call backup, the call, post-call backup."""
    pre = preimage.capture([uri], store=store, kind="layer", tier="pair", session="b1",
                           tool_call={"tool": "mcp__playwright__browser_evaluate",
                                      "input": {"function": what}}, label=what)
    run()
    assert capture_after(pre.id, store=store) is not None
    return pre.id


def _cookies(profile: Path) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in browser_context(profile).cookies() if c["domain"] == SHOP_HOST}


def test_undo_reverts_the_call_by_key_and_keeps_later_changes(
    profile: Path, shop_site: Any, store: Store
) -> None:
    """The agent's script removes and rewrites storage keys, deletes a note, adds one and
    drops a cookie; a person then adds keys and notes and edits another note.  Undo puts
    back exactly the agent's items and keeps every one of the person's; a key both changed
    is a conflict, left as the person left it."""
    page = seeded_tab(profile, shop_site)
    ctx = browser_context(profile)

    def agent() -> None:
        page.evaluate("""() => { localStorage.removeItem('theme');
                                 localStorage.setItem('unicode', 'agent');
                                 sessionStorage.setItem('draft', 'agent draft'); }""")
        page.evaluate(NOTES_TX % "st.delete(1); st.add({slug: 'agent'});")
        ctx.clear_cookies(name="cart")

    pre = call(store, _uri(profile, shop_site), "agent cleans up", agent)
    # the person, after the agent
    page.evaluate("""() => { localStorage.setItem('lang', 'pl');
                             localStorage.setItem('unicode', 'person'); }""")
    page.evaluate(NOTES_TX % "st.put({id: 2, slug: 'b', text: 'edited'}); st.add({slug: 'mine'});")
    ctx.add_cookies([{"name": "consent", "value": "yes", "domain": SHOP_HOST, "path": "/"}])

    result = preimage.undo(pre, store=store)
    assert result.ok, result.to_dict()
    conflicts = [p.label for p in result.plans[0].conflicts]
    assert result.conflicts == 1 and conflicts[0] == f"localStorage {shop_site.origin}/unicode"
    local = page.evaluate("() => [localStorage.getItem('theme'), localStorage.getItem('unicode'),"
                          " localStorage.getItem('lang'), sessionStorage.getItem('draft')]")
    assert local == ["dark", "person", "pl", "half-written reply"]
    state = page.evaluate(NOTES_JS)
    assert state["notes"] == {"1": "a", "2": "b:edited", "5": "mine"}  # 4 was the agent's
    cookies = _cookies(profile)
    assert cookies["cart"]["path"] == "/shop" and cookies["consent"]["value"] == "yes"
    written = {i.key for r in result.reports for i in r.changes}
    assert not any("lang" in k or "consent" in k or "record_key=5" in k for k in written)

    again = preimage.undo(pre, store=store, resolution="take-backup")
    assert again.conflicts == 0
    assert page.evaluate("() => localStorage.getItem('unicode')") == "żółw 🐢"
    assert page.evaluate("() => localStorage.getItem('lang')") == "pl"
    page.close()


def test_a_dropped_database_is_rebuilt_and_other_state_kept(
    profile: Path, shop_site: Any, store: Store
) -> None:
    """The agent deletes the whole IndexedDB database; the person then stores a key and a
    cookie.  Undo rebuilds that database (version, stores, indexes, records, key generator)
    and leaves the person's key and cookie alone; a dry run writes nothing."""
    page = seeded_tab(profile, shop_site)

    def agent() -> None:
        page.evaluate("""async () => { await new Promise((ok) => {
            const r = indexedDB.deleteDatabase('app'); r.onsuccess = ok; }); }""")

    pre = call(store, _uri(profile, shop_site), "drop the database", agent)
    page.evaluate("() => localStorage.setItem('later', '1')")
    browser_context(profile).add_cookies(
        [{"name": "later", "value": "1", "domain": SHOP_HOST, "path": "/"}])

    plan = preimage.undo(pre, store=store, dry_run=True)
    assert plan.dry_run and plan.conflicts == 0
    assert page.evaluate("async () => (await indexedDB.databases()).length") == 0

    result = preimage.undo(pre, store=store)
    assert result.ok and result.conflicts == 0, result.to_dict()
    state = page.evaluate(NOTES_JS)
    assert state["version"] == 3 and sorted(state["stores"]) == ["blobs", "notes"]
    assert state["notes"] == {"1": "a", "2": "b"}
    assert page.evaluate("() => localStorage.getItem('later')") == "1"
    assert _cookies(profile)["later"]["value"] == "1"
    report, _ = preimage.score(pre, store=store)
    lost = [d for d in report.differences if d.fidelity in ("content", "metadata")
            and d.reason != "extra item"]
    assert lost == [], lost[:5]
    page.close()
