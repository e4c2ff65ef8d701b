"""The local blob store: sha256-named, deduplicated, zstd-compressed files.

A blob's name is the sha256 of its *uncompressed* bytes; it lives at
``blobs/<2 hex>/<64 hex>.zst``.  Writes go to a locked temp file in
``blobs/tmp`` and are renamed into place, so a reader never sees half a blob,
two processes writing the same blob both succeed, and a temp file nobody holds
a lock on is the leftover of a killed writer.  Every read is verified: the
decompressed bytes must hash to the name, else :class:`BlobCorruptError`.

**Trusting an existing blob.**  Dedup means a capture that finds its bytes
already stored does not write them — so a damaged blob must never be taken
for a sound one, or every later capture of the same bytes would be complete
and unrestorable.  :meth:`LocalBlobStore.exists` (and ``put_*`` when the file
is there) trusts a blob only when a full verification is on record for the
file exactly as it is now: same size, inode, mtime and ctime, with the
verification made more than :data:`RACY_NS` after the file's ctime (a write in
the same clock tick as the verification would leave every stat field equal —
git calls such entries "racily clean").  Otherwise the blob is read and hashed
once; a damaged blob is then rewritten from the new bytes (``put_*``) or
reported absent (``exists``, so the caller reads its source again).

**Cloned blobs.**  On a filesystem that shares extents between files (XFS,
btrfs: ``FICLONE``), a large file on the same filesystem as the store is
cloned into ``blobs/<2 hex>/<64 hex>.raw`` instead of being compressed and
written: the copy costs its extents, not its bytes, and it is a point-in-time
image of the file, hashed after the clone (so a write racing the capture
cannot tear it).  A ``.raw`` blob holds the bytes as they are; it is read,
hidden, verified and pruned like a ``.zst`` one, and a restore on the same
filesystem clones it back.  Elsewhere nothing changes.

**Packed blobs.**  A blob whose compressed frame is under a mebibyte and that is
written whole (``put_bytes``) goes into a pack file with many others
(:mod:`preimage.store.local_packs`); a store keeps reading the loose files written
before packs existed, and streams and clones stay loose.  A blob is looked up in the
pack index first, then as a loose file.

**Hidden blobs** (``blobs/hidden/<generation>/``) are phase one of ``prune``:
whoever asks for one — a capture's ``exists`` or ``put_*``, a restore's read —
brings it back with an atomic rename, which ``prune`` cannot race (its delete
is an ``unlink`` of the hidden path); :meth:`LocalBlobStore.purge_hidden`
deletes the rest.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import heapq
import itertools
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Protocol

import zstandard

from preimage.interface import crash as _crash
from preimage.interface.blobs import (
    CHUNK,
    FICLONE,
    NO_CLONE,
    BlobProblem,
    BlobStore,
    DigestCache,
    Leftover,
)
from preimage.interface.errors import BlobCorruptError, BlobMissingError, StoreUnavailableError
from preimage.store.local_packs import PACKED_MAX, LocalPacks, Location, hold_if_unheld

__all__ = ["CHUNK", "BlobStore", "DigestCache", "LocalBlobStore"]

# Streams (rows of a table, large files) are compressed while they are read, so their
# compression is on the capture's clock: level 1 takes a third of level 3's CPU (measured
# on 118 MB of MariaDB rows: 0.37 s against 1.02 s, and 26 MB against 32 MB; on Python
# sources and shared objects 1.4-2.3x less CPU for 11-13% more bytes).
_STREAM_LEVEL = 1
# Blobs written whole (small files, documents: packed) are on the capture's clock too:
# on /usr/include (7,956 files, 110 MiB) level 1 took 0.30 s of CPU against level 3's
# 0.38 s, for 4% more bytes.
_PACKED_LEVEL = 1
_SUFFIXES = (".zst", ".raw")
RACY_NS = 2_000_000_000   # a verification this close to the file's ctime proves nothing
_HEX = frozenset("0123456789abcdef")

BlobKey = tuple[int, int, int, int]   # size, inode, mtime_ns, ctime_ns


class SoundnessCache(Protocol):
    """Where the local store keeps the stat of blobs it has fully verified."""

    def blob_keys(self) -> dict[str, BlobKey]: ...

    def set_blob_keys(self, rows: list[tuple[str, BlobKey | None]]) -> None: ...

    def raw_size(self, digest: str) -> int | None: ...

    def set_raw_sizes(self, rows: list[tuple[str, int]]) -> None: ...


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


def _key(st: os.stat_result) -> BlobKey:
    return (st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def is_digest(name: str) -> bool:
    """Whether ``name`` looks like a blob name (64 lower-case hex digits)."""
    return len(name) == 64 and set(name) <= _HEX


class LocalBlobStore(BlobStore):
    """Blobs under ``root``.  ``fallback`` is read when a blob is not here
    (a scratch store layered over the real one for scoring live state)."""

    def __init__(self, root: Path, fallback: BlobStore | None = None) -> None:
        super().__init__()
        self.root = root
        self.fallback = fallback
        self.soundness: SoundnessCache | None = None
        self._dirs: set[str] = set()
        # Fan-out folders (``blobs/<2 hex>/``) not there when a write first looked, and
        # whether ``hidden/`` was: a blob about to be written is not looked for as a loose
        # file where none can be (see :meth:`_needs_write`).  ``None``: not looked yet.
        self._no_fans: set[str] | None = None
        self._no_hidden: bool | None = None
        # blobs this process read whole and found sound, by file stat: a cache
        # for one process only, so the racy-ctime rule does not apply to it
        self._verified: dict[str, BlobKey] = {}
        self._recorded: dict[str, BlobKey] | None = None   # the soundness table, read once
        self._pending: list[tuple[str, BlobKey | None]] = []
        self._root_s = str(root)
        self._clone_ok: bool | None = None   # None: not tried yet
        self.packs = LocalPacks(root)
        self._compressors = threading.local()
        # Optional digest cache by inode and stat (the catalog), so that an
        # unchanged file is not read again on the next capture.
        self.digest_cache = fallback.digest_cache if fallback else None
        try:
            _private_dir(root / "tmp")
        except OSError as exc:
            raise StoreUnavailableError(str(root), exc.strerror or str(exc)) from exc

    # ------------------------------------------------------------ paths
    def path(self, digest: str) -> Path:
        """The blob's own file (whether or not it exists).  A packed blob is first given
        a file of its own, its frame as it is, for whoever works on one blob's file."""
        loc = self.packs.locate(digest)
        if loc is not None and loc.hidden is None:
            final = f"{self._root_s}/{digest[:2]}/{digest}.zst"
            try:
                self.packs.unpack(digest, loc, final)
            except OSError as exc:
                raise StoreUnavailableError(str(self.root), exc.strerror or str(exc)) from exc
        return Path(self._file(digest))

    def _file(self, digest: str) -> str:
        """The blob's file: the ``.zst`` one unless only a cloned ``.raw`` one is there."""
        zst = f"{self._root_s}/{digest[:2]}/{digest}.zst"
        if not os.path.exists(zst) and os.path.exists(raw := zst[:-4] + ".raw"):
            return raw
        return zst

    def _hidden_paths(self, digest: str) -> list[Path]:
        if not os.path.isdir(f"{self._root_s}/hidden"):
            return []
        hidden = self.root / "hidden"
        return [p for gen in sorted(hidden.iterdir()) for sfx in _SUFFIXES
                if (p := gen / f"{digest}{sfx}").exists()]

    def _rescue(self, digest: str) -> bool:
        """Bring a hidden blob back into place; False when there is none."""
        for hidden in self._hidden_paths(digest):
            final = self.root / digest[:2] / hidden.name
            self._fan(digest)
            try:
                os.rename(hidden, final)
            except FileNotFoundError:
                continue   # purged a moment ago
            return True
        return False

    # ------------------------------------------------------------ soundness
    def _sound(self, digest: str, final: Path | str) -> bool | None:
        """True when the file at ``final`` holds ``digest`` intact, False when it is
        damaged, None when there is no file."""
        try:
            st = os.stat(final)
        except FileNotFoundError:
            return None
        key = _key(st)
        if self._verified.get(digest) == key:
            return True
        if self.soundness is not None:
            if self._recorded is None:
                self._recorded = self.soundness.blob_keys()
            if self._recorded.get(digest) == key:
                return True
        try:
            self._read_verified(digest, Path(final))
        except (BlobCorruptError, BlobMissingError):
            return False
        self._remember(digest, st)
        return True

    def _remember(self, digest: str, st: os.stat_result) -> None:
        """A full verification of the file as ``st`` describes it just succeeded."""
        key = _key(st)
        self._verified[digest] = key
        if self.soundness is not None and time.time_ns() - st.st_ctime_ns > RACY_NS:
            self._pending.append((digest, key))
            if self._recorded is not None:
                self._recorded[digest] = key
            if len(self._pending) >= 500:
                self.flush()

    def flush(self) -> None:
        """Seal the open pack (its blobs indexed), write the verification records."""
        self.packs.seal()
        if self._pending and self.soundness is not None:
            self.soundness.set_blob_keys(self._pending)
        self._pending = []

    def exists(self, digest: str) -> bool:
        """Whether the blob is present and sound (here or in the fallback).

        A hidden blob is brought back; a damaged one answers False, so the
        caller reads its source again and ``put_*`` rewrites the blob.
        """
        if not self._needs_write(digest):
            return True
        return self.fallback.exists(digest) if self.fallback else False

    def will_check(self, digests: list[str]) -> None:
        """The packed ones of ``digests`` looked up in the index at once (500 a query),
        each then answered from that by the :meth:`exists` that asks for it."""
        self.packs.expect(digests)

    def present(self, digest: str) -> bool:
        """Whether the blob's file is there (here or in the fallback), unread; a hidden
        blob is brought back."""
        loc = self.packs.locate(digest)
        if loc is not None and (loc.pack is None
                                or os.path.exists(self.packs.pack_path(loc.pack))):
            self.packs.rescue(digest, loc)
            return True
        if self._source(digest) is not None:
            return True
        return self.fallback.present(digest) if self.fallback else False

    def missing(self, digests: Iterable[str]) -> str | None:
        """The first of ``digests`` that is not :meth:`present`: the packed ones looked
        up 500 at a time, each pack's file checked once per batch."""
        todo = iter(digests)
        while batch := list(itertools.islice(todo, 500)):   # never the whole list at once
            found = self.packs.locate_many(batch)
            self.packs.found_ahead(found)   # a restore reads them next
            there: dict[str, bool] = {}
            for digest in batch:
                loc = found.get(digest)
                if loc is not None and loc.pack is not None and loc.pack not in there:
                    there[loc.pack] = os.path.exists(self.packs.pack_path(loc.pack))
                if loc is not None and (loc.pack is None or there[loc.pack]):
                    self.packs.rescue(digest, loc)
                elif not self.present(digest):
                    return digest
        return None

    def _needs_write(self, digest: str, *, writing: bool = False) -> bool:
        """Whether no sound copy of the blob is in place (a hidden one is brought back
        first).  ``writing``: a compressed copy is about to be written, so a damaged
        clone, which would stand beside it, is dropped."""
        loc = self.packs.locate(digest, writing=writing)
        if loc is not None:
            self.packs.rescue(digest, loc)
            if self.packs.sound(digest, loc):
                return False
        if writing and self._surely_not_loose(digest):
            return True
        zst = f"{self._root_s}/{digest[:2]}/{digest}.zst"
        sound = self._sound(digest, zst)
        if sound is None:
            raw = zst[:-4] + ".raw"
            sound = self._sound(digest, raw)
            if sound is None and self._rescue(digest):
                sound = self._sound(digest, self._file(digest))
            elif sound is False and writing:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(raw)
        return not sound

    def _fan(self, digest: str) -> None:
        """Make the blob's fan-out folder (it is no longer one known absent)."""
        _private_dir(self.root / digest[:2])
        if self._no_fans is not None:
            self._no_fans.discard(digest[:2])

    def _surely_not_loose(self, digest: str) -> bool:
        """Whether no loose or hidden copy of ``digest`` can be here, by what was seen when
        this store first looked (a store written since packs keeps a few large blobs loose,
        in a few fan-out folders): two ``stat``s and an ``isdir`` saved per new small blob.
        Only a write asks, because a copy that appeared since is no loss to it — another
        copy is written, and the pack index takes the newer one — where a read or an
        ``exists`` must find every copy."""
        if self._no_fans is None:
            try:
                there = {e.name for e in os.scandir(self._root_s) if len(e.name) == 2}
            except OSError:
                there = {f"{i:02x}" for i in range(256)}   # not known: look every time
            self._no_fans = {f"{i:02x}" for i in range(256)} - there
            self._no_hidden = not os.path.isdir(f"{self._root_s}/hidden")
        return bool(self._no_hidden) and digest[:2] in self._no_fans

    # ------------------------------------------------------------ writing
    def put_bytes(self, data: bytes) -> str:
        """Store ``data``; return its digest (small blobs skip the streaming path)."""
        return self.put_hashed(data, hashlib.sha256(data).hexdigest())

    def put_hashed(self, data: bytes, digest: str) -> str:
        """:meth:`put_bytes` for a caller that has just hashed ``data`` itself."""
        self.bytes_seen += len(data)
        try:
            if not self._needs_write(digest, writing=True):
                return digest
            packed = self._compressor().compress(data)
            if len(packed) <= PACKED_MAX:
                written = self.packs.add(digest, packed, len(data))
                self.bytes_written += written
                self.blobs_written += 1 if written else 0
                return digest
            final = f"{self._root_s}/{digest[:2]}/{digest}.zst"
            if digest[:2] not in self._dirs:
                self._fan(digest)
                self._dirs.add(digest[:2])
            tmp = f"{self._root_s}/tmp/blob-{os.getpid()}-{secrets.token_hex(8)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.write(fd, packed)
                _crash.point("blob")
                os.replace(tmp, final)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            finally:
                os.close(fd)
        except OSError as exc:
            raise StoreUnavailableError(str(self.root), exc.strerror or str(exc)) from exc
        self._forget_key(digest)
        self.bytes_written += len(packed)
        self.blobs_written += 1
        return digest

    def _compressor(self) -> zstandard.ZstdCompressor:
        """This thread's compressor (one per thread: an instance is not thread-safe)."""
        cctx: zstandard.ZstdCompressor | None = getattr(self._compressors, "cctx", None)
        if cctx is None:
            cctx = self._compressors.cctx = zstandard.ZstdCompressor(level=_PACKED_LEVEL)
        return cctx

    def put_chunks(self, chunks: Iterable[bytes]) -> str:
        """Store the concatenation of ``chunks`` without holding it in memory."""
        hasher = hashlib.sha256()
        tmp = self._tempfile()
        raw = 0
        try:
            with tmp:
                fcntl.flock(tmp.fileno(), fcntl.LOCK_EX)
                cctx = zstandard.ZstdCompressor(level=_STREAM_LEVEL)
                with cctx.stream_writer(tmp, closefd=False) as writer:
                    for chunk in chunks:
                        hasher.update(chunk)
                        raw += len(chunk)
                        writer.write(chunk)
                self.bytes_seen += raw
                digest = hasher.hexdigest()
                if not self._needs_write(digest, writing=True):
                    return digest
                final = self.root / digest[:2] / f"{digest}.zst"
                self._fan(digest)
                tmp.flush()
                size = os.fstat(tmp.fileno()).st_size
                _crash.point("blob")
                os.replace(tmp.name, final)
            self._forget_key(digest)
            if self.soundness is not None:
                self.soundness.set_raw_sizes([(digest, raw)])
            self.bytes_written += size
            self.blobs_written += 1
            return digest
        except OSError as exc:
            raise StoreUnavailableError(str(self.root), exc.strerror or str(exc)) from exc
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp.name)

    def put_clone(self, fd: int) -> tuple[str, int] | None:
        """Clone the open file ``fd`` into the store (see the module docstring); its
        digest and size, or None when this filesystem cannot (the caller reads it)."""
        if self._clone_ok is False:
            return None
        tmp = self.root / "tmp" / f"blob-{os.getpid()}-{secrets.token_hex(8)}"
        try:
            out = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StoreUnavailableError(str(self.root), exc.strerror or str(exc)) from exc
        try:
            fcntl.flock(out, fcntl.LOCK_EX)
            try:
                fcntl.ioctl(out, FICLONE, fd)
            except OSError as exc:
                if exc.errno in NO_CLONE:
                    self._clone_ok = False
                    return None
                raise
            self._clone_ok = True
            hasher = hashlib.sha256()
            size = 0
            while chunk := os.pread(out, CHUNK, size):
                hasher.update(chunk)
                size += len(chunk)
            digest = hasher.hexdigest()
            self.bytes_seen += size
            if not self._needs_write(digest):
                return digest, size
            final = f"{self._root_s}/{digest[:2]}/{digest}.raw"
            self._fan(digest)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(final[:-4] + ".zst")   # damaged (else it was sound and kept)
            os.fchmod(out, 0o400)
            _crash.point("blob")
            os.replace(tmp, final)
            self._forget_key(digest)
            if self.soundness is not None:
                self.soundness.set_raw_sizes([(digest, size)])
            # counted at its full size: the extents it shares are its own once the
            # source is rewritten
            self.bytes_written += size
            self.blobs_written += 1
            return digest, size
        except OSError as exc:
            raise StoreUnavailableError(str(self.root), exc.strerror or str(exc)) from exc
        finally:
            os.close(out)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def clone_source(self, digest: str) -> int | None:
        """An open descriptor of the blob's ``.raw`` file when it is there and this
        process verified it as it is now (a restore clones from it); else None."""
        path = self._file(digest)
        if not path.endswith(".raw"):
            return None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return None
        key = _key(os.fstat(fd))
        recorded = self._recorded.get(digest) if self._recorded is not None else None
        if key in (self._verified.get(digest), recorded):
            return fd
        os.close(fd)
        return None

    def _forget_key(self, digest: str) -> None:
        self._verified.pop(digest, None)
        if self._recorded is not None:
            self._recorded.pop(digest, None)
        if self.soundness is not None:
            self._pending.append((digest, None))

    def _tempfile(self) -> IO[bytes]:
        try:
            return tempfile.NamedTemporaryFile(
                dir=self.root / "tmp", prefix="blob-", delete=False
            )
        except OSError as exc:
            raise StoreUnavailableError(str(self.root), exc.strerror or str(exc)) from exc

    # ------------------------------------------------------------ reading
    def _source(self, digest: str) -> Path | None:
        """The blob's file; a hidden blob is brought back first (whoever reads a
        blob while a prune runs may be about to reference it)."""
        final = Path(self._file(digest))
        if final.exists() or self._rescue(digest):
            return final
        return None

    def _read_verified(
        self, digest: str, source: Path, *, backup_id: str | None = None, path: str | None = None
    ) -> None:
        for _ in self._stream(digest, source, backup_id=backup_id, path=path):
            pass

    def _stream(
        self, digest: str, source: Path, *, backup_id: str | None = None, path: str | None = None
    ) -> Iterator[bytes]:
        hasher = hashlib.sha256()
        try:
            with open(source, "rb") as fh:
                raw = str(source).endswith(".raw")
                reader = fh if raw else zstandard.ZstdDecompressor().stream_reader(fh)
                while chunk := reader.read(CHUNK):
                    hasher.update(chunk)
                    yield chunk
        except FileNotFoundError as exc:
            raise BlobMissingError(digest, backup_id=backup_id, path=path) from exc
        except (zstandard.ZstdError, OSError) as exc:
            raise BlobCorruptError(digest, backup_id=backup_id, path=path) from exc
        if hasher.hexdigest() != digest:
            raise BlobCorruptError(digest, backup_id=backup_id, path=path)

    def chunks(
        self, digest: str, *, backup_id: str | None = None, path: str | None = None
    ) -> Iterator[bytes]:
        """Yield the blob's bytes; raise at the end if they do not hash to ``digest``.

        Callers that write the chunks somewhere must treat an exception as
        "discard what you wrote".
        """
        data = self.packs.read(digest, backup_id=backup_id, path=path)
        if data is not None:
            yield data
            return
        source = self._source(digest)
        if source is None:
            if self.fallback is not None:
                yield from self.fallback.chunks(digest, backup_id=backup_id, path=path)
                return
            raise BlobMissingError(digest, backup_id=backup_id, path=path)
        yield from self._stream(digest, source, backup_id=backup_id, path=path)

    def verify(self, digest: str, *, backup_id: str | None = None, path: str | None = None) -> None:
        """Raise unless the blob is sound; a verification on record for the file as
        it is now (see the module docstring) counts without reading it again."""
        loc = self.packs.locate(digest)
        if loc is not None:
            self.packs.rescue(digest, loc)
            packed = self.packs.sound(digest, loc)
            if packed:
                return
            if packed is False:
                raise BlobCorruptError(digest, backup_id=backup_id, path=path)
        source = self._source(digest)
        if source is None:
            if self.fallback is not None:
                self.fallback.verify(digest, backup_id=backup_id, path=path)
                return
            raise BlobMissingError(digest, backup_id=backup_id, path=path)
        sound = self._sound(digest, source)
        if sound:
            return
        if sound is None:
            raise BlobMissingError(digest, backup_id=backup_id, path=path)
        raise BlobCorruptError(digest, backup_id=backup_id, path=path)

    def will_read(self, digests: list[str]) -> None:
        """Look the packed ones of ``digests`` up in the index at once (one query for a
        few hundred instead of one each); verify the cloned ones, so a restore may clone
        them back (:meth:`clone_source` offers only a verified one)."""
        packed = self.packs.expect(digests)
        for digest in digests:
            if digest not in packed and self._file(digest).endswith(".raw"):
                with contextlib.suppress(BlobCorruptError, BlobMissingError):
                    self.verify(digest)   # a damaged one is then read, and raises there

    def verify_many(self, digests: Iterable[str], *, backup_id: str | None = None,
                    path: str | None = None) -> None:
        """:meth:`verify` each blob: the packed ones looked up in the index 500 at a
        time, each pack's soundness judged once per batch (a restore verifies thousands
        of small blobs, mostly from a few packs).  ``digests`` are read 500 at a time,
        never held whole: a digest repeated in a later batch is looked up again."""
        todo = iter(digests)
        while batch := list(dict.fromkeys(itertools.islice(todo, 500))):
            found = self.packs.locate_many(batch)
            damaged: dict[str | None, frozenset[str] | None] = {}
            for digest in batch:
                loc = found.get(digest)
                if loc is not None:
                    if loc.pack not in damaged:
                        damaged[loc.pack] = self.packs.damaged_in(loc.pack)
                    bad = damaged[loc.pack]
                    if bad is not None:   # else the pack is gone: looked up again below
                        self.packs.rescue(digest, loc)
                        if digest in bad:
                            raise BlobCorruptError(digest, backup_id=backup_id, path=path)
                        continue
                self.verify(digest, backup_id=backup_id, path=path)

    def stored_size(self, digest: str) -> int:
        """Compressed size on disk (0 when only in the fallback or missing)."""
        loc = self.packs.locate(digest)
        if loc is not None:
            return loc.length
        try:
            return os.stat(self._file(digest)).st_size
        except FileNotFoundError:
            return 0

    def raw_size(self, digest: str) -> int | None:
        """Uncompressed size: from the record, the zstd frame header, or by reading."""
        loc = self.packs.locate(digest)
        if loc is not None:
            return loc.raw
        cache = self.soundness
        if cache is not None and (known := cache.raw_size(digest)) is not None:
            return known
        source = self._source(digest)
        if source is None:
            return None
        if source.suffix == ".raw":
            with contextlib.suppress(OSError):
                return source.stat().st_size
            return None
        try:
            with open(source, "rb") as fh:
                size = zstandard.frame_content_size(fh.read(18))
            if size < 0:
                size = sum(len(c) for c in self._stream(digest, source))
        except (OSError, zstandard.ZstdError, BlobCorruptError, BlobMissingError):
            return None
        if cache is not None:
            cache.set_raw_sizes([(digest, size)])
        return int(size)

    # ------------------------------------------------------------ lifecycle
    def digests(self) -> Iterator[str]:
        """Every blob in place, packed or in a file of its own (names checked; hidden
        ones not included), in order."""
        self.packs.adopt_unindexed()   # a pack no row names is listed, never lost
        last = ""
        for digest in heapq.merge(self._loose_digests(), self.packs.digests()):
            if digest != last:
                last = digest
                yield digest

    def _loose_digests(self) -> Iterator[str]:
        try:
            fans = sorted(os.scandir(self.root), key=lambda e: e.name)
        except FileNotFoundError:
            return
        for fan in fans:
            if len(fan.name) != 2 or not fan.is_dir(follow_symlinks=False):
                continue
            last = ""
            for entry in sorted(os.scandir(fan.path), key=lambda e: e.name):
                name = entry.name[:-4]
                if (entry.name[-4:] in _SUFFIXES and is_digest(name) and name[:2] == fan.name
                        and name != last):
                    last = name
                    yield name

    def adopt_unindexed(self) -> list[str]:
        """Index again the packs the index does not name (see
        :meth:`LocalPacks.adopt_unindexed`); the ones whose trailer cannot be read."""
        return self.packs.adopt_unindexed()

    def stray_files(self) -> list[str]:
        """Files in the blob fan-out directories that are not named like a blob, and
        packs the index does not name whose trailer cannot be read."""
        out: list[str] = []
        for fan in sorted(os.scandir(self.root), key=lambda e: e.name):
            if len(fan.name) != 2 or not fan.is_dir(follow_symlinks=False):
                continue
            for entry in os.scandir(fan.path):
                name = entry.name[:-4]
                if not (entry.name[-4:] in _SUFFIXES and is_digest(name)
                        and name[:2] == fan.name):
                    out.append(f"{fan.name}/{entry.name}")
        # packs no index row names whose trailer cannot be read: kept, never guessed at
        out += self.packs.adopt_unindexed()
        return sorted(out)

    def inspect(self, digest: str, *, read_data: bool) -> BlobProblem | None:
        """Whether the blob is present; with ``read_data`` also read and hashed
        (even when a verification is on record).  A hidden blob counts as present."""
        loc = self.packs.locate(digest)
        if loc is not None:
            return self._inspect_packed(digest, loc, read_data=read_data)
        final = Path(self._file(digest))
        hidden = [] if final.exists() else self._hidden_paths(digest)
        source = hidden[0] if hidden else (final if final.exists() else None)
        if source is None:
            return BlobProblem(digest, "missing", "no blob file")
        if not read_data:
            try:
                with open(source, "rb") as fh:
                    head = fh.read(4)
            except OSError as exc:
                return BlobProblem(digest, "corrupt", f"unreadable: {exc.strerror}")
            if head != b"\x28\xb5\x2f\xfd" and source.suffix != ".raw":
                return BlobProblem(digest, "corrupt", "not a zstd frame")
            return None
        try:
            self._read_verified(digest, source)
        except BlobMissingError:
            return BlobProblem(digest, "missing", "no blob file")
        except BlobCorruptError:
            self._forget_key(digest)
            return BlobProblem(digest, "corrupt", "content does not hash to its name")
        with contextlib.suppress(OSError):
            if source != final:
                return None
            self._remember(digest, source.stat())
        return None

    def _inspect_packed(self, digest: str, loc: Location, *,
                        read_data: bool) -> BlobProblem | None:
        if loc.pack is None:
            return None
        if not read_data:
            try:
                with open(self.packs.pack_path(loc.pack), "rb") as fh:
                    head = os.pread(fh.fileno(), 4, loc.offset)
            except FileNotFoundError:
                return BlobProblem(digest, "missing", f"no pack file {loc.pack}")
            except OSError as exc:
                return BlobProblem(digest, "corrupt", f"unreadable: {exc.strerror}")
            if head != b"\x28\xb5\x2f\xfd":
                return BlobProblem(digest, "corrupt", "not a zstd frame")
            return None
        try:
            data = self.packs.read(digest)
        except BlobCorruptError:
            self.packs.forget_verified()
            return BlobProblem(digest, "corrupt", "content does not hash to its name")
        if data is None:
            return BlobProblem(digest, "missing", f"no pack file {loc.pack}")
        return None

    def hide(self, digest: str, generation: str) -> bool:
        """Move the blob to ``hidden/<generation>/`` (see the module docstring); a packed
        blob is marked hidden in the index."""
        if self.packs.hide(digest, generation):
            return True
        target_dir = self.root / "hidden" / generation
        _private_dir(target_dir)
        self._no_hidden = False
        source = Path(self._file(digest))
        try:
            os.rename(source, target_dir / source.name)
        except FileNotFoundError:
            return False
        return True

    def unhide(self, digest: str, generation: str) -> None:
        """Move a hidden blob back into place (dropping it if a capture rewrote it)."""
        self.packs.unhide(digest, generation)
        for sfx in _SUFFIXES:
            hidden = self.root / "hidden" / generation / f"{digest}{sfx}"
            final = Path(self._file(digest))
            self._fan(digest)
            with contextlib.suppress(FileNotFoundError):
                if final.exists():
                    os.unlink(hidden)
                else:
                    os.rename(hidden, final.with_suffix(sfx))

    def hidden(self) -> dict[str, list[str]]:
        """Hidden blobs by generation."""
        out = self.packs.hidden()
        base = self.root / "hidden"
        if not base.is_dir():
            return out
        for gen in sorted(base.iterdir()):
            out[gen.name] = sorted(set(out.get(gen.name, [])) | {
                p.name[:-4] for p in gen.iterdir() if p.name[-4:] in _SUFFIXES
            })
        return out

    def purge_hidden(self, generation: str, digests: Iterable[str]) -> int:
        """Unlink hidden blobs (one a capture renamed back is simply not there); packed
        ones leave the index, and packs left empty or mostly dead are dropped or
        repacked."""
        digests = list(digests)
        freed = self.packs.purge_hidden(generation, digests)
        gen = self.root / "hidden" / generation
        for digest in digests:
            for sfx in _SUFFIXES:
                path = gen / f"{digest}{sfx}"
                try:
                    size = path.stat().st_size
                    _crash.point("prune-delete")
                    os.unlink(path)
                except FileNotFoundError:
                    continue
                freed += size
                self._forget_key(digest)
        with contextlib.suppress(OSError):
            gen.rmdir()   # only when empty
        return freed

    def set_aside(self, digest: str) -> None:
        """Move a damaged blob to ``damaged/`` (kept for inspection, never read); a
        packed one leaves the index (its frame stays until its pack is repacked)."""
        if self.packs.locate(digest) is not None:
            self.packs.set_aside(digest)
            return
        target = self.root / "damaged"
        _private_dir(target)
        source = Path(self._file(digest))
        with contextlib.suppress(FileNotFoundError):
            os.rename(source, target / f"{source.name}.{time.time_ns()}")
        self._forget_key(digest)

    def close(self) -> None:
        """Seal the open pack and let go of the pack index and the packs held open."""
        try:
            self.packs.seal()
        finally:
            self.packs.close()

    def leftovers(self) -> list[Leftover]:
        """Temp files in ``tmp/`` whose writer no longer holds them."""
        out: list[Leftover] = []
        tmp = self.root / "tmp"
        try:
            entries = sorted(os.scandir(tmp), key=lambda e: e.name)
        except FileNotFoundError:
            return out
        for entry in entries:
            if _unheld(entry.path):
                with contextlib.suppress(OSError):
                    out.append(Leftover(f"tmp/{entry.name}", entry.stat().st_size))
        return out

    def remove_leftovers(self, names: Iterable[str]) -> int:
        """Delete leftovers that are still unheld; bytes freed."""
        freed = 0
        for name in names:
            path = self.root / name
            if not name.startswith("tmp/") or "/" in name[4:]:
                continue
            fd = hold_if_unheld(str(path))
            if fd is None:
                continue
            try:
                size = os.fstat(fd).st_size
                os.unlink(path)
                freed += size
            except FileNotFoundError:
                pass
            finally:
                os.close(fd)
        return freed


def _unheld(path: str) -> bool:
    fd = hold_if_unheld(path)
    if fd is None:
        return False
    os.close(fd)
    return True
