"""Independent readings of browser and web-app state for the conformance kit's observer tests.

None of these use the connector's or the site adapters' reading code: isso and Trac are
read from their own SQLite databases, the browser profile through Playwright's cookie jar
and page JavaScript written here.  Items are keyed as the snapshots key them, so the kit's
sub-scope tests can tell which are inside an ``--only`` prefix.
"""

from __future__ import annotations

import hashlib
import html
import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

Observed = dict[str, dict[str, Any]]


def _fragment(uri: str) -> str:
    """The ``--only`` prefix a sub-scope URI names (empty: the whole target)."""
    return unquote(urlsplit(uri).fragment)


def _read_only(db: Path) -> closing[sqlite3.Connection]:
    return closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True))


# ------------------------------------------------------------------------------ isso
def observe_isso(db: Path) -> Callable[[str], Observed]:
    """isso's comments table, read directly: the thread's title and every comment's
    text, parent, author, e-mail, website, notification flag and mode, keyed by the
    adapter's natural key (thread, author, text digest, ``#n`` for repeats in order)."""

    def observe(uri: str) -> Observed:
        thread = urlsplit(uri).path
        with _read_only(db) as con:
            head = con.execute("SELECT id, title FROM threads WHERE uri = ?", (thread,)).fetchone()
            if head is None:
                return {}
            rows = con.execute(
                "SELECT id, parent, text, author, email, website, notification, mode "
                "FROM comments WHERE tid = ? ORDER BY created, id", (head[0],)).fetchall()
        names: dict[int, str] = {}
        seen: dict[str, int] = {}
        for cid, _, text, author, *_ in rows:
            digest = hashlib.sha256(text.encode()).hexdigest()[:10]
            base = f"{thread} {html.unescape(author or 'anonymous')} {digest}"
            seen[base] = seen.get(base, 0) + 1
            names[cid] = base if seen[base] == 1 else f"{base} #{seen[base]}"
        out: Observed = {f"thread:{thread}": {"title": head[1]}} if rows else {}
        for cid, parent, text, author, email, website, notification, mode in rows:
            out[f"comment:{names[cid]}"] = {
                "text": text, "parent": names.get(parent) if parent else None,
                "author": author, "email": email or None, "website": website,
                "notification": notification, "mode": mode}
        return _in_scope(out, _fragment(uri))

    return observe


# ------------------------------------------------------------------------------ Trac
def observe_trac(db: Path) -> Callable[[str], Observed]:
    """Trac's ticket, ticket_change and milestone tables, read directly: the milestone's
    description and dates, and each of its tickets' fields, reporter, times and every
    change (author, time, comment, field old → new), keyed ``ticket:<created, ISO to the second> <reporter>``."""

    def observe(uri: str) -> Observed:
        name = unquote(urlsplit(uri).path.removeprefix("/milestone/"))
        out: Observed = {}
        with _read_only(db) as con:
            ms = con.execute("SELECT description, due, completed FROM milestone WHERE name = ?",
                             (name,)).fetchone()
            if ms is not None:
                out[f"milestone:{name}"] = {"description": ms[0] or "", "due": ms[1] or None,
                                            "completed": ms[2] or None}
            con.row_factory = sqlite3.Row
            tickets = con.execute("SELECT * FROM ticket WHERE milestone = ? ORDER BY id",
                                  (name,)).fetchall()
            seen: dict[str, int] = {}
            for t in tickets:
                created = datetime.fromtimestamp(t["time"] / 1e6, UTC)
                base = f"{created:%Y-%m-%dT%H:%M:%SZ} {t['reporter']}"
                seen[base] = seen.get(base, 0) + 1
                key = base if seen[base] == 1 else f"{base} #{seen[base]}"
                fields = {f: t[f] or "" for f in (
                    "summary", "description", "type", "priority", "component", "milestone",
                    "version", "keywords", "cc", "owner", "status", "resolution")}
                out[f"ticket:{key}"] = fields | {
                    "reporter": t["reporter"], "time": t["time"], "changetime": t["changetime"],
                    "changes": _trac_changes(con, t["id"])}
        return _in_scope(out, _fragment(uri))

    return observe


def _trac_changes(con: sqlite3.Connection, ticket: int) -> list[dict[str, Any]]:
    """A ticket's changes, one per (time, author), in time order."""
    changes: dict[tuple[int, str], dict[str, Any]] = {}
    for time, author, field, old, new in con.execute(
            "SELECT time, author, field, oldvalue, newvalue FROM ticket_change "
            "WHERE ticket = ? ORDER BY time, field", (ticket,)):
        change = changes.setdefault((time, author), {"time": time, "author": author,
                                                     "comment": "", "fields": {}})
        if field == "comment":
            change["comment"] = new or ""
        elif not field.startswith("_comment"):  # an edited comment's earlier text
            change["fields"][field] = [old or "", new or ""]
    return list(changes.values())


# ------------------------------------------------------------------------------ browser
#: Every value IndexedDB can hold, as JSON that tells apart what structured clone does.
_ENCODE_JS = """
async function enc(v) {
  if (v === null) return ['null'];
  const t = typeof v;
  if (t === 'undefined') return ['undefined'];
  if (t === 'number') return ['number', Object.is(v, -0) ? '-0' : String(v)];
  if (t === 'bigint') return ['bigint', v.toString()];
  if (t === 'string' || t === 'boolean') return [t, v];
  const bytes = (b) => Array.from(new Uint8Array(b));
  if (v instanceof Date) return ['Date', String(v.getTime())];
  if (v instanceof RegExp) return ['RegExp', v.source, v.flags];
  if (v instanceof File) return ['File', v.name, v.type, bytes(await v.arrayBuffer())];
  if (v instanceof Blob) return ['Blob', v.type, bytes(await v.arrayBuffer())];
  if (v instanceof ArrayBuffer) return ['ArrayBuffer', bytes(v)];
  if (ArrayBuffer.isView(v))
    return [Object.prototype.toString.call(v), bytes(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength))];
  const all = async (xs) => { const o = []; for (const x of xs) o.push(await enc(x)); return o; };
  if (v instanceof Map) { const o = []; for (const [k, x] of v) o.push([await enc(k), await enc(x)]); return ['Map', o]; }
  if (v instanceof Set) return ['Set', await all(v)];
  if (Array.isArray(v)) return ['Array', await all(v)];
  const o = {};
  for (const k of Object.keys(v).sort()) o[k] = await enc(v[k]);
  return ['Object', o];
}
"""

_STORAGE_JS = "async () => {" + _ENCODE_JS + """
  const req = (r) => new Promise((ok, no) => { r.onsuccess = () => ok(r.result); r.onerror = () => no(r.error); });
  const pairs = (s) => Object.fromEntries(Array.from({length: s.length}, (_, i) => [s.key(i), s.getItem(s.key(i))]));
  const out = {local: pairs(localStorage), session: pairs(sessionStorage), dbs: []};
  for (const info of await indexedDB.databases()) {
    const db = await req(indexedDB.open(info.name));
    const stores = [];
    for (const name of Array.from(db.objectStoreNames)) {
      const tx = db.transaction(name, 'readonly');
      const st = tx.objectStore(name);
      const indexes = Array.from(st.indexNames).map((n) => { const ix = st.index(n);
        return {name: n, keyPath: ix.keyPath, unique: ix.unique, multiEntry: ix.multiEntry}; });
      const keys = await req(st.getAllKeys());
      const values = await req(st.getAll());
      const records = [];
      for (let i = 0; i < keys.length; i++) records.push([JSON.stringify(await enc(keys[i])), await enc(values[i])]);
      let nextKey = null;
      if (st.autoIncrement) {  // the generator's position: add a record in a transaction that is then aborted
        const probe = db.transaction(name, 'readwrite');
        const k = await req(probe.objectStore(name).add({}));
        nextKey = k;
        probe.abort();
        await new Promise((ok) => { probe.onabort = ok; });
      }
      stores.push({name, keyPath: st.keyPath, autoIncrement: st.autoIncrement, indexes, records, nextKey});
    }
    db.close();
    out.dbs.push({name: info.name, version: info.version, stores});
  }
  return out;
}"""


def observe_browser(context: Callable[[], Any], origin: str) -> Callable[[str], Observed]:
    """One origin's state in a live Chromium: cookies from Playwright's cookie jar, both
    storages, IndexedDB databases, stores (key path, flags, key generator, indexes) and
    records through page JavaScript, in the origin's open tab (sessionStorage lives there)
    or, with none open, a blank page served for the origin without reaching the site."""

    def observe(uri: str) -> Observed:
        ctx = context()
        host = urlsplit(origin).hostname or ""
        out: Observed = {}
        for c in ctx.cookies():
            if c["domain"].lstrip(".") == host or host.endswith(c["domain"]):
                out[f"cookie {c['name']} {c['domain']} {c['path']}"] = {
                    "value": c["value"], "expires": c["expires"], "http_only": c["httpOnly"],
                    "secure": c["secure"], "same_site": c["sameSite"]}
        state = _storage_state(ctx, origin)
        for kind, entries in (("localStorage", state["local"]), ("sessionStorage", state["session"])):
            for name, value in entries.items():
                out[f"{kind} {name}"] = {"value": value}
        for db in state["dbs"]:
            out[f"idb-database {db['name']}"] = {"version": db["version"]}
            for st in db["stores"]:
                out[f"idb-store {db['name']}/{st['name']}"] = {
                    "key_path": st["keyPath"], "auto_increment": st["autoIncrement"],
                    "next_key": st["nextKey"],
                    "indexes": sorted(json.dumps(ix, sort_keys=True) for ix in st["indexes"])}
                for key, value in st["records"]:
                    out[f"idb-record {db['name']}/{st['name']} {key}"] = {"value": value}
        return _in_scope(out, _fragment(uri))

    return observe


def _storage_state(ctx: Any, origin: str) -> dict[str, Any]:
    tabs = [p for p in ctx.pages if p.url == origin or p.url.startswith(origin + "/")]
    if tabs:
        return dict(tabs[0].evaluate(_STORAGE_JS))
    page = ctx.new_page()
    try:
        page.route(f"{origin}/**", lambda route: route.fulfill(
            status=200, content_type="text/html", body="<!doctype html><title>observer</title>"))
        page.goto(f"{origin}/__observer__")
        state = dict(page.evaluate(_STORAGE_JS))
        return {**state, "session": {}}  # a fresh tab's, not the profile's
    finally:
        page.close()


# ------------------------------------------------------------------------------ copyparty
def observe_copyparty(files: Path, shares_db: Path) -> Callable[[str], Observed]:
    """copyparty's volume folder and share table, read directly: every folder, every file's
    SHA-256, size and modification time (seconds), old versions under ``.hist``, and every
    share whose source is in the target's folder (source, files, access, owner, expiring,
    password set), keyed as the adapter keys them."""

    def observe(uri: str) -> Observed:
        root = "/" + "/".join(p for p in urlsplit(uri).path.split("/") if p)
        root = root.rstrip("/") + "/"
        base = files / root.strip("/")
        out: Observed = {}
        if base.is_dir():
            out[f"folder:{root}"] = {}
            for path in sorted(base.rglob("*")):
                name = "/" + str(path.relative_to(files))
                if path.is_dir():
                    out[f"folder:{name}/"] = {}
                    continue
                data = path.read_bytes()
                kind = "version" if "/.hist/" in name else "file"
                out[f"{kind}:{name}"] = {"sha256": hashlib.sha256(data).hexdigest(),
                                         "size": len(data), "mtime": int(path.stat().st_mtime)}
        if shares_db.exists():
            with _read_only(shares_db) as con:
                rows = con.execute("SELECT k, pw, vp, pr, un, t1 FROM sh").fetchall()
                names = con.execute("SELECT k, vp FROM sf").fetchall()
            for key, pw, vp, pr, owner, expires in rows:
                source = "/" + "/".join(p for p in vp.split("/") if p)
                source = source.rstrip("/") + "/"
                if source.startswith(root):
                    out[f"share:{key}"] = {
                        "source": source, "files": sorted(n for k, n in names if k == key),
                        "access": pr, "owner": owner, "expiring": bool(expires),
                        "password": bool(pw)}
        return _in_scope(out, _fragment(uri))

    return observe


def _in_scope(observed: Observed, prefix: str) -> Observed:
    """Only the items an ``--only`` prefix selects (by kind, name or ``kind:name``)."""
    if not prefix:
        return observed
    return {k: v for k, v in observed.items() if _matches(k, prefix)}


def _matches(key: str, prefix: str) -> bool:
    kind, _, name = key.partition(":") if ":" in key.split(" ", 1)[0] else key.partition(" ")
    return any(part.startswith(prefix) for part in (key, kind, name))

