"""The live state of a target as ``diff`` and ``score`` read it: captured into a scratch
area while it is compared, never held whole.

A connector that streams its capture (``capture_stream``, the file connector) hands
its items over as it reads them; :class:`ReplayableItems` passes each one on to the
comparison at once and writes it into the scratch area, in chunks of
:data:`SPILL_ITEMS`, as it goes.  A comparison that merges two sorted streams reads
the live items once and never asks for them again; one that must start over (the
backup's items were out of their promised order, or repeated a key) reads them back
from the scratch area — the same reading of the live state, not a second one.  Any
other connector's capture is taken whole, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from preimage.interface.target import Target
from preimage.store.documents import item_adapter, item_json, read_chunk

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from preimage.interface.blobs import BlobStore
    from preimage.snapshot_schemas import Snapshot

SPILL_ITEMS = 2048   # items per chunk written to the scratch area (one chunk is held)


class ReplayableItems:
    """Items of a one-pass stream, readable again: each item is kept in the scratch
    area ``blobs`` as it passes (a chunk's worth in memory at most), so a later
    iteration reads those back and then goes on with the stream where it stands."""

    def __init__(self, source: Iterable[Any], blobs: BlobStore,
                 item_type: TypeAdapter[Any]) -> None:
        self._source: Iterator[Any] = iter(source)
        self._exhausted = False
        self._blobs = blobs
        self._type = item_type
        self._chunks: list[tuple[str, int]] = []   # (digest, count), in stream order
        self._spilled = 0                           # items in those chunks
        self._pending: list[Any] = []               # items read, not yet in a chunk

    def _pull(self) -> bool:
        """Read one more item of the stream into the pending chunk; False at its end."""
        if self._exhausted:
            return False
        item = next(self._source, None)
        if item is None:
            self._exhausted = True
            return False
        if len(self._pending) >= SPILL_ITEMS:   # before the new item: a reader at the
            # stream's end goes on from the pending list, not from the chunk just written
            body = b"[" + b",".join(item_json(x) for x in self._pending) + b"]"
            self._chunks.append((self._blobs.put_bytes(body), len(self._pending)))
            self._spilled += len(self._pending)
            self._pending = []
        self._pending.append(item)
        return True

    def _chunk(self, i: int) -> list[Any]:
        digest, _count = self._chunks[i]
        return read_chunk(self._blobs.get_bytes(digest), self._type)

    def __iter__(self) -> Iterator[Any]:
        position = 0   # index in the whole stream of the next item to yield
        chunk_index, chunk_start = -1, 0
        chunk: list[Any] = []
        while True:
            if position < self._spilled:   # written out since, or before, this reader began
                while position >= chunk_start + len(chunk):
                    chunk_start += len(chunk)
                    chunk_index += 1
                    chunk = self._chunk(chunk_index)
                yield chunk[position - chunk_start]
            elif position < self._spilled + len(self._pending):
                yield self._pending[position - self._spilled]
            elif not self._pull():
                return
            else:
                continue
            position += 1


def live_capture(conn: Any, target: Target, scratch: BlobStore) -> Snapshot:
    """``conn``'s capture of ``target`` into ``scratch``, its items streamed when the
    connector can (see the module docstring)."""
    stream = getattr(conn, "capture_stream", None)
    if stream is None:
        snap: Snapshot = conn.capture(target, scratch)
        return snap
    snap = stream(target, scratch)
    items = ReplayableItems(snap.items, scratch, item_adapter(type(snap)))
    return snap.model_copy(update={"items": items})
