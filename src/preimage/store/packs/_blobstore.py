"""The blob API the connectors use, on a pack repository.

Blobs keep the names the rest of preimage gives them — the SHA-256 of their
plaintext — but that name only ever appears inside encrypted index files.
A blob is cut by FastCDC into chunks (one chunk when it is small); chunks
already stored are not stored again, so a file changed in a few places costs
the few chunks around the changes.  Reads stream chunk by chunk and are
verified twice: every box authenticates, and the whole blob hashes to its name.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import secrets
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from typing import Protocol

from preimage.interface.blobs import BlobProblem, BlobStore, Leftover
from preimage.interface.errors import BlobCorruptError, BlobMissingError
from preimage.store.packs._repository import (
    ChunkUnreadable,
    PackRepository,
    Span,
    WriterLeaseLapsed,
)
from preimage.store.packs._spool import Spool
from preimage.store.packs._storage import ObjectMissing

DAMAGED = "damaged"   # the generation under which ``set_aside`` hides a blob
_VERIFY_WORKERS = 4   # blobs or spans verified at once by ``verify_many``
# A blob this large is not fetched ahead into the spool by ``will_read``: its read fetches
# its chunks ahead itself (``read_chunks``) while the caller writes them, so its bytes are
# written once, where the spool would write them and then copy them.
_STREAMED = 8 << 20


class Coordinator(Protocol):
    """What a pack blob store shared by many processes needs from its catalog:
    the register of hidden blobs (two-phase delete) and leases that end when
    their process dies."""

    def hide_blob(self, generation: str, digest: str) -> None: ...

    def bring_back(self, digest: str) -> bool:
        """Atomically un-hide a blob still only hidden (not claimed by a purge)."""
        ...

    def unhide_blob(self, generation: str, digest: str) -> None: ...

    def hidden_blobs(self) -> dict[str, list[str]]: ...

    def claim_hidden(self, generation: str, digests: Iterable[str]) -> set[str]:
        """Atomically mark hidden blobs as being purged; return those marked."""
        ...

    def drop_claimed(self, generation: str) -> None: ...

    def lease(self, backup_id: str) -> AbstractContextManager[None]: ...

    def lease_held(self, backup_id: str) -> bool: ...

    def lease_intact(self, name: str) -> bool:
        """Whether this process has held lease ``name`` without a break since taking it."""
        ...


class MemoryCoordinator:
    """A coordinator for one process alone (tests, copying into a fresh store)."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[str, str]] = {}   # digest -> (generation, state)

    def hide_blob(self, generation: str, digest: str) -> None:
        self._rows.setdefault(digest, (generation, "hidden"))

    def bring_back(self, digest: str) -> bool:
        row = self._rows.get(digest)
        if row and row[1] == "hidden" and row[0] != DAMAGED:
            del self._rows[digest]
            return True
        return False

    def unhide_blob(self, generation: str, digest: str) -> None:
        if self._rows.get(digest, ("", ""))[0] == generation:
            del self._rows[digest]

    def hidden_blobs(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for d, (g, _state) in self._rows.items():
            out.setdefault(g, []).append(d)
        return out

    def claim_hidden(self, generation: str, digests: Iterable[str]) -> set[str]:
        got = set()
        for d in digests:
            if self._rows.get(d) == (generation, "hidden"):
                self._rows[d] = (generation, "purging")
                got.add(d)
        return got

    def drop_claimed(self, generation: str) -> None:
        for d in [d for d, r in self._rows.items() if r == (generation, "purging")]:
            del self._rows[d]

    @contextlib.contextmanager
    def lease(self, backup_id: str) -> Iterator[None]:
        yield

    def lease_held(self, backup_id: str) -> bool:
        return False

    def lease_intact(self, name: str) -> bool:
        return True


class _ChainReader(io.RawIOBase):
    """A file object over an iterable of byte strings (for streaming chunking)."""

    def __init__(self, parts: Iterable[bytes]) -> None:
        self._parts = iter(parts)
        self._buf = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, b: memoryview) -> int:  # type: ignore[override]
        while not self._buf:
            nxt = next(self._parts, None)
            if nxt is None:
                return 0
            self._buf = memoryview(nxt)
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


class PackBlobStore(BlobStore):
    """Content-addressed blobs in a :class:`PackRepository`.

    Deleting is two-phase, as :mod:`preimage.store.backend` asks, with the hidden
    register kept by the ``coordinator`` (the shared catalog) so every machine
    sees it.  A capture loads the register when it starts
    (:meth:`begin_capture`): a hidden blob is "absent" to it, and so is every
    chunk only hidden blobs use.  Asked for a hidden blob, it first tries to
    bring it back (an atomic step in the catalog); if a purge got there first,
    it writes the blob anew into new packs, which that purge never touches.
    """

    def __init__(self, repo: PackRepository, coordinator: Coordinator | None = None) -> None:
        super().__init__()
        self.repo = repo
        self.coordinator: Coordinator = coordinator or MemoryCoordinator()
        self._chunker: object | None = None
        self._hidden: set[str] = set()
        self._hidden_loaded = False
        self._leases = ExitStack()
        self._lock = threading.Lock()
        # Blobs this process verified whole; the spool keeps the bytes of those that fit.
        self._verified: set[str] = set()
        self.spool = Spool(repo.cache_dir / "spool") if repo.cache_dir else Spool(Path(), 0)
        # blobs a reader said it will read (``will_read``), fetched in the background
        self._ahead: ThreadPoolExecutor | None = None
        self._coming: dict[str, Future[None]] = {}
        repo.before_first_pack = self._take_writer_lease
        repo.lease_intact = lambda: self.coordinator.lease_intact(f"writer-{repo.writer}")

    def _take_writer_lease(self) -> None:
        self._leases.enter_context(self.coordinator.lease(f"writer-{self.repo.writer}"))

    def _new_writer(self) -> None:
        """Give up a writer lease that lapsed; the next pack is written as a new writer."""
        self._leases.close()
        self.repo.writer = secrets.token_hex(8)
        self.repo.before_first_pack = self._take_writer_lease

    def close(self) -> None:
        """Finish uploads, release the writer lease, trim the cache, drop the spool."""
        if self._ahead is not None:
            self._ahead.shutdown(wait=True, cancel_futures=True)
            self._ahead = None
            self._coming.clear()
        self.repo.close()
        self._leases.close()
        self.spool.close()
        self._verified.clear()

    # ------------------------------------------------------------ hidden register
    def begin_capture(self) -> None:
        """See what other machines wrote and which blobs a prune has hidden."""
        self.repo.refresh()
        self._load_hidden()

    def _load_hidden(self) -> None:
        hidden = {d for ds in self.coordinator.hidden_blobs().values() for d in ds}
        with self._lock:
            self._hidden = hidden
            self._hidden_loaded = True
            self._recondemn()

    def _recondemn(self) -> None:
        """Chunks only hidden blobs use are absent to this capture."""
        if not self._hidden:
            self.repo.condemned = frozenset()
            return
        blobs = self.repo.all_blobs()
        hidden_chunks: set[str] = set()
        live_chunks: set[str] = set()
        for digest, (_size, cids) in blobs.items():
            (hidden_chunks if digest in self._hidden else live_chunks).update(cids)
        self.repo.condemned = frozenset(hidden_chunks - live_chunks)

    def _usable(self, digest: str) -> bool:
        if not self._hidden_loaded:
            self._load_hidden()
        if digest in self._hidden:
            if not self.coordinator.bring_back(digest):
                return False     # a purge has it: write it anew
            with self._lock:
                self._hidden.discard(digest)
                self._recondemn()
        return self.repo.blob(digest) is not None

    def _cut(self) -> object:
        if self._chunker is None:
            from pyfastcdc import FastCDC

            cfg = self.repo.config
            self._chunker = FastCDC(cfg.avg_chunk, min_size=cfg.min_chunk,
                                    max_size=cfg.max_chunk, seed=self.repo.keys.chunker_seed)
        return self._chunker

    # ------------------------------------------------------------ writing
    def exists(self, digest: str) -> bool:
        """Whether the blob is stored whole (and no prune is about to take a chunk of it)."""
        return self._usable(digest)

    def put_bytes(self, data: bytes) -> str:
        """Store ``data``; return its digest."""
        return self.put_hashed(data, hashlib.sha256(data).hexdigest())

    def put_hashed(self, data: bytes, digest: str) -> str:
        """:meth:`put_bytes` with the sha256 the caller has just computed."""
        self.bytes_seen += len(data)
        if self.exists(digest):
            return digest
        if len(data) <= self.repo.config.min_chunk:
            pieces: Iterable[bytes | memoryview] = [data]
        else:
            pieces = (c.data for c in self._cut().cut_buf(data))  # type: ignore[attr-defined]
        self._store(digest, len(data), pieces)
        return digest

    def _store(self, digest: str, size: int, pieces: Iterable[bytes | memoryview]) -> None:
        ids = []
        for piece in pieces:
            cid, new = self.repo.add_chunk(piece)
            ids.append(cid)
            self.bytes_written += new
        self.repo.add_blob(digest, size, ids)
        self.blobs_written += 1

    def put_chunks(self, chunks: Iterable[bytes]) -> str:
        """Store the concatenation of ``chunks`` without holding it in memory."""
        hasher = hashlib.sha256()
        ids: list[str] = []
        size = 0
        written = 0
        for c in self._cut().cut_stream(_ChainReader(chunks)):  # type: ignore[attr-defined]
            hasher.update(c.data)
            size += c.length
            cid, new = self.repo.add_chunk(c.data)
            ids.append(cid)
            written += new
        self.bytes_seen += size
        self.bytes_written += written
        digest = hasher.hexdigest()
        if not self._usable(digest):
            self.repo.add_blob(digest, size, ids)
            self.blobs_written += 1
        return digest

    def flush(self) -> None:
        """Make everything stored so far durable and indexed (before a backup is complete)."""
        try:
            self.repo.flush()
        except WriterLeaseLapsed:
            self._new_writer()
            raise

    # ------------------------------------------------------------ reading
    def chunks(
        self, digest: str, *, backup_id: str | None = None, path: str | None = None
    ) -> Iterator[bytes]:
        """Yield the blob's bytes; raise at the end if they do not hash to ``digest``.

        Callers that write the chunks somewhere must treat an exception as
        "discard what you wrote".  A blob this process verified and spooled is
        read from the spool: the bytes that hashed to ``digest`` as they were written
        there (a file cut short since raises :class:`BlobCorruptError`).
        """
        coming = self._coming.pop(digest, None)
        if coming is not None:
            # fetched ahead, or not: then it is fetched here, and a failure raises here
            with contextlib.suppress(Exception):
                coming.result()
        spooled = self.spool.read(digest)
        if spooled is not None:
            return spooled
        return self._fetched(digest, backup_id, path)

    def will_read(self, digests: list[str]) -> None:
        """Fetch and verify ``digests`` in the background into the spool, as
        ``verify_many`` does (neighbouring small blobs in one ranged GET, four ranges or
        large blobs at a time), while the caller writes what it read before: a
        restore's fetching and writing overlap.  Each read waits only for the range or
        blob that holds its own; one that failed there is fetched again by its read,
        which raises."""
        todo = [d for d in dict.fromkeys(digests)
                if d not in self._verified and d not in self._coming]
        located = []
        for digest in todo:
            found = self.repo.readable_blob(digest)
            if found is not None and found[0] < _STREAMED:
                located.append((digest, found[1]))
        if not located:
            return
        if self._ahead is None:
            self._ahead = ThreadPoolExecutor(max_workers=_VERIFY_WORKERS,
                                             thread_name_prefix="preimage-ahead")
        spans, singles = self.repo.spans(located)
        for span in spans:
            future = self._ahead.submit(self._verify_task, (span, None), None, None)
            for digest, _entries in span.blobs:
                self._coming[digest] = future
        for digest in singles:
            self._coming[digest] = self._ahead.submit(self._verify_task, (None, digest),
                                                      None, None)

    def _checked(self, digest: str, pieces: Iterable[bytes], backup_id: str | None,
                 path: str | None) -> Iterator[bytes]:
        hasher = hashlib.sha256()
        for piece in pieces:
            hasher.update(piece)
            yield piece
        if hasher.hexdigest() != digest:
            raise BlobCorruptError(digest, backup_id=backup_id, path=path)

    def _fetched(self, digest: str, backup_id: str | None, path: str | None) -> Iterator[bytes]:
        found = self._find(digest, backup_id, path)
        try:
            yield from self._checked(digest, self.repo.read_chunks(found[1]), backup_id, path)
        except ChunkUnreadable as exc:
            cls = BlobMissingError if exc.missing else BlobCorruptError
            raise cls(digest, backup_id=backup_id, path=path) from exc

    def _find(self, digest: str, backup_id: str | None,
              path: str | None) -> tuple[int, tuple[str, ...]]:
        found = self.repo.readable_blob(digest)
        if found is None:
            self.repo.refresh()  # another machine may have written it since we looked
            found = self.repo.readable_blob(digest)
        if found is None:
            raise BlobMissingError(digest, backup_id=backup_id, path=path)
        return found

    def get_bytes(
        self, digest: str, *, backup_id: str | None = None, path: str | None = None
    ) -> bytes:
        """The whole blob, verified."""
        return b"".join(self.chunks(digest, backup_id=backup_id, path=path))

    def verify(self, digest: str, *, backup_id: str | None = None, path: str | None = None) -> None:
        """Raise :class:`BlobMissingError` / :class:`BlobCorruptError` unless the blob is sound.

        A blob verified once by this process is not fetched again: its boxes are
        immutable and every later read is verified as it streams.  The bytes go to the
        spool on the way, so the read that follows a verification (a restore's writes,
        an export) does not fetch them a second time.
        """
        self.verify_many([digest], backup_id=backup_id, path=path)

    def verify_many(self, digests: Iterable[str], *, backup_id: str | None = None,
                    path: str | None = None) -> None:
        """:meth:`verify` each blob, several at once, the small ones grouped into one
        ranged GET per run of neighbouring boxes, in pack order."""
        todo = [d for d in dict.fromkeys(digests) if d not in self._verified]
        if not todo:
            return
        located = [(d, self._find(d, backup_id, path)[1]) for d in todo]
        spans, singles = self.repo.spans(located)
        tasks: list[tuple[Span | None, str | None]] = [(sp, None) for sp in spans]
        tasks += [(None, d) for d in singles]
        if len(tasks) == 1:
            self._verify_task(tasks[0], backup_id, path)
            return
        with ThreadPoolExecutor(max_workers=_VERIFY_WORKERS,
                                thread_name_prefix="preimage-verify") as pool:
            futures: list[Future[None]] = [
                pool.submit(self._verify_task, t, backup_id, path) for t in tasks]
            done, _pending = wait(futures, return_when=FIRST_EXCEPTION)
            failed = next((f for f in futures if f in done and f.exception()), None)
            if failed is not None:
                for f in futures:
                    f.cancel()
                failed.result()

    def _verify_task(self, task: tuple[Span | None, str | None], backup_id: str | None,
                     path: str | None) -> None:
        span, single = task
        if single is not None:
            self._verify_one(single, self._fetched(single, backup_id, path))
            return
        assert span is not None
        try:
            body = memoryview(self.repo.read_range(span.pack, span.start, span.end - span.start))
        except ObjectMissing:   # repacked since the index was read: one by one, which reloads
            for digest, _entries in span.blobs:
                self._verify_one(digest, self._fetched(digest, backup_id, path))
            return
        for digest, entries in span.blobs:
            pieces = (self.repo.open_box(e[0], body[e[1] - span.start : e[1] - span.start + e[2]], e)
                      for e in entries)
            try:
                self._verify_one(digest, self._checked(digest, pieces, backup_id, path))
            except ChunkUnreadable as exc:
                cls = BlobMissingError if exc.missing else BlobCorruptError
                raise cls(digest, backup_id=backup_id, path=path) from exc

    def _verify_one(self, digest: str, pieces: Iterator[bytes]) -> None:
        """Drain ``pieces`` (which raise unless they hash to ``digest``) into the spool."""
        found = self.repo.readable_blob(digest)
        writer = self.spool.writer(digest, found[0]) if found is not None else None
        try:
            for piece in pieces:
                if writer is not None:
                    writer.write(piece)
        except BaseException:
            if writer is not None:
                writer.abort()
            raise
        if writer is not None:
            writer.commit()
        self._verified.add(digest)

    def stored_size(self, digest: str) -> int:
        """Bytes the blob's chunks take in packs (shared chunks count in full)."""
        return self.repo.stored_size(digest)

    def raw_size(self, digest: str) -> int | None:
        """The blob's size in bytes, from the index (None when unknown)."""
        found = self.repo.readable_blob(digest)
        return None if found is None else found[0]

    # ------------------------------------------------------------ lifecycle
    def digests(self) -> Iterator[str]:
        """Every indexed blob that is not hidden."""
        hidden = {d for ds in self.coordinator.hidden_blobs().values() for d in ds}
        self.repo.refresh()
        return iter(sorted(set(self.repo.all_blobs()) - hidden))

    def inspect(self, digest: str, *, read_data: bool) -> BlobProblem | None:
        """Missing when a chunk is unindexed or its pack is gone; with ``read_data``,
        every box must authenticate and the whole must hash to ``digest``."""
        found = self.repo.readable_blob(digest)
        if found is None:
            return BlobProblem(digest, "missing", "not in any index file")
        if not read_data:
            packs = self._stored_packs()
            for cid in found[1]:
                loc = self.repo.all_chunks().get(cid)
                if loc is None:
                    return BlobProblem(digest, "missing", f"chunk {cid[:12]} is in no index")
                if loc[0] not in packs:
                    return BlobProblem(digest, "missing", f"pack {loc[0][:12]} is gone")
            return None
        try:
            for _ in self._fetched(digest, None, None):   # not spooled: nothing reads it next
                pass
        except BlobMissingError as exc:
            return BlobProblem(digest, "missing", str(exc))
        except BlobCorruptError as exc:
            return BlobProblem(digest, "corrupt", str(exc))
        return None

    def _stored_packs(self) -> dict[str, int]:
        return self.repo.stored_packs()

    def hide(self, digest: str, generation: str) -> bool:
        """Phase one: register the blob as hidden (it stays readable)."""
        if self.repo.readable_blob(digest) is None:
            return False
        self.coordinator.hide_blob(generation, digest)
        return True

    def unhide(self, digest: str, generation: str) -> None:
        """Take a blob off the hidden register (a backup references it after all)."""
        self.coordinator.unhide_blob(generation, digest)

    def hidden(self) -> dict[str, list[str]]:
        """Hidden blobs by generation (not the ones set aside as damaged: those stay)."""
        return {g: ds for g, ds in self.coordinator.hidden_blobs().items() if g != DAMAGED}

    def purge_hidden(self, generation: str, digests: Iterable[str]) -> int:
        """Phase two: drop these hidden blobs; repack the packs they shared.  Bytes freed."""
        from preimage.store.packs._prune import purge

        return purge(self.repo, self.coordinator, generation, digests)

    def set_aside(self, digest: str) -> None:
        """A damaged blob: hide it for good, so the next capture of its bytes rewrites it."""
        self.coordinator.hide_blob(DAMAGED, digest)

    def leftovers(self) -> list[Leftover]:
        """Packs no index names whose writer is gone (killed mid-capture)."""
        from preimage.store.packs._prune import orphan_packs

        return orphan_packs(self.repo, self.coordinator)

    def remove_leftovers(self, names: Iterable[str]) -> int:
        """Delete orphan packs listed earlier, unless they are indexed or held by now."""
        from preimage.store.packs._prune import remove_orphans

        return remove_orphans(self.repo, self.coordinator, list(names))
