"""Undoing one call on Kubernetes: objects by kind/namespace/name, merged by field path.

An object both the call and someone after it changed is merged leaf by leaf
over its spec, data, labels, annotations and the rest (lists whose order the
server sets by their key, other lists entry by entry when neither side changed
their length).  ``managedFields`` and ``status`` are *soft*: the API server and
the controllers rewrite them on every write, so when both sides moved them the
live value stands.  Server-assigned fields keep their live values, so the
object is written with the live ``resourceVersion``.

An object on its way out — it carries a ``deletionTimestamp``, or its namespace
does — counts as gone in each of the three snapshots: a deletion the API server
has accepted finishes after the call returns (``kubectl delete namespace
--wait=false``), so the capture right after the call still sees the objects it
is about to remove, and an undo must bring them all back, not only the
namespace's phase.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from preimage.restoration.merge import Conflict, Merger
from preimage.restoration.revert import Reverter
from preimage.snapshot_schemas import Item, Snapshot
from preimage.snapshot_schemas.kubernetes import KEYED_LISTS, KubeObject

_LISTS = {".".join(path): keys for path, keys in KEYED_LISTS.items()}
_SOFT = ("meta.metadata.managedFields", "meta.status")


def leaving(item: KubeObject) -> bool:
    """The API server has accepted the object's deletion (it has a deletionTimestamp)."""
    return bool(item.assigned.get("metadata", {}).get("deletionTimestamp"))


class KubeReverter(Reverter):
    """Objects by identity; fields by path."""

    def items(self, snap: Snapshot, blobs: Any) -> Iterator[Item]:
        """The objects, less those on their way out (see the module's docstring)."""
        items = list(snap.scoring_items(blobs))
        namespaces = {i.name for i in items if isinstance(i, KubeObject)
                      and i.kind == "Namespace" and not i.group and leaving(i)}
        for item in items:
            if isinstance(item, KubeObject) and (leaving(item) or item.namespace in namespaces):
                continue
            yield item

    def soft(self, item: Item, path: str) -> bool:
        return any(path == s or path.startswith((s + ".", s + "[")) for s in _SOFT)

    def merge_item(self, base: Item, theirs: Item, live: Item, blobs: Any) -> tuple[
        Item, list[Conflict], list[str]
    ]:
        assert isinstance(base, KubeObject) and isinstance(theirs, KubeObject)
        assert isinstance(live, KubeObject)
        merger = Merger(soft=lambda path: self.soft(live, path))
        body = merger.value(base.body, theirs.body, live.body, "content", "body", _LISTS)
        meta = merger.value(base.meta, theirs.meta, live.meta, "metadata", "meta", _LISTS)
        merged = live.model_copy(update={"body": body, "meta": meta})
        return merged, merger.conflicts, merger.changed
