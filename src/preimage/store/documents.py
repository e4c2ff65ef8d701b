"""Snapshot documents as stored: a head, and the items in content-defined chunks.

A snapshot of a large state (a tree of a million files) is written as it is
captured, never held whole: each item is serialised to JSON on its own, the
items are cut into **chunks** at item boundaries the items' own bytes choose
(an item ends a chunk when the low bits of the CRC-32 of its JSON are zero,
with at least :data:`MIN_ITEMS` and at most :data:`MAX_ITEMS` items in a
chunk), and each chunk is stored as a blob: a JSON array of items.  The
document's **head** is the snapshot's JSON with ``items`` replaced by
``{"chunks": [[digest, count], …], "count": N}``.

So an unchanged state gives the same chunks — already stored — and a capture
of it stores only a new head of a few hundred bytes per thousand items, as
restic's trees do; an item added or changed in the middle changes the chunk
around it and no other.  A state whose items fit in :data:`INLINE_BYTES` is
stored as one document with its items inline, as before chunks existed.

**References.**  A chunk names the blobs of its items (file contents).  The
catalog records, once per distinct chunk, that the chunk *links* to those
blobs; a snapshot then references its head and its chunks, and a blob a chunk
links to is referenced through it (``docs/store.md``, *References*).  A
catalog that keeps no links gets every blob as a direct reference, as before.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from preimage.interface.connector import ItemStream
from preimage.interface.errors import StoreError

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from preimage.interface.blobs import BlobStore
    from preimage.snapshot_schemas import Snapshot
    from preimage.store.backend import Catalog, RecordingBlobs

MIN_ITEMS = 32
MAX_ITEMS = 2048
BOUNDARY_MASK = 0x7F          # one item in 128 ends a chunk: ~160 items per chunk
INLINE_BYTES = 64 << 10       # items that fit stay inside the document
_QUOTED_DIGEST = re.compile(rb'"([0-9a-f]{64})"')


def item_json(item: Any) -> bytes:
    """One item as JSON; names that are not UTF-8 (surrogate escapes) as ``\\udcXX``."""
    try:
        # what ``model_dump_json`` does, as bytes (it decodes them to a str, which
        # would be encoded again here): one wrapper and two copies fewer per item
        return item.__pydantic_serializer__.to_json(item)  # type: ignore[no-any-return]
    except ValueError:
        text = json.dumps(item.model_dump(mode="json"), ensure_ascii=False)
        return text.encode("utf-8", "backslashreplace")


def is_chunked(document: dict[str, Any]) -> bool:
    """Whether a parsed document keeps its items in chunks."""
    items = document.get("items")
    return isinstance(items, dict) and isinstance(items.get("chunks"), list)


def chunk_list(document: dict[str, Any]) -> list[tuple[str, int]]:
    """``(digest, item count)`` of each chunk of a chunked document."""
    out = []
    for entry in document["items"]["chunks"]:
        digest, count = entry
        out.append((str(digest), int(count)))
    return out


class ItemWriter:
    """Writes items into chunks as they come (see the module docstring).

    ``view`` is the capture's recording blob store; ``catalog`` records each
    chunk's links, and the blobs linked are dropped from the snapshot's direct
    references (they are referenced through the chunk).  Nothing but the
    current chunk is held in memory.
    """

    def __init__(self, view: RecordingBlobs, catalog: Catalog) -> None:
        self.view = view
        self.catalog = catalog
        self.chunks: list[tuple[str, int]] = []
        self.count = 0
        self._pending: list[bytes] = []
        self._pending_items: list[Any] = []
        self._pending_bytes = 0

    def add(self, item: Any) -> None:
        """Append one item."""
        data = item_json(item)
        self._pending.append(data)
        if not self.chunks:   # kept until it is clear whether they stay inline
            self._pending_items.append(item)
        self._pending_bytes += len(data)
        self.count += 1
        n = len(self._pending)
        if n >= MAX_ITEMS or (n >= MIN_ITEMS and not zlib.crc32(data) & BOUNDARY_MASK):
            self._cut()

    def _cut(self) -> None:
        body = b"[" + b",".join(self._pending) + b"]"
        digest = self.view.put_bytes(body)
        # Blob names in items are JSON strings; a name this misses stays a direct
        # reference of the snapshot, so looking only at quoted ones is safe (and fast).
        named = {m.decode() for m in _QUOTED_DIGEST.findall(body)} - {digest}
        touched = self.view.touched
        children = {d for d in named if d in touched or self.view.stored_size(d)}
        if children:
            touched.difference_update(self.catalog.add_links(digest, children))
        self.chunks.append((digest, len(self._pending)))
        self._pending = []
        self._pending_items = []
        self._pending_bytes = 0

    def finish(self) -> bool:
        """Cut the last chunk — unless every item fits inline: then False, and the
        items are :attr:`inline` / :attr:`inline_items`."""
        if not self.chunks and self._pending_bytes <= INLINE_BYTES:
            return False
        if self._pending:
            self._cut()
        return True

    @property
    def inline(self) -> list[bytes]:
        """The items' JSON, when they stay inline."""
        return self._pending

    @property
    def inline_items(self) -> list[Any]:
        """The items themselves, when they stay inline."""
        return self._pending_items


def _head(snap: Snapshot) -> dict[str, Any]:
    # mode="json" keeps surrogate-escaped names as str; json.dumps writes them below.
    # BaseModel's own dump: the items (perhaps a stream being consumed) are left out.
    from pydantic import BaseModel

    return BaseModel.model_dump(snap, mode="json", exclude={"items"})


def _encode(document: dict[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "backslashreplace")


@dataclass
class StoredDocument:
    """What :func:`store_document` wrote."""

    digest: str                          # the document (head)
    raw: bytes                           # its bytes
    count: int                           # items
    chunks: list[tuple[str, int]] | None  # None: the items are inline
    items: list[Any] | None              # the items, when inline


def store_document(
    view: RecordingBlobs, catalog: Catalog, snap: Snapshot, items: Iterable[Any]
) -> StoredDocument:
    """Write ``items`` (consumed once), then ``snap``'s head (see the module docstring).

    The head is written last: a connector that streams its items fills in
    ``notes`` and ``uncaptured`` while they are read.
    """
    writer = ItemWriter(view, catalog)
    for item in items:
        writer.add(item)
    chunked = writer.finish()
    head = _head(snap)
    if not chunked:
        raw = b'{"items":[' + b",".join(writer.inline) + b"]," + _encode(head)[1:]
        return StoredDocument(view.put_bytes(raw), raw, writer.count, None, writer.inline_items)
    head["items"] = {"chunks": [list(c) for c in writer.chunks], "count": writer.count}
    raw = _encode(head)
    return StoredDocument(view.put_bytes(raw), raw, writer.count, writer.chunks, None)


def expand(document: dict[str, Any], blobs: BlobStore, *, backup_id: str | None = None,
           path: str | None = None) -> dict[str, Any]:
    """``document`` with the items of its chunks read back inline (each chunk verified)."""
    if not is_chunked(document):
        return document
    items: list[Any] = []
    for digest, _count in chunk_list(document):
        items.extend(json.loads(blobs.get_bytes(digest, backup_id=backup_id, path=path)))
    return {**document, "items": items}


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}
# By id of an item adapter (each lives as long as the process): the adapter of a whole
# chunk of such items, for a snapshot type whose items read the same from JSON text.
_CHUNK_ADAPTERS: dict[int, TypeAdapter[Any]] = {}


def item_adapter(snapshot_type: type[Snapshot]) -> TypeAdapter[Any]:
    """Validates one item of ``snapshot_type`` (the member type of its ``items`` list)."""
    found = _ADAPTERS.get(snapshot_type)
    if found is None:
        import typing

        from pydantic import TypeAdapter

        annotation = snapshot_type.model_fields["items"].annotation
        args = typing.get_args(annotation)
        found = _ADAPTERS[snapshot_type] = TypeAdapter(args[0] if args else Any)
        if args and snapshot_type.items_from_json_text:
            _CHUNK_ADAPTERS[id(found)] = TypeAdapter(list[args[0]])  # type: ignore[valid-type]
    return found


def read_chunk(raw: bytes, item_type: TypeAdapter[Any]) -> list[Any]:
    """A stored chunk's items, validated (``ValueError``/``TypeError``/``KeyError`` when
    it is not a list of such items)."""
    whole = _CHUNK_ADAPTERS.get(id(item_type))
    if whole is not None:
        from pydantic import ValidationError

        try:
            return whole.validate_json(raw)   # type: ignore[no-any-return]
        except ValidationError as exc:
            # A name that is not UTF-8 is stored as a lone surrogate escape (``\udcXX``),
            # which pydantic's parser refuses: Python's reads it.
            if not any(e["type"] == "json_invalid" for e in exc.errors()):
                raise
    return [item_type.validate_python(x) for x in json.loads(raw)]


def _malformed(path: str | None, backup_id: str | None, exc: Exception) -> StoreError:
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return StoreError(
        f"the snapshot document of {path or 'a target'} in backup {backup_id or '?'} is "
        f"malformed ({first}); run `preimage check` — nothing was written"
    )


class StoredItems(Sequence[Any]):
    """The items of a chunked snapshot, read back from the store as they are used.

    What :func:`preimage.capture` returns for a snapshot it streamed: iterating
    reads one chunk at a time, so a capture of a million files never holds them
    all.  It compares equal to a list of the same items.
    """

    def __init__(self, blobs: BlobStore, chunks: list[tuple[str, int]],
                 item_type: TypeAdapter[Any], *, backup_id: str | None = None,
                 path: str | None = None) -> None:
        self._blobs = blobs
        self._chunks = chunks
        self._type = item_type
        self._backup_id = backup_id   # named by errors: the backup these items are read from
        self._path = path
        self._count = sum(n for _, n in chunks)
        self._cached: tuple[int, list[Any]] | None = None

    def _chunk(self, i: int) -> list[Any]:
        if self._cached is not None and self._cached[0] == i:
            return self._cached[1]
        digest, count = self._chunks[i]
        raw = self._blobs.get_bytes(digest, backup_id=self._backup_id, path=self._path)
        try:
            items = read_chunk(raw, self._type)
        except (ValueError, TypeError, KeyError) as exc:
            raise _malformed(self._path, self._backup_id, exc) from exc
        if len(items) != count:   # a head and chunk that disagree: not the stored document
            raise _malformed(self._path, self._backup_id, ValueError(
                f"chunk {digest[:12]} holds {len(items)} items, its head says {count}"))
        self._cached = (i, items)
        return items

    def __len__(self) -> int:
        return self._count

    def validate_all(self) -> None:
        """Read every chunk once (verified, validated), holding one at a time: raise
        :class:`StoreError` or a blob error before a caller relies on the items."""
        for i in range(len(self._chunks)):
            self._chunk(i)

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self._chunks)):
            yield from self._chunk(i)

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("item index out of range")
        for i, (_digest, n) in enumerate(self._chunks):
            if index < n:
                return self._chunk(i)[index]
            index -= n
        raise IndexError("item index out of range")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredItems | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None   # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{self._count} items in {len(self._chunks)} stored chunks>"


__all__ = [
    "INLINE_BYTES",
    "ItemStream",
    "ItemWriter",
    "StoredDocument",
    "StoredItems",
    "chunk_list",
    "expand",
    "is_chunked",
    "item_adapter",
    "item_json",
    "read_chunk",
    "store_document",
]
