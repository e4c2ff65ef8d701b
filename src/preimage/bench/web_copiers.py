"""Content-only copies of browser and web-application state (the ``content`` baseline).

What a user gets from an ordinary export, implemented for real:

* ``browser`` — the origin's Web Storage, cookies and IndexedDB exported as
  JSON (cookie names and values; IndexedDB values through ``JSON.stringify``,
  so dates become strings and maps empty objects; stores lose key paths,
  generators and indexes) and written back through the page's own APIs in a
  fresh tab (session cookies, no ``HttpOnly``/``SameSite``; sessionStorage
  lives in that tab only).
* ``web+isso`` — each thread's comments from isso's public JSON API (the
  ``/latest`` feed finds the threads of a ``/prefix/*`` target): text,
  nesting, author name and website, re-posted through ``POST /new`` — the
  e-mail and the thread's title are not in that API, votes and times not
  settable; a re-created thread is titled with its URI.
* ``web+trac`` — the tickets' CSV export (``/query?format=csv``) and the
  milestones' descriptions; missing milestones and tickets are re-entered
  through Trac's forms as the signed-in user.  Comments, change history,
  reporters, times and workflow state (status, owner, resolution) are not in
  the export; existing tickets are left as they are.
"""

from __future__ import annotations

import csv
import io
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

from preimage.interface.target import Target

_BLANK = "/__preimage_content_copy__"

_EXPORT_JS = """async () => {
  const all = (req) => new Promise((ok, bad) => { req.onsuccess = () => ok(req.result);
                                                 req.onerror = () => bad(req.error); });
  const dbs = [];
  for (const info of await indexedDB.databases()) {
    const db = await all(indexedDB.open(info.name));
    const stores = [];
    for (const name of Array.from(db.objectStoreNames)) {
      const st = db.transaction(name).objectStore(name);
      const keys = await all(st.getAllKeys());
      const values = await all(st.getAll());
      const json = (v) => JSON.parse(JSON.stringify(v) ?? 'null');
      stores.push({name, records: keys.map((k, i) => [k, json(values[i])])});
    }
    db.close();
    dbs.push({name: info.name, stores});
  }
  return {local: Object.fromEntries(Object.entries(localStorage)),
          session: Object.fromEntries(Object.entries(sessionStorage)), dbs};
}"""

_IMPORT_JS = """async (data) => {
  const all = (req) => new Promise((ok, bad) => { req.onsuccess = () => ok(req.result);
                                                 req.onerror = () => bad(req.error); });
  for (const [k, v] of Object.entries(data.local)) localStorage.setItem(k, v);
  for (const [k, v] of Object.entries(data.session)) sessionStorage.setItem(k, v);
  for (const d of data.dbs) {
    await all(indexedDB.deleteDatabase(d.name));
    const open = indexedDB.open(d.name, 1);
    open.onupgradeneeded = () => { for (const s of d.stores) open.result.createObjectStore(s.name); };
    const db = await all(open);
    for (const s of d.stores) {
      const tx = db.transaction(s.name, 'readwrite');
      for (const [k, v] of s.records) tx.objectStore(s.name).put(v, k);
      await new Promise((ok, bad) => { tx.oncomplete = ok; tx.onerror = () => bad(tx.error); });
    }
    db.close();
  }
}"""


def _keep(dest: Path, data: Any) -> int:
    """Write the export to ``dest`` as JSON (what a user would keep); its size in bytes."""
    text = json.dumps(data)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    return len(text.encode())


def _profile(target: Target, env: dict[str, str]) -> Path:
    raw = (target.query.get("profile") or [""])[0] or env.get("PREIMAGE_BROWSER_PROFILE")
    if not raw:
        raise ValueError(f"{target}: no browser profile (profile= or PREIMAGE_BROWSER_PROFILE)")
    return Path(raw)


def _blank_tab(profile: Path, origin: str) -> Any:
    """A tab on ``origin`` whose page never reaches the server (its cookies stay as they are)."""
    from preimage.connectors.browser.chromium import browser_context

    page = browser_context(profile).new_page()
    page.route(origin + _BLANK, lambda route: route.fulfill(
        status=200, content_type="text/html", body="<!doctype html><title>copy</title>"))
    page.goto(origin + _BLANK)
    return page


class BrowserCopier:
    """Web Storage, cookies and IndexedDB of one origin, as a JSON export."""

    def take(self, target: Target, dest: Path, env: dict[str, str]) -> tuple[Any, int]:
        """Export the origin's storage and cookie values."""
        origin = (target.query.get("origin") or [""])[0]
        if not origin:
            raise ValueError(f"{target}: the content-only copy needs ?origin=")
        profile = Path(target.path)
        page = _blank_tab(profile, origin)
        try:
            data = page.evaluate(_EXPORT_JS)
            data["cookies"] = {c["name"]: c["value"] for c in page.context.cookies([origin])}
        finally:
            page.close()
        return (profile, origin, data), _keep(dest, data)

    def put_back(self, target: Target, handle: Any, env: dict[str, str]) -> None:
        """Set the cookie values, storage items and IndexedDB records again."""
        profile, origin, data = handle
        page = _blank_tab(profile, origin)
        try:
            page.context.add_cookies(
                [{"name": k, "value": v, "url": origin} for k, v in data["cookies"].items()]
            )
            page.evaluate(_IMPORT_JS, data)
        finally:
            page.close()


def _http(method: str, url: str, body: Any = None) -> Any:
    if not url.startswith("http://"):
        raise ValueError(f"not an http URL: {url}")
    req = urllib.request.Request(url, method=method)  # noqa: S310 (checked just above)
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, payload, timeout=60) as resp:  # noqa: S310
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def _app_url(target: Target) -> str:
    """The web application's base URL for a ``web+ADAPTER://host:port/…`` target."""
    return f"http://{target.host}:{target.port}"


class IssoCopier:
    """isso comments (text, nesting, public author and website) from the public API; re-posted."""

    def _threads(self, target: Target) -> list[str]:
        if not target.path.endswith("*"):
            return [target.path]
        prefix = target.path[:-1]
        latest = _http("GET", f"{_app_url(target)}/latest?limit=100000") or []
        return sorted({c["uri"] for c in latest if c.get("uri", "").startswith(prefix)})

    def _tree(self, base: str, thread: str) -> list[dict[str, Any]]:
        """The thread's comments, parents before replies: ``{id, parent, text}``."""
        root = _http("GET", f"{base}/?uri={quote(thread)}&plain=1") or {}
        out: list[dict[str, Any]] = []

        def walk(node: dict[str, Any]) -> None:
            for child in node.get("replies") or []:
                out.append({k: child.get(k) for k in ("id", "parent", "text", "mode", "author",
                                                      "website")})
                walk(child)

        walk(root)
        return out

    def take(self, target: Target, dest: Path, env: dict[str, str]) -> tuple[Any, int]:
        """Every comment's text and parent, per thread."""
        base = _app_url(target)
        copies = {t: self._tree(base, t) for t in self._threads(target)}
        return (base, copies), _keep(dest, copies)

    def put_back(self, target: Target, handle: Any, env: dict[str, str]) -> None:
        """Post every copied comment whose text is missing under its parent, parents first."""
        base, copies = handle
        for thread, comments in copies.items():
            live = self._tree(base, thread)
            new_id: dict[int, int] = {}
            for c in comments:
                if c.get("mode") == 4:  # a deleted comment's placeholder: nothing to post
                    continue
                parent = new_id.get(c["parent"], c["parent"]) if c["parent"] else None
                same = [x for x in live if x["text"] == c["text"] and x["parent"] == parent
                        and x["mode"] == 1]
                if same:
                    new_id[c["id"]] = same[0]["id"]
                    live.remove(same[0])
                    continue
                made = _http("POST", f"{base}/new?uri={quote(thread)}", {
                    "text": c["text"], "parent": parent, "author": c.get("author"),
                    "website": c.get("website"), "title": thread})
                new_id[c["id"]] = made["id"]


_TICKET_FIELDS = ("summary", "description", "type", "priority", "component", "milestone",
                  "version", "keywords", "cc")


class TracCopier:
    """Trac tickets as a CSV export and milestone descriptions; missing ones re-entered in forms."""

    def take(self, target: Target, dest: Path, env: dict[str, str]) -> tuple[Any, int]:
        """``/query?format=csv`` of the target's tickets; its milestone's description."""
        from preimage.connectors.browser.chromium import browser_context

        base, loc = _app_url(target), target.path.rstrip("/")
        context = browser_context(_profile(target, env))
        cols = "&".join(f"col={f}" for f in ("id", *_TICKET_FIELDS))
        milestones: dict[str, str] = {}
        if loc.startswith("/ticket/"):
            query = f"id={loc.rsplit('/', 1)[1]}"
        elif loc.startswith("/milestone/"):
            name = loc.split("/", 2)[2]
            query = f"milestone={quote(name)}"
            page = context.new_page()
            try:
                page.goto(f"{base}/milestone/{quote(name)}?action=edit")
                milestones[name] = page.input_value("textarea[name=description]")
            finally:
                page.close()
        else:
            query = "id=1-999999999"
        resp = context.request.get(f"{base}/query?{query}&{cols}&format=csv&max=0")
        # The CSV's header holds the fields' labels ("Summary"); lower-cased they are the names.
        rows = [{k.lower(): v for k, v in row.items()}
                for row in csv.DictReader(io.StringIO(resp.text().lstrip("\ufeff")))]
        data = {"tickets": rows, "milestones": milestones}
        return (base, data), _keep(dest, data)

    def put_back(self, target: Target, handle: Any, env: dict[str, str]) -> None:
        """Create missing milestones, then missing tickets (matched by summary)."""
        from preimage.connectors.browser.chromium import browser_context

        base, data = handle
        page = browser_context(_profile(target, env)).new_page()
        try:
            roadmap = page.request.get(f"{base}/roadmap?show=all").text()
            for name, description in data["milestones"].items():
                if f'href="/milestone/{quote(name)}"' not in roadmap:
                    page.goto(f"{base}/milestone?action=new")
                    page.fill("input[name=name]", name)
                    page.fill("textarea[name=description]", description)
                    page.click("form#edit input[type=submit][name=add]")
                    page.wait_for_load_state()
            for row in data["tickets"]:
                live = page.request.get(
                    f"{base}/query?summary={quote(row['summary'])}&col=id&format=csv&max=0")
                if len(live.text().strip().splitlines()) > 1:
                    continue  # the summary is there: an import would skip it
                page.goto(f"{base}/newticket")
                page.fill("#field-summary", row["summary"])
                page.fill("#field-description", row.get("description", ""))
                for field in ("type", "priority", "component", "milestone", "version"):
                    value = row.get(field) or ""
                    box = page.locator(f"#field-{field}")
                    if value and box.locator(f"option[value={json.dumps(value)}]").count():
                        box.select_option(value)
                for field in ("keywords", "cc"):
                    box = page.locator(f"#field-{field}")
                    if row.get(field) and box.count():
                        box.fill(row[field])
                page.click("form#propertyform input[type=submit][name=submit]")
                page.wait_for_load_state()
        finally:
            page.close()
