"""A pack repository: chunks in packs, an index, over any :class:`Storage`.

One :class:`PackRepository` per process and store.  Writing adds chunks to an
in-memory pack that is uploaded (in the background, two at a time) when it
reaches ``pack_size``; :meth:`flush` uploads the last pack, waits for every
upload, then writes one index file naming them.  Until then the new chunks
are readable from memory, and nothing names them: a writer killed half-way
leaves only packs no index lists, which ``prune`` reclaims.

Reading looks chunks up in the merged index (every ``index/`` file; a copy of
each is kept in the local cache, as they never change), reads adjacent boxes
of one pack with one ranged GET, a few requests ahead of the consumer, and
keeps the boxes it fetched in a bounded local chunk cache.  When a pack has
vanished (``prune`` repacked it) the index is reloaded once and the read retried.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from preimage.interface import crash as _crash
from preimage.interface.errors import StoreConfigError, StoreError
from preimage.store.packs._crypto import BoxError, Keys
from preimage.store.packs._format import (
    CONFIG,
    TRAILER_SIZE,
    Entry,
    RepoConfig,
    decode_index,
    encode_index,
    finish_pack,
    header_length,
    index_name,
    open_chunk,
    pack_name,
    read_pack_header,
    seal_chunk,
)
from preimage.store.packs._storage import ObjectMissing, Storage

_READ_GROUP = 8 << 20   # at most this many bytes per ranged GET
_READ_AHEAD = 4         # ranged GETs in flight ahead of the reader
_READ_WINDOW = 4 << 20  # small boxes read along with a requested one (into the cache)
_SPAN_GAP = 1 << 20     # bytes of other boxes a span may read over to join two blobs
def _cache_limit() -> int:
    """``$PREIMAGE_CHUNK_CACHE_MB`` in bytes, read at use (not at import: a resident process
    serves callers with different settings)."""
    return int(os.environ.get("PREIMAGE_CHUNK_CACHE_MB", "512")) << 20


class WriterLeaseLapsed(StoreError):
    """The writer's lease had a break (its catalog connection dropped): nothing indexed."""

    def __init__(self, where: str) -> None:
        super().__init__(
            f"the connection to the catalog dropped while this process was writing to {where}: "
            "its writer lease lapsed, so a prune may have taken its packs for a dead writer's; "
            "nothing was indexed (the next prune reclaims the packs) — run it again")


class ChunkUnreadable(Exception):
    """A chunk is missing from every pack (``missing``) or fails to open (corrupt)."""

    def __init__(self, chunk_id: str, *, missing: bool) -> None:
        self.chunk_id = chunk_id
        self.missing = missing
        super().__init__(chunk_id)


@dataclass
class Span:
    """Blobs whose boxes one ranged GET of one pack can serve (``verify_many``)."""

    pack: str
    start: int
    end: int
    blobs: list[tuple[str, list[Entry]]]


@dataclass
class _OpenPack:
    body: bytearray
    entries: list[Entry]


def init_repository(storage: Storage, keys_for: type[Keys], key_text: str | None,
                    repo_id: str) -> tuple[RepoConfig, bool]:
    """Write a fresh ``config`` unless one exists; ``(config, created)``.

    An existing config is returned (after checking the key) so that ``init``
    run twice, or by two machines at once, is harmless.
    """
    storage.check()
    keys = keys_for.derive(key_text, repo_id)
    config = RepoConfig.new(repo_id, keys)
    if storage.put(CONFIG, config.to_bytes(), exclusive=True):
        return config, True
    existing = RepoConfig.from_bytes(storage.get(CONFIG), storage.location)
    existing.verify_key(keys_for.derive(key_text, existing.id), storage.location)
    return existing, False


class PackRepository:
    """Chunks and blobs of one repository, as seen from this process."""

    def __init__(self, storage: Storage, keys: Keys, config: RepoConfig,
                 cache_dir: Path | None) -> None:
        self.storage = storage
        self.keys = keys
        self.config = config
        self.cache_dir = cache_dir
        self._lock = threading.RLock()
        self._loaded: dict[str, set[str]] = {}      # index file -> packs it names
        self._packs: dict[str, list[Entry]] = {}     # pack -> its entries
        self._offsets: dict[str, list[int]] = {}    # pack -> its entries' offsets
        self._chunks: dict[str, tuple[str, Entry]] = {}  # chunk id -> (pack, entry)
        self._blobs: dict[str, tuple[int, tuple[str, ...]]] = {}
        self._index_loaded = False
        self.condemned: frozenset[str] = frozenset()  # chunks a prune is about to delete
        # This writer's work not yet named by an index file.
        self._open: _OpenPack | None = None
        self._open_chunks: dict[str, Entry] = {}
        self._sealed: dict[str, bytearray] = {}      # finished packs not yet indexed
        self._new_packs: dict[str, list[Entry]] = {}
        self._new_chunks: dict[str, tuple[str, Entry]] = {}
        self._new_blobs: dict[str, tuple[int, tuple[str, ...]]] = {}
        self._uploads: list[Future[None]] = []
        self._pool: ThreadPoolExecutor | None = None
        self._readers: ThreadPoolExecutor | None = None
        self._cache_bytes = 0
        self._cache_dirs: set[Path] = set()
        # Named in every pack this process writes; ``before_first_pack`` takes the
        # writer's lease, so ``prune`` can tell a pack still being indexed from one
        # a killed writer left.
        self.writer = secrets.token_hex(8)
        self.before_first_pack: Callable[[], None] | None = None
        # Asked before and after indexing: has the writer's lease held without a break?
        # If not (the catalog connection dropped), a prune may have taken this writer's
        # packs for a dead writer's: nothing is indexed (or the index is taken back).
        self.lease_intact: Callable[[], bool] | None = None

    @classmethod
    def open(cls, storage: Storage, key_text: str | None, cache_root: Path | None) -> PackRepository:
        """Open the repository in ``storage``; raise a precise error if it is not one
        (not initialised, bucket missing, credentials refused, wrong key)."""
        try:
            raw = storage.get(CONFIG)
        except ObjectMissing as exc:
            raise StoreConfigError(
                f"no preimage store at {storage.location} — run `preimage store init` first",
                where=storage.location,
            ) from exc
        config = RepoConfig.from_bytes(raw, storage.location)
        keys = Keys.derive(key_text, config.id)
        config.verify_key(keys, storage.location)
        cache = None
        if cache_root is not None:
            cache = cache_root / config.id
            with contextlib.suppress(OSError):
                cache.mkdir(mode=0o700, parents=True, exist_ok=True)
        return cls(storage, keys, config, cache)

    # ------------------------------------------------------------ index
    def _ensure_index(self) -> None:
        if not self._index_loaded:
            self.refresh()

    def refresh(self) -> None:
        """Bring the merged index up to date with the ``index/`` files in storage."""
        with self._lock:
            names = {name for name, _size in self.storage.list("index/")}
            gone = set(self._loaded) - names
            if gone:  # a prune replaced index files: rebuild from what is there now
                self._loaded.clear()
                self._packs.clear()
                self._offsets.clear()
                self._chunks.clear()
                self._blobs.clear()
            for name in sorted(names - set(self._loaded)):
                data = self._index_bytes(name)
                if data is None:
                    continue
                try:
                    packs, blobs = decode_index(self.keys, data)
                except BoxError as exc:
                    raise StoreConfigError(
                        f"index file {name} in {self.storage.location} does not open ({exc}) "
                        "— run `preimage check`", where=self.storage.location) from exc
                self._merge(name, packs, blobs)
            self._index_loaded = True

    def _index_bytes(self, name: str) -> bytes | None:
        local = self.cache_dir / name if self.cache_dir else None
        if local is not None:
            with contextlib.suppress(OSError):
                return local.read_bytes()
        try:
            data = self.storage.get(name)
        except ObjectMissing:
            return None  # removed by a prune between list and get
        if local is not None:
            with contextlib.suppress(OSError):
                local.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                tmp = local.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_bytes(data)
                os.replace(tmp, local)
        return data

    def _merge(self, name: str, packs: dict[str, list[Entry]],
               blobs: dict[str, tuple[int, tuple[str, ...]]]) -> None:
        self._loaded[name] = set(packs)
        for pack, entries in packs.items():
            self._packs[pack] = list(entries)
            self._offsets.pop(pack, None)
            for e in entries:
                self._chunks[e[0]] = (pack, e)
        self._blobs.update(blobs)

    def index_files(self) -> dict[str, set[str]]:
        """Index file name -> packs it names (after a refresh)."""
        self._ensure_index()
        return {k: set(v) for k, v in self._loaded.items()}

    def all_packs(self) -> dict[str, list[Entry]]:
        """Every indexed pack and its entries."""
        self._ensure_index()
        return {k: list(v) for k, v in self._packs.items()}

    def all_chunks(self) -> dict[str, tuple[str, Entry]]:
        """Every indexed chunk and where it is."""
        self._ensure_index()
        return dict(self._chunks)

    def all_blobs(self) -> dict[str, tuple[int, tuple[str, ...]]]:
        """Every indexed blob and its chunks."""
        self._ensure_index()
        return dict(self._blobs)

    # ------------------------------------------------------------ lookups
    def has_chunk(self, chunk_id: str) -> bool:
        """Whether the chunk is stored (or about to be) and not condemned by a prune."""
        if chunk_id in self._open_chunks or chunk_id in self._new_chunks:
            return True
        self._ensure_index()
        return chunk_id in self._chunks and chunk_id not in self.condemned

    def blob(self, digest: str) -> tuple[int, tuple[str, ...]] | None:
        """``(size, chunk ids)`` of a stored blob whose chunks are all usable, else None."""
        found = self._new_blobs.get(digest)
        if found is None:
            self._ensure_index()
            found = self._blobs.get(digest)
        if found is None or not all(self.has_chunk(c) for c in found[1]):
            return None
        return found

    def readable_blob(self, digest: str) -> tuple[int, tuple[str, ...]] | None:
        """Like :meth:`blob`, but a blob a prune has hidden still counts: it stays
        readable until purged."""
        found = self._new_blobs.get(digest)
        if found is None:
            self._ensure_index()
            found = self._blobs.get(digest)
        if found is None or any(self._locate(c) is None for c in found[1]):
            return None
        return found

    def stored_size(self, digest: str) -> int:
        """Bytes the blob's chunks take in packs (0 when unknown)."""
        found = self.readable_blob(digest)
        if found is None:
            return 0
        total = 0
        for cid in found[1]:
            loc = self._locate(cid)
            total += loc[1][2] if loc else 0
        return total

    def _locate(self, chunk_id: str) -> tuple[str | None, Entry] | None:
        if chunk_id in self._open_chunks:
            return None, self._open_chunks[chunk_id]
        if chunk_id in self._new_chunks:
            return self._new_chunks[chunk_id]
        return self._chunks.get(chunk_id)

    # ------------------------------------------------------------ writing
    def add_chunk(self, data: bytes | memoryview) -> tuple[str, int]:
        """Store a chunk unless present; ``(chunk id, bytes newly stored)``."""
        chunk_id = self.keys.chunk_id(data)
        with self._lock:
            if self.has_chunk(chunk_id):
                return chunk_id, 0
        head, rest, flags = seal_chunk(self.keys, chunk_id, data)
        with self._lock:
            if self.has_chunk(chunk_id):
                return chunk_id, 0
            if self._open is None:
                self._open = _OpenPack(bytearray(), [])
            body = self._open.body
            entry = (chunk_id, len(body), len(head) + len(rest), len(data), flags)
            body += head
            body += rest
            self._open.entries.append(entry)
            self._open_chunks[chunk_id] = entry
            full = len(self._open.body) >= self.config.pack_size
            if full:
                self._seal_open_pack()
        if full:
            self._throttle()
        return chunk_id, entry[2]

    def add_blob(self, digest: str, size: int, chunk_ids: Iterable[str]) -> None:
        """Record that blob ``digest`` is ``chunk_ids`` in order."""
        with self._lock:
            self._new_blobs[digest] = (size, tuple(chunk_ids))

    def _seal_open_pack(self) -> None:
        pack = self._open
        if pack is None or not pack.entries:
            return
        self._open = None
        if self.before_first_pack is not None:
            hook, self.before_first_pack = self.before_first_pack, None
            hook()
        pack_id, data = finish_pack(self.keys, pack.body, pack.entries, self.writer)
        self._sealed[pack_id] = data
        self._new_packs[pack_id] = pack.entries
        for e in pack.entries:
            self._new_chunks[e[0]] = (pack_id, e)
        self._open_chunks.clear()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="preimage-upload")
        self._uploads.append(self._pool.submit(self._upload, pack_id, data))

    def _throttle(self) -> None:
        """At most a few packs wait in memory: block on the oldest upload (never while
        holding the lock — the upload threads do not take it, but a reader may)."""
        while True:
            inflight = [f for f in list(self._uploads) if not f.done()]
            if len(inflight) < 3:
                return
            inflight[0].exception()

    def _upload(self, pack_id: str, data: bytearray) -> None:
        self.storage.put(pack_name(pack_id), data)
        _crash.point("pack")   # uploaded, not yet named by an index: the worst moment to die
        self._sealed.pop(pack_id, None)   # readable from storage from now on; free the memory

    def flush(self) -> str | None:
        """Upload what is pending and name it in a new index file; return its id (None
        when nothing was new).  Raises the first upload error: then nothing is indexed."""
        with self._lock:
            self._seal_open_pack()
            uploads, self._uploads = self._uploads, []
        for f in uploads:
            f.result()
        check = self.lease_intact if self._new_packs else None
        if check is not None and not check():
            self.discard_pending()
            raise WriterLeaseLapsed(self.storage.location)
        with self._lock:
            if not self._new_packs and not self._new_blobs:
                return None
            index_id, data = encode_index(self.keys, self._new_packs, self._new_blobs)
            self.storage.put(index_name(index_id), data, exclusive=True)
            if check is not None and not check():   # it lapsed while the index went up
                self.storage.delete([index_name(index_id)])
                self.discard_pending()
                raise WriterLeaseLapsed(self.storage.location)
            self._merge(index_name(index_id), self._new_packs, self._new_blobs)
            self._sealed.clear()
            self._new_packs = {}
            self._new_chunks = {}
            self._new_blobs = {}
            return index_id

    def discard_pending(self) -> None:
        """Forget this writer's unindexed work (after a failed capture)."""
        with self._lock:
            for f in self._uploads:
                f.cancel()
            self._uploads = []
            self._open = None
            self._open_chunks.clear()
            self._sealed.clear()
            self._new_packs = {}
            self._new_chunks = {}
            self._new_blobs = {}

    # ------------------------------------------------------------ maintenance
    def stored_packs(self) -> dict[str, int]:
        """Pack id -> size of every pack object in storage (indexed or not)."""
        return {name.rsplit("/", 1)[-1]: size for name, size in self.storage.list("data/")}

    def pack_header(self, pack_id: str, size: int) -> tuple[str, list[Entry]]:
        """``(writer, entries)`` read from the pack itself; :class:`BoxError` if damaged."""
        name = pack_name(pack_id)
        length = header_length(bytes(self.storage.get_range(name, size - TRAILER_SIZE,
                                                            TRAILER_SIZE)))
        if length + TRAILER_SIZE > size:
            raise BoxError("pack header length out of range")
        header = self.storage.get_range(name, size - TRAILER_SIZE - length, length)
        return read_pack_header(self.keys, bytes(header))

    def read_pack(self, pack_id: str) -> bytes:
        """A whole pack (:class:`ObjectMissing` when gone)."""
        return self.storage.get(pack_name(pack_id))

    def write_pack(self, boxes: list[tuple[Entry, bytes]]) -> tuple[str, list[Entry]]:
        """Upload a pack of already sealed boxes (a repack); ``(pack id, entries)``.

        Boxes are bound to their chunk id, not to a pack, so they move as they are.
        """
        body = bytearray()
        entries: list[Entry] = []
        for (cid, _off, length, raw, flags), box in boxes:
            entries.append((cid, len(body), length, raw, flags))
            body += box
        pack_id, data = finish_pack(self.keys, body, entries, self.writer)
        self.storage.put(pack_name(pack_id), data)
        return pack_id, entries

    def write_index(self, packs: dict[str, list[Entry]],
                    blobs: dict[str, tuple[int, tuple[str, ...]]]) -> str:
        """Upload one index file; return its object name."""
        index_id, data = encode_index(self.keys, packs, blobs)
        name = index_name(index_id)
        self.storage.put(name, data, exclusive=True)
        return name

    def index_contents(self, name: str) -> tuple[dict[str, list[Entry]],
                                                  dict[str, tuple[int, tuple[str, ...]]]]:
        """The packs and blobs one index file names."""
        data = self._index_bytes(name)
        if data is None:
            return {}, {}
        return decode_index(self.keys, data)

    def close(self) -> None:
        """Stop the upload threads and trim the chunk cache."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._readers is not None:
            self._readers.shutdown(wait=True, cancel_futures=True)
            self._readers = None
        self._trim_cache()

    # ------------------------------------------------------------ reading
    def read_chunks(self, chunk_ids: Iterable[str]) -> Iterator[bytes]:
        """Yield the plaintext of each chunk in order, fetching ahead.

        Raises :class:`ChunkUnreadable` for a chunk no pack holds (after one index
        reload) or whose box fails to authenticate.
        """
        self._ensure_index()
        groups = self._plan(list(chunk_ids))
        if len(groups) == 1:   # a small blob: no threads; read its neighbours along
            yield from self._fetch_group(groups[0], small=True)
            return
        with self._lock:
            if self._readers is None:
                self._readers = ThreadPoolExecutor(max_workers=_READ_AHEAD,
                                                   thread_name_prefix="preimage-read")
            pool = self._readers
        pending: list[Future[list[bytes]]] = []
        it = iter(groups)
        try:
            for group in it:
                pending.append(pool.submit(self._fetch_group, group))
                if len(pending) >= _READ_AHEAD:
                    break
            while pending:
                done = pending.pop(0).result()
                nxt = next(it, None)
                if nxt is not None:
                    pending.append(pool.submit(self._fetch_group, nxt))
                yield from done
        finally:
            for f in pending:
                f.cancel()

    def _plan(self, chunk_ids: list[str]) -> list[list[str]]:
        """Chunk ids grouped into runs that one ranged GET of one pack can serve."""
        groups: list[list[str]] = []
        last: tuple[str | None, int] | None = None
        size = 0
        for cid in chunk_ids:
            loc = self._locate(cid)
            key = (loc[0], loc[1][1]) if loc else None
            if (groups and loc and last and key and key[0] == last[0] and key[1] == last[1]
                    and size + loc[1][2] <= _READ_GROUP):
                groups[-1].append(cid)
                size += loc[1][2]
            else:
                groups.append([cid])
                size = loc[1][2] if loc else 0
            last = (loc[0], loc[1][1] + loc[1][2]) if loc else None
        return groups

    def _fetch_group(self, group: list[str], retried: bool = False,
                     small: bool = False) -> list[bytes]:
        """The plaintexts of one group.  ``small``: the whole of a small blob — its boxes
        and the boxes after it in the pack (the next small blobs of a tree, written one
        after another) go to the chunk cache, as a restore or check asks for them next;
        a large blob's groups stream through uncached."""
        cached = [self._cached_box(cid) for cid in group]
        if all(b is not None for b in cached):
            try:
                return [self._open_box(cid, b) for cid, b in zip(group, cached, strict=True)
                        if b is not None]
            except ChunkUnreadable:   # a cache file cut short by a crash: fetch instead
                for cid in group:
                    path = self._cache_path(cid)
                    if path is not None:
                        with contextlib.suppress(OSError):
                            path.unlink()
        locs = [self._locate(cid) for cid in group]
        if any(loc is None for loc in locs):
            if not retried:
                self.refresh()
                return self._fetch_group(group, retried=True, small=small)
            missing = next(cid for cid, loc in zip(group, locs, strict=True) if loc is None)
            raise ChunkUnreadable(missing, missing=True)
        first = locs[0]
        assert first is not None
        pack_id, entry0 = first
        start = entry0[1]
        end = max(loc[1][1] + loc[1][2] for loc in locs if loc)
        body: bytes | memoryview
        if pack_id is None:  # still being filled in memory
            with self._lock:
                body = bytes(self._open.body[start:end]) if self._open else b""
        elif (sealed := self._sealed.get(pack_id)) is not None:
            body = bytes(sealed[start:end])
        else:
            extra = self._neighbours(pack_id, end) if small else []
            fetch_end = max([end] + [e[1] + e[2] for e in extra])
            try:
                body = self.storage.get_range(pack_name(pack_id), start, fetch_end - start)
            except ObjectMissing:
                if not retried:
                    self.refresh()
                    return self._fetch_group(group, retried=True, small=small)
                raise ChunkUnreadable(group[0], missing=True) from None
            for e in extra:   # boxes read along: the next small blobs of a restore
                if e[0] not in group:
                    self._cache_box(e[0], body[e[1] - start : e[1] - start + e[2]])
        out = []
        for cid, loc in zip(group, locs, strict=True):
            assert loc is not None
            box = body[loc[1][1] - start : loc[1][1] - start + loc[1][2]]
            plain = self._open_box(cid, box, loc[1])
            # Small blobs are cached: fetched one by one they cost a round trip each.
            # A large file's chunks stream in multi-MiB ranges; caching them costs
            # more disk writes than a second streamed read (measured).
            if small and pack_id is not None and pack_id not in self._sealed:
                self._cache_box(cid, box)
            out.append(plain)
        return out

    def _neighbours(self, pack_id: str, end: int) -> list[Entry]:
        """Boxes of ``pack_id`` right after offset ``end``, up to a window, worth reading
        in the same GET."""
        if self.cache_dir is None or _cache_limit() <= 0:
            return []
        entries = self._packs.get(pack_id, [])
        offsets = self._offsets.get(pack_id)
        if offsets is None:
            offsets = self._offsets[pack_id] = [e[1] for e in entries]
        out: list[Entry] = []
        i = bisect.bisect_left(offsets, end)
        while i < len(entries) and entries[i][1] + entries[i][2] - end <= _READ_WINDOW:
            out.append(entries[i])
            i += 1
        return out

    def _open_box(self, cid: str, box: bytes | memoryview, entry: Entry | None = None) -> bytes:
        if entry is None:
            loc = self._locate(cid)
            if loc is None:
                raise ChunkUnreadable(cid, missing=True)
            entry = loc[1]
        try:
            return open_chunk(self.keys, entry, box)
        except BoxError as exc:
            raise ChunkUnreadable(cid, missing=False) from exc

    def spans(self, blobs: Iterable[tuple[str, tuple[str, ...]]]) -> tuple[list[Span], list[str]]:
        """Blobs grouped for reading many at once: ``(spans, singles)``.

        A blob joins a span when its boxes lie back to back in one stored pack (how a
        capture writes a blob it stores whole); blobs that follow each other in a pack
        share a span up to 8 MiB, reading over at most 1 MiB of other boxes between
        them.  The rest (chunks shared with other blobs, larger blobs, unindexed work)
        are ``singles``, read one by one with read-ahead.
        """
        self._ensure_index()
        placed: list[tuple[str, int, int, str, list[Entry]]] = []
        singles: list[str] = []
        for digest, chunk_ids in blobs:
            entries: list[Entry] = []
            pack: str | None = None
            for cid in chunk_ids:
                loc = self._locate(cid)
                if (loc is None or loc[0] is None or loc[0] in self._sealed
                        or (pack is not None and loc[0] != pack)
                        or (entries and loc[1][1] != entries[-1][1] + entries[-1][2])):
                    break
                pack = loc[0]
                entries.append(loc[1])
            else:
                if pack is not None:
                    start, end = entries[0][1], entries[-1][1] + entries[-1][2]
                    if end - start <= _READ_GROUP:
                        placed.append((pack, start, end, digest, entries))
                        continue
            singles.append(digest)
        placed.sort()
        spans: list[Span] = []
        for pack, start, end, digest, entries in placed:
            last = spans[-1] if spans else None
            if (last is not None and last.pack == pack and start >= last.end
                    and start - last.end <= _SPAN_GAP and end - last.start <= _READ_GROUP):
                last.end = end
                last.blobs.append((digest, entries))
            else:
                spans.append(Span(pack, start, end, [(digest, entries)]))
        return spans, singles

    def read_range(self, pack_id: str, start: int, length: int) -> bytes | memoryview:
        """Bytes of a stored pack (:class:`ObjectMissing` when it is gone)."""
        return self.storage.get_range(pack_name(pack_id), start, length)

    def open_box(self, cid: str, box: bytes | memoryview, entry: Entry) -> bytes:
        """The plaintext of one box (:class:`ChunkUnreadable` when it does not open)."""
        return self._open_box(cid, box, entry)

    # ------------------------------------------------------------ chunk cache
    def _cache_path(self, cid: str) -> Path | None:
        return self.cache_dir / "chunks" / cid[:2] / cid if self.cache_dir else None

    def _cached_box(self, cid: str) -> bytes | None:
        path = self._cache_path(cid)
        if path is None:
            return None
        try:
            with open(path, "rb") as fh:
                data = fh.read()
                os.utime(fh.fileno())   # least recently used goes first when trimming
        except OSError:
            return None
        return data

    def _cache_box(self, cid: str, box: bytes | memoryview) -> None:
        path = self._cache_path(cid)
        if path is None or _cache_limit() <= 0:
            return
        # Written in place, not renamed: a box cut short by a crash fails to
        # authenticate, and a failed cached box is refetched.
        with contextlib.suppress(OSError):
            if path.parent not in self._cache_dirs:
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                self._cache_dirs.add(path.parent)
            with open(path, "xb") as fh:
                fh.write(box)
            self._cache_bytes += len(box)

    def _trim_cache(self) -> None:
        """Remove the least recently used cached boxes beyond the size limit."""
        if self.cache_dir is None or self._cache_bytes == 0:
            return
        root = self.cache_dir / "chunks"
        files: list[tuple[float, int, Path]] = []
        total = 0
        for dirpath, _dirs, names in os.walk(root):
            for n in names:
                p = Path(dirpath) / n
                with contextlib.suppress(OSError):
                    st = p.stat()
                    files.append((st.st_mtime, st.st_size, p))
                    total += st.st_size
        files.sort()
        for _mtime, size, p in files:
            if total <= _cache_limit():
                break
            with contextlib.suppress(OSError):
                p.unlink()
                total -= size
        self._cache_bytes = 0
