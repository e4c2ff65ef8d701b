"""Exact-key restores of browser state: write back exactly the named items, nothing else.

Under :attr:`~preimage.restoration.RestorePolicy.keys` (an undo of one call),
the whole-origin restore's "clear, then set" would erase everything anyone
did since.  Here every key is written on its own:

* a cookie by name, domain and path — set with every attribute, or removed;
* a localStorage or sessionStorage entry by key — ``setItem`` or
  ``removeItem`` (sessionStorage only into the profile's session tab: it lives
  per tab, so with no tab open there is nothing to write it into);
* an IndexedDB record by its key — ``put`` or ``delete`` in its store;
* an IndexedDB database or object store among the keys means its structure
  changed (version, stores, key paths, indexes), which IndexedDB changes only
  by upgrading or deleting the database: that one database is rebuilt from the
  snapshot — which, for an undo, is the live state with the call's items put
  back — or dropped when the snapshot does not have it.  Other databases, and
  every key not named, are never touched.

Order: cookies, then per origin Web Storage, dropped and rebuilt databases,
then single records.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from preimage.connectors.browser.chromium import browser_context
from preimage.connectors.browser.scripts import RESTORE_KEYS_JS
from preimage.interface.blobs import BlobStore
from preimage.interface.target import Target
from preimage.restoration import Outcome, RestorePolicy, RestoreReport
from preimage.restoration.merge import same
from preimage.snapshot_schemas import Item
from preimage.snapshot_schemas.browser import (
    BrowserSnapshot,
    CookieEntry,
    IdbDatabase,
    IdbRecord,
    IdbStore,
    StorageEntry,
)

if TYPE_CHECKING:
    from preimage.connectors.browser.connector import BrowserConnector

_STORAGE = ("localStorage", "sessionStorage")


def _database_of(item: Item) -> tuple[str, str] | None:
    """``(origin, database)`` of an IndexedDB item."""
    if isinstance(item, IdbDatabase):
        return item.origin, item.name
    if isinstance(item, IdbStore | IdbRecord):
        return item.origin, item.database
    return None


def restore_keys(
    conn: BrowserConnector, snapshot: BrowserSnapshot, blobs: BlobStore, policy: RestorePolicy
) -> RestoreReport:
    """Write exactly ``policy.keys`` of ``snapshot`` into the live profile (module doc)."""
    from preimage.connectors.browser.address import parse_target
    from preimage.connectors.browser.pages import OriginPage, cookie_dict, db_specs

    assert policy.keys is not None
    report = RestoreReport(target=snapshot.target, connector=conn.scheme, dry_run=policy.dry_run)
    target = Target.parse(snapshot.target)
    profile, origins = parse_target(target)
    live = conn.capture(target, blobs)
    want = {i.natural_key(): i for i in snapshot.scoring_items(blobs)}
    have = {i.natural_key(): i for i in live.scoring_items(blobs)}
    wanted_dbs = {(i.origin, i.name) for i in snapshot.items if isinstance(i, IdbDatabase)}

    todo: list[tuple[str, Item | None, Item]] = []  # key, what to write (None: remove), either
    for key in sorted(policy.keys):
        w, h = want.get(key), have.get(key)
        either = w if w is not None else h
        if either is None or (w is not None and h is not None and same(w, h)):
            report.add(key, Outcome.UNCHANGED)
            continue
        todo.append((key, w, either))

    # Structure changes rebuild (or drop) their database; records in it go with it.
    whole = {db for _, _, item in todo if isinstance(item, IdbDatabase | IdbStore)
             for db in [_database_of(item)] if db is not None}
    no_tab = not live.session_tab
    cookies_set: list[Any] = []
    cookies_gone: list[CookieEntry] = []
    storage: dict[str, dict[str, dict[str, Any]]] = defaultdict(
        lambda: {k: {"set": {}, "remove": []} for k in _STORAGE})
    records: dict[tuple[str, str, str], dict[str, list[Any]]] = defaultdict(
        lambda: {"put": [], "remove": []})
    for key, w, item in todo:
        db = _database_of(item)
        if isinstance(item, StorageEntry) and item.kind == "sessionStorage" and no_tab:
            report.add(key, Outcome.FAILED, reason=(
                f"no open tab at {item.origin}: sessionStorage lives per tab, so there is "
                "nothing to write it into"))
            continue
        if isinstance(item, CookieEntry):
            if isinstance(w, CookieEntry):
                cookies_set.append(cookie_dict(w))
            else:
                cookies_gone.append(item)
        elif isinstance(item, StorageEntry):
            entry = storage[item.origin][item.kind]
            if isinstance(w, StorageEntry):
                entry["set"][w.name] = w.value
            else:
                entry["remove"].append(item.name)
        elif isinstance(item, IdbRecord) and db not in whole:
            rec = records[(item.origin, item.database, item.store)]
            if isinstance(w, IdbRecord):
                rec["put"].append([json.loads(w.record_key), w.value])
            else:
                rec["remove"].append(json.loads(item.record_key))
        action = ("rebuild its database" if db in whole and db in wanted_dbs
                  else "drop its database" if db in whole else
                  "write back" if w is not None else "remove")
        if policy.dry_run:
            report.add(key, Outcome.PLANNED, action=action)
        else:
            report.add(key, Outcome.RESTORED if w is not None else Outcome.REMOVED,
                       action=action)
    if policy.dry_run or not todo:
        return report

    ctx = browser_context(profile)
    for c in cookies_gone:
        ctx.clear_cookies(name=c.name, domain=c.domain, path=c.path)
    if cookies_set:
        ctx.add_cookies(cookies_set)
    specs = {o: db_specs(snapshot, o, blobs) for o in origins}
    for origin in origins:
        rebuild = [specs[origin][name] for (o, name) in sorted(whole)
                   if o == origin and (o, name) in wanted_dbs]
        drop = [name for (o, name) in sorted(whole) if o == origin and (o, name) not in wanted_dbs]
        writes = [{"database": d, "store": s, "put": r["put"], "remove": r["remove"]}
                  for (o, d, s), r in sorted(records.items()) if o == origin]
        st = storage.get(origin)
        if not (rebuild or drop or writes or st):
            continue
        session = st["sessionStorage"] if st else None
        with OriginPage(ctx, origin) as tab:
            assert tab.page is not None
            tab.page.evaluate(RESTORE_KEYS_JS, {
                "local": st["localStorage"] if st else None,
                "session": session if session and (session["set"] or session["remove"])
                else None,
                "drop": drop, "rebuild": rebuild, "records": writes,
            })
    return report
