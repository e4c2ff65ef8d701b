"""Undoing one call on browser state: cookies, storage entries and IndexedDB records by key.

A cookie (by name, domain, path and partition), a localStorage or
sessionStorage entry (by origin and key) and an IndexedDB record (by
database, store and record key) are reverted one by one; a cookie both the
call and someone after it changed is merged attribute by attribute.  An
IndexedDB database or object store is a whole item: its version, key path,
indexes and flags change only together (IndexedDB upgrades a database as a
unit), and writing one rebuilds that database from the live state with the
call's items put back (:mod:`.exact`).

A store's record count and records digest follow its records, and its key
generator moves with every insert and never goes back (IndexedDB has no way to
lower it) — all three are *soft*: an undo never writes a store just because
they moved.

sessionStorage lives per tab: it is compared only when all three captures
read it from a tab (a capture in another process — a hook, the CLI — has
none), so a missing tab never looks like entries the call deleted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, ClassVar

from preimage.restoration.revert import Reverter, apply_writes, splice
from preimage.snapshot_schemas import Item, Snapshot
from preimage.snapshot_schemas.browser import BrowserSnapshot, IdbRecord, IdbStore

__all__ = ["BrowserReverter"]

_SOFT_STORE = frozenset({"records", "digest", "next_key"})
_RECORD = "kind=idb-record|"

StoreId = tuple[str, str, str]  # origin, database, store


def _store_of(item: IdbRecord | IdbStore) -> StoreId:
    if isinstance(item, IdbRecord):
        return item.origin, item.database, item.store
    return item.origin, item.database, item.name


def _records(snap: Snapshot, blobs: Any) -> dict[StoreId, list[IdbRecord]]:
    out: dict[StoreId, list[IdbRecord]] = {}
    for item in snap.scoring_items(blobs):
        if isinstance(item, IdbRecord):
            out.setdefault(_store_of(item), []).append(item)
    return out


def _lines(records: Iterable[IdbRecord]) -> Iterable[bytes]:
    """Records as the capture writes a store's blob: ``[key, value]`` JSON lines."""
    for r in records:
        line = json.dumps([json.loads(r.record_key), r.value], sort_keys=True,
                          separators=(",", ":"))
        yield (line + "\n").encode()


class BrowserReverter(Reverter):
    """Cookies, storage entries and IndexedDB records by key; databases and stores whole."""

    write_soft_only: ClassVar[bool] = False

    def soft(self, item: Item, path: str) -> bool:
        return item.kind == "idb-store" and path in _SOFT_STORE

    def align(self, base: Snapshot, theirs: Snapshot, live: Snapshot) -> tuple[
        Snapshot, Snapshot, Snapshot, list[str]
    ]:
        snaps = (base, theirs, live)
        if all(getattr(s, "session_tab", False) for s in snaps) or not any(
                i.kind == "sessionStorage" for s in snaps for i in s.items):
            return base, theirs, live, []

        def without(s: Snapshot) -> Snapshot:
            return s.model_copy(update={
                "items": [i for i in s.items if i.kind != "sessionStorage"]})

        return (*(without(s) for s in snaps), [  # type: ignore[return-value]
            "sessionStorage left out: not every capture had an open tab to read it from "
            "(it lives per tab); undo in the process that drives the browser to include it"])

    def synthesize(self, live: Snapshot, base: Snapshot, writes: dict[str, Item | None],
                   blobs: Any) -> Snapshot:
        """Live with the written items; each store whose records are written gets a
        records blob of its own (live's records, or base's for a store live lacks, with the
        written ones replaced, removed or added)."""
        assert isinstance(live, BrowserSnapshot)
        plain = {k: v for k, v in writes.items() if not k.startswith(_RECORD)}
        items = splice(live.items, base.items, plain)
        live_recs, base_recs = _records(live, blobs), _records(base, blobs)
        every = {r.natural_key(): r for rs in (*base_recs.values(), *live_recs.values())
                 for r in rs}
        by_store: dict[StoreId, dict[str, IdbRecord | None]] = {}
        for key, item in writes.items():
            if not key.startswith(_RECORD):
                continue
            known = item if isinstance(item, IdbRecord) else every.get(key)
            if known is not None:
                by_store.setdefault(_store_of(known), {})[key] = (
                    item if isinstance(item, IdbRecord) else None)
        live_stores = {_store_of(i) for i in live.items if isinstance(i, IdbStore)}
        out: list[Any] = []
        for item in items:
            if isinstance(item, IdbStore) and (
                    _store_of(item) in by_store or item.natural_key() in writes):
                sid = _store_of(item)
                start = live_recs.get(sid, []) if sid in live_stores else base_recs.get(sid, [])
                recs = apply_writes(start, by_store.get(sid, {}))
                digest = blobs.put_chunks(_lines(recs))
                item = item.model_copy(update={"records": len(recs), "digest": digest})
            out.append(item)
        return live.model_copy(update={"items": out})

