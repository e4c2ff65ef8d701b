"""Rows as JSON lines: one object per row, columns in table order; and storing a stream of
row bytes while it is read (:func:`put_while_reading`), which every SQL connector uses.

JSON keeps integers, floats, strings and ``null`` exactly; bytes are written
as ``{"$bytes": "<base64>"}``; anything else a driver returns (decimals,
dates) as its string form, which the database converts back on insert.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from preimage.interface.blobs import BlobStore

BATCH = 1000
_HEAD = 1 << 20  # bytes read before a reader thread is worth starting


def _encode(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return {"$bytes": base64.b64encode(bytes(value)).decode()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$bytes"}:
        return base64.b64decode(value["$bytes"])
    return value


def encode_rows(columns: list[str], rows: Iterable[Any]) -> Iterator[bytes]:
    """JSON lines for ``rows`` (sequences in ``columns`` order), in batches."""
    batch: list[str] = []
    for row in rows:
        batch.append(json.dumps(
            {c: _encode(v) for c, v in zip(columns, row, strict=True)},
            ensure_ascii=False, separators=(",", ":"),
        ))
        if len(batch) >= BATCH:
            yield ("\n".join(batch) + "\n").encode()
            batch = []
    if batch:
        yield ("\n".join(batch) + "\n").encode()


def decode_rows(chunks: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """Rows back from JSON-lines chunks, with bytes decoded."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line:
                yield {k: _decode(v) for k, v in json.loads(line).items()}
    if buffer.strip():
        yield {k: _decode(v) for k, v in json.loads(buffer).items()}


def batches(rows: Iterable[dict[str, Any]], size: int = BATCH) -> Iterator[list[dict[str, Any]]]:
    """``rows`` in lists of ``size``."""
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def put_while_reading(blobs: BlobStore, chunks: Iterable[bytes]) -> str:
    """``blobs.put_chunks(chunks)`` with ``chunks`` read in a second thread, so reading
    (libpq) and hashing and compression (the store, in this thread) overlap.  The store
    is only ever used from the calling thread; the connection is used by the reader
    alone until it is done.  Rows that come to less than :data:`_HEAD` bytes (a small
    table) are stored without a second thread: there is nothing to overlap."""
    import queue
    import threading

    chunks = iter(chunks)
    head: list[bytes] = []
    held = 0
    for chunk in chunks:
        head.append(chunk)
        held += len(chunk)
        if held >= _HEAD:
            break
    else:
        return blobs.put_chunks(head)
    pipe: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=16)
    stop = threading.Event()

    def read() -> None:
        try:
            for chunk in chunks:
                if stop.is_set():
                    return
                pipe.put(chunk)
        except BaseException as exc:  # handed to the storing thread below
            pipe.put(exc)
            return
        pipe.put(None)

    def drain() -> Iterator[bytes]:
        yield from head
        while (item := pipe.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item

    reader = threading.Thread(target=read, name="preimage-copy-reader", daemon=True)
    reader.start()
    try:
        return blobs.put_chunks(drain())
    finally:
        stop.set()
        while reader.is_alive():  # let a blocked reader finish its put
            try:
                pipe.get(timeout=0.1)
            except queue.Empty:
                pass
        reader.join()
