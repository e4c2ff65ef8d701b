"""Undoing one call on a web application: records by the site adapter's natural key.

A record (a comment, a ticket, a milestone) is matched by ``(kind, name)``, the
adapter's natural key, so a record the call deleted and an undo re-creates is
the same record with a new id.  A record both the call and someone after it
changed is merged field by field over its ``content`` and ``metadata`` maps
(``server`` fields are the app's and never conflict); a site adapter refines
that for its records (:meth:`~preimage.connectors.web.SiteAdapter.soft` for
fields the app derives, :meth:`~preimage.connectors.web.SiteAdapter.merge` for
fields that merge entry by entry, such as Trac's change log).

The restore, limited to exact keys, re-creates, updates or deletes exactly
those records through the adapter's channel; every other record is left alone.
"""

from __future__ import annotations

from typing import Any

from preimage.restoration.merge import Conflict, Merger
from preimage.restoration.revert import Reverter
from preimage.snapshot_schemas import Item, Snapshot
from preimage.snapshot_schemas.web import WebRecord, WebSnapshot

__all__ = ["WebReverter"]


class WebReverter(Reverter):
    """Records by adapter key, fields by name; the adapter says what else merges how."""


    def __init__(self, adapter: Any = None) -> None:
        self.adapter = adapter

    def specialize(self, snapshot: Snapshot) -> Reverter:
        """The reverter that asks ``snapshot``'s site adapter."""
        from preimage.connectors.web.registry import get_site_adapter

        assert isinstance(snapshot, WebSnapshot)
        return WebReverter(get_site_adapter(snapshot.adapter))

    def soft(self, item: Item, path: str) -> bool:
        return (self.adapter is not None and isinstance(item, WebRecord)
                and bool(self.adapter.soft(item, path)))

    def leaves(self, item: Item) -> list[tuple[str, str, Any]]:
        if self.adapter is not None and isinstance(item, WebRecord):
            item = self.adapter.comparable(item)
        return super().leaves(item)

    def merge_item(self, base: Item, theirs: Item, live: Item, blobs: Any) -> tuple[
        Item, list[Conflict], list[str]
    ]:
        assert isinstance(base, WebRecord) and isinstance(theirs, WebRecord)
        assert isinstance(live, WebRecord)
        merger = Merger(soft=lambda path: self.soft(live, path))
        merged = self.adapter.merge(base, theirs, live, merger) if self.adapter else None
        if merged is None:
            merged = merger.record(base, theirs, live)
        assert isinstance(merged, WebRecord)
        return merged, merger.conflicts, merger.changed
