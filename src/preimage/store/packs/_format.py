"""The pack repository format, version 1: a written contract (docs/remote-store.md).

Objects, by name::

    config                   JSON, plaintext, written once (exclusive put)
    data/<2 hex>/<64 hex>    packs; the name is the SHA-256 of the pack's bytes
    index/<64 hex>           index files; the name is the SHA-256 of the file's bytes

A **chunk** is a piece of a blob cut by FastCDC (a blob under ``chunker.min``
bytes is one chunk).  It is named by :meth:`Keys.chunk_id` (keyed HMAC-SHA256
of its plaintext), compressed with zstd when that saves space, and sealed
(AES-256-GCM, associated data ``b"chunk:" + id``) into a **box**.

A **pack** is boxes back to back, then a sealed header (associated data
``b"pack-header"``): ``{"writer": token, "entries": [[chunk id, offset,
length, raw length, flags], …]}``, then the header's length as 4 bytes
little-endian.  A pack can be read back without the index; ``writer`` names the
process that wrote it (its lease tells ``prune`` whether a pack no index names
yet is still being written or was left by a killed writer).

An **index file** is a sealed (``b"index"``), zstd-compressed JSON document::

    {"v": 1,
     "packs": {"<pack id>": [[chunk id, offset, length, raw length, flags], …]},
     "blobs": {"<sha256 of a blob's plaintext>": [size, ["<chunk id>", …]]}}

``blobs`` maps the digests the rest of preimage names blobs by (SHA-256 of the
plaintext, inside encrypted files only) to their chunks in order.  Writers add
index files and never change one; ``prune`` replaces many with one.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import zstandard

from preimage.interface.errors import StoreConfigError
from preimage.store.packs._crypto import BoxError, Keys, seal_parts

FORMAT = "preimage-packs"
VERSION = 1
CONFIG = "config"
FLAG_ZSTD = 1
_TRAILER = struct.Struct("<I")
_ZLEVEL = 3

# Chunk sizes: small enough that a 1% scattered change in a large file stores
# little, large enough that a gigabyte is a few thousand index entries.
MIN_CHUNK = 64 << 10
AVG_CHUNK = 256 << 10
MAX_CHUNK = 1 << 20
PACK_SIZE = 16 << 20

Entry = tuple[str, int, int, int, int]  # chunk id, offset, length, raw length, flags


@dataclass(frozen=True)
class RepoConfig:
    """The ``config`` object."""

    id: str
    cipher: str
    key_check: str | None
    min_chunk: int = MIN_CHUNK
    avg_chunk: int = AVG_CHUNK
    max_chunk: int = MAX_CHUNK
    pack_size: int = PACK_SIZE
    version: int = VERSION

    @classmethod
    def new(cls, repo_id: str, keys: Keys) -> RepoConfig:
        """A fresh config for a repository sealed with ``keys`` (or unencrypted)."""
        check = None
        if keys.encrypted:
            check = base64.b64encode(keys.seal(b"preimage key check", _check_aad(repo_id))).decode()
        return cls(id=repo_id, cipher="aes-256-gcm" if keys.encrypted else "none",
                   key_check=check)

    def to_bytes(self) -> bytes:
        """The config as stored."""
        return json.dumps({
            "format": FORMAT, "version": self.version, "id": self.id, "cipher": self.cipher,
            "kdf": "hkdf-sha256", "key_check": self.key_check, "compression": "zstd",
            "chunker": {"algorithm": "fastcdc-2020", "min": self.min_chunk,
                        "avg": self.avg_chunk, "max": self.max_chunk, "seed": "keyed"},
            "pack_size": self.pack_size,
        }, indent=2, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, raw: bytes, where: str) -> RepoConfig:
        """Parse a stored config; :class:`StoreConfigError` when it is not one of ours."""
        try:
            doc = json.loads(raw)
            if doc.get("format") != FORMAT:
                raise ValueError("not a preimage pack repository")
            version = int(doc["version"])
            if version > VERSION:
                raise StoreConfigError(
                    f"the store at {where} has format version {version}; this preimage reads "
                    f"up to {VERSION} — upgrade preimage", where=where)
            ch = doc["chunker"]
            return cls(id=str(doc["id"]), cipher=str(doc["cipher"]), key_check=doc["key_check"],
                       min_chunk=int(ch["min"]), avg_chunk=int(ch["avg"]),
                       max_chunk=int(ch["max"]), pack_size=int(doc["pack_size"]),
                       version=version)
        except StoreConfigError:
            raise
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreConfigError(
                f"{where} holds an object named 'config' that is not a preimage store's "
                f"({exc}); point the store URL at an empty prefix", where=where) from exc

    def verify_key(self, keys: Keys, where: str) -> None:
        """Raise :class:`WrongKeyError` (or a missing-key error) unless ``keys`` fit."""
        from preimage.interface.errors import WrongKeyError

        if self.cipher == "none":
            if keys.encrypted:
                raise StoreConfigError(
                    f"the store at {where} is not encrypted but an encryption key is set — "
                    "unset PREIMAGE_STORE_KEY / PREIMAGE_STORE_KEY_FILE for it", where=where)
            return
        if not keys.encrypted or self.key_check is None:
            raise StoreConfigError(
                f"the store at {where} is encrypted: set PREIMAGE_STORE_KEY or "
                "PREIMAGE_STORE_KEY_FILE to its key; nothing was written", where=where)
        try:
            keys.open(base64.b64decode(self.key_check), _check_aad(self.id))
        except (BoxError, ValueError) as exc:
            raise WrongKeyError(where) from exc


def _check_aad(repo_id: str) -> bytes:
    return b"config:" + repo_id.encode()


def pack_name(pack_id: str) -> str:
    """The object name of pack ``pack_id``."""
    return f"data/{pack_id[:2]}/{pack_id}"


def index_name(index_id: str) -> str:
    """The object name of index file ``index_id``."""
    return f"index/{index_id}"


def chunk_aad(chunk_id: str) -> bytes:
    """Associated data that binds a box to its chunk id."""
    return b"chunk:" + chunk_id.encode()


def seal_chunk(keys: Keys, chunk_id: str,
               data: bytes | memoryview) -> tuple[bytes, bytes | memoryview, int]:
    """``(box prefix, box rest, flags)``: the chunk compressed when that helps, then
    sealed; the box is the two parts back to back (appended to a pack as they are)."""
    packed = _tools().compressor.compress(data)
    aad = chunk_aad(chunk_id)
    if len(packed) < len(data) - len(data) // 32:
        return (*seal_parts(keys.data, packed, aad), FLAG_ZSTD)
    return (*seal_parts(keys.data, data, aad), 0)


def open_chunk(keys: Keys, entry: Entry, box: bytes | memoryview) -> bytes:
    """The plaintext of a box; :class:`BoxError` when it does not authenticate or
    decompresses to the wrong size."""
    chunk_id, _off, _length, raw_length, flags = entry
    plain = keys.open(box, chunk_aad(chunk_id))
    if flags & FLAG_ZSTD:
        try:
            plain = _tools().decompressor.decompress(plain, max_output_size=raw_length)
        except zstandard.ZstdError as exc:
            raise BoxError(f"chunk {chunk_id[:12]} does not decompress") from exc
    if len(plain) != raw_length:
        raise BoxError(f"chunk {chunk_id[:12]} has the wrong length")
    return plain


class _Tools:
    """A zstd compressor and decompressor (they hold buffers worth reusing)."""

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(level=_ZLEVEL)
        self.decompressor = zstandard.ZstdDecompressor()


_PER_THREAD = threading.local()   # zstd contexts may not be shared between threads


def _tools() -> _Tools:
    tools: _Tools | None = getattr(_PER_THREAD, "tools", None)
    if tools is None:
        tools = _PER_THREAD.tools = _Tools()
    return tools


def finish_pack(keys: Keys, body: bytearray, entries: list[Entry],
                writer: str) -> tuple[str, bytearray]:
    """Append the sealed header and trailer to ``body``; return ``(pack id, body)``
    (the same buffer: it is not changed afterwards)."""
    doc = {"writer": writer, "entries": entries}
    header = keys.seal(json.dumps(doc, separators=(",", ":")).encode(), b"pack-header")
    body += header
    body += _TRAILER.pack(len(header))
    return hashlib.sha256(body).hexdigest(), body


TRAILER_SIZE = _TRAILER.size


def header_length(trailer: bytes) -> int:
    """The sealed header's length from a pack's last 4 bytes."""
    if len(trailer) != _TRAILER.size:
        raise BoxError("pack too short")
    return int(_TRAILER.unpack(trailer)[0])


def read_pack_header(keys: Keys, header: bytes) -> tuple[str, list[Entry]]:
    """``(writer, entries)`` from a pack's sealed header; :class:`BoxError` if damaged."""
    try:
        doc = json.loads(keys.open(header, b"pack-header"))
        rows = doc["entries"]
        return str(doc["writer"]), [
            (str(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in rows]
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise BoxError("pack header is damaged") from exc


def encode_index(keys: Keys, packs: dict[str, list[Entry]],
                 blobs: dict[str, tuple[int, tuple[str, ...]]]) -> tuple[str, bytes]:
    """``(index id, bytes)`` of an index file."""
    doc = {"v": 1, "packs": {p: [list(e) for e in es] for p, es in packs.items()},
           "blobs": {d: [size, list(cids)] for d, (size, cids) in blobs.items()}}
    raw = zstandard.ZstdCompressor(level=_ZLEVEL).compress(
        json.dumps(doc, separators=(",", ":")).encode())
    data = keys.seal(raw, b"index")
    return hashlib.sha256(data).hexdigest(), data


def decode_index(keys: Keys, data: bytes) -> tuple[dict[str, list[Entry]],
                                                    dict[str, tuple[int, tuple[str, ...]]]]:
    """``(packs, blobs)`` of an index file; :class:`BoxError` when damaged."""
    try:
        doc: dict[str, Any] = json.loads(
            zstandard.ZstdDecompressor().decompress(keys.open(data, b"index"),
                                                    max_output_size=1 << 31))
    except (ValueError, zstandard.ZstdError) as exc:
        raise BoxError("index file is damaged") from exc
    packs = {p: [(str(e[0]), int(e[1]), int(e[2]), int(e[3]), int(e[4])) for e in es]
             for p, es in doc.get("packs", {}).items()}
    blobs = {d: (int(v[0]), tuple(str(c) for c in v[1])) for d, v in doc.get("blobs", {}).items()}
    return packs, blobs


def chunk_ids(entries: Iterable[Entry]) -> list[str]:
    """The chunk ids of pack entries."""
    return [e[0] for e in entries]
