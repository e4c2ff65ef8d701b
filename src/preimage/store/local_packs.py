"""Pack files of the embedded store: many small blobs in one file, found through an index.

A first capture of a source tree writes thousands of small blobs; one file each costs
an ``open(O_CREAT)``, a lock and a rename per blob, which is what kept it several times
slower than ``tar | zstd``.  Small blobs therefore go into **packs**, as restic and the
shared store (:mod:`preimage.store.packs`) keep them:

* ``blobs/packs/<xx>/<pack id>.pack``: zstd frames of blobs back to back (each frame is
  one blob, compressed on its own so it is read without its neighbours), then a
  *trailer* — the zstd-compressed JSON list ``[[digest, offset, length, raw size], …]``
  — then the trailer's length (8 bytes, little-endian) and the magic ``PIMPACK1``.  A
  pack can be read back without the index.
* ``blobs/packs.sqlite``: the index (``packed``: digest → pack, offset, length, raw
  size, and the prune generation that hid it), and the stat of every pack fully
  verified after its last change (``sound``).

**Writing.**  A writer appends frames to a temp file in ``blobs/tmp`` that it holds an
exclusive ``flock`` on, and *seals* it — trailer, rename into ``packs/``, index rows
committed, lock released — when it reaches :data:`PACK_LIMIT` bytes or
:data:`PACK_BLOBS` blobs, or when the engine
flushes (after each snapshot, before the snapshot's row is written).  A blob is
therefore indexed before any backup can reference it, and a process killed at any
point leaves either a temp file nobody holds (a leftover ``prune`` removes), or a sealed
pack no index row names and nobody holds.  Such a pack is never deleted as it is: it
is indexed again from its trailer (by ``check`` and by ``prune`` before it marks), and
the blobs no backup references are then reclaimed like any others.  An index lost
whole is rebuilt the same way.  Nothing sealed is lost.

**Deleting** follows the store's two phases: hiding a packed blob sets its row's
``hidden`` column to the prune generation; a capture that asks for it clears it again
(one ``UPDATE``, atomic with respect to the sweep's ``DELETE … WHERE hidden = gen``).
A pack no row names any more is unlinked (under its lock, after checking again that no
row names it); a pack whose live frames take less than half of it is **repacked**:
its frames are copied, verified, into a new pack and their rows moved to it by an
``UPDATE`` that keeps each row's ``hidden`` column as it is at that moment, then the old
pack is dropped.  A reader that looked a row up just before the move finds the old file
gone and looks the row up again.

**Soundness.**  As for loose blobs (:mod:`preimage.store.blobs`), a packed blob is
trusted without reading it only when the whole pack was verified by this process, or a
verification is on record for the pack file as it is now (size, inode, mtime, ctime)
made more than :data:`~preimage.store.blobs.RACY_NS` after its ctime.  Otherwise the
pack is read and every frame hashed once; a damaged frame makes its blob count as
absent, so the next capture of the same bytes writes it again (into a new pack, and the
row moves there).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import sqlite3
import struct
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import zstandard

from preimage.interface import crash as _crash
from preimage.interface.blobs import sha256_hex
from preimage.interface.errors import BlobCorruptError, StoreUnavailableError
from preimage.store.wal import use_wal

PACK_LIMIT = 16 << 20        # bytes of frames per pack: few files, and a prune repacks little
# blobs per pack: the writer holds each one's place until the pack is sealed (about 250
# bytes each), so a tree of tiny files does not make one pack of a hundred thousand
PACK_BLOBS = 4096
PACKED_MAX = 1 << 20         # a blob whose frame is larger gets a file of its own
MAGIC = b"PIMPACK1"
_TAIL = struct.Struct("<Q")
_RACY_NS = 2_000_000_000
_SCHEMA = """
CREATE TABLE IF NOT EXISTS packed (
  digest TEXT PRIMARY KEY, pack TEXT NOT NULL, offset INTEGER NOT NULL,
  length INTEGER NOT NULL, raw INTEGER NOT NULL, hidden TEXT) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS packed_pack ON packed(pack);
CREATE INDEX IF NOT EXISTS packed_hidden ON packed(hidden) WHERE hidden IS NOT NULL;
CREATE TABLE IF NOT EXISTS sound (
  pack TEXT PRIMARY KEY, size INTEGER, ino INTEGER, mtime_ns INTEGER, ctime_ns INTEGER)
"""

PackKey = tuple[int, int, int, int]   # size, inode, mtime_ns, ctime_ns
_EXPECTED_MAX = 16_384   # blob locations kept for reads to come (``expect``)

# The young store's filter of blobs this process sealed: 2^23 bits (1 MiB), three bits
# per blob taken from its digest (uniform already): one in 20,000 new blobs is looked up
# for nothing at 100,000 sealed, one in 30 at a million.
_FILTER_BITS = 1 << 23


def _filter_bits(digest: str) -> tuple[int, int, int]:
    v = int(digest[:18], 16)
    mask = _FILTER_BITS - 1
    return v & mask, (v >> 23) & mask, (v >> 46) & mask


def _in_filter(bits: bytearray | None, digest: str) -> bool:
    if bits is None:
        return False
    return all(bits[b >> 3] & (1 << (b & 7)) for b in _filter_bits(digest))


class Location(NamedTuple):
    """Where a packed blob's frame is (``pack`` is None: in this process's open pack).  A
    tuple: a restore makes one or two per file, and a frozen dataclass takes four times as
    long to make."""

    pack: str | None
    offset: int
    length: int
    raw: int
    hidden: str | None = None


class _OpenPack:
    """The pack this process is appending to (a locked temp file)."""

    def __init__(self, tmp: str, fd: int) -> None:
        self.id = secrets.token_hex(16)
        self.tmp = tmp
        self.fd = fd
        self.size = 0
        self.entries: dict[str, tuple[int, int, int]] = {}   # digest -> offset, length, raw
        self.moved: dict[str, str] = {}   # digest -> the pack a repack takes it from


def _key(st: os.stat_result) -> PackKey:
    return (st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def hold_if_unheld(path: str) -> int | None:
    """An fd holding an exclusive lock on ``path`` when no one else holds one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


_LIVE: weakref.WeakSet[LocalPacks] = weakref.WeakSet()


def _after_fork() -> None:
    # A forked child must not use its parent's index connection (SQLite forbids it) or
    # append to its parent's open pack (the two would share one file offset): it starts
    # afresh, leaving those to the parent, which still owns them.
    for packs in list(_LIVE):
        packs._db = None
        packs._open = None
        packs._fds = {}
        packs._lock = threading.RLock()


os.register_at_fork(after_in_child=_after_fork)


class LocalPacks:
    """The packs and pack index under a local blob store's ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._root_s = str(root)
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self._open: _OpenPack | None = None
        self._fds: dict[str, int] = {}          # pack id -> open read descriptor
        self._state: dict[str, tuple[PackKey, frozenset[str]]] = {}   # verified: key, bad
        self._dirs: set[str] = set()
        self._dctxs = threading.local()   # a decompressor per thread: one is not thread-safe
        self._expected: dict[str, Location] = {}   # looked up ahead of reads (``expect``)
        # A young store (no index when a write first looked): until another process writes
        # to the index, a write asks it only for blobs this process may have sealed
        # (``locate``): ``_mine`` is a Bloom filter of those.
        self._no_index: bool | None = None
        self._mine: bytearray | None = None
        self._made_index = False        # this process created the index file
        self._data_version = 0          # the index's data_version when it was opened
        _LIVE.add(self)

    # ------------------------------------------------------------ index
    def _index(self) -> sqlite3.Connection:
        if self._db is None:
            path = f"{self._root_s}/packs.sqlite"
            try:
                fresh = not os.path.exists(path)
                db = sqlite3.connect(path, timeout=60, isolation_level=None,
                                     check_same_thread=False)
                self._made_index = fresh
                if fresh:
                    os.chmod(path, 0o600)
                use_wal(db)
                db.execute("PRAGMA synchronous=NORMAL")
                db.executescript(_SCHEMA)
                # another connection's commit changes it from here on (ours never do)
                self._data_version = int(db.execute("PRAGMA data_version").fetchone()[0])
            except (sqlite3.Error, OSError) as exc:
                raise StoreUnavailableError(f"{self._root_s}/packs.sqlite", str(exc)) from exc
            self._db = db
        return self._db

    def has_index(self) -> bool:
        """Whether this store has packs at all (an older store may have none)."""
        return self._db is not None or os.path.exists(f"{self._root_s}/packs.sqlite")

    def pack_path(self, pack: str) -> str:
        return f"{self._root_s}/packs/{pack[:2]}/{pack}.pack"

    def expect(self, digests: list[str]) -> dict[str, Location]:
        """Look up where ``digests`` are, 500 at a time, for the reads about to come, and
        return what was found: each is answered once from it (a read that finds its pack
        gone looks again); what earlier calls found and nobody read is dropped in time."""
        known = self._expected
        found = {d: loc for d in digests if (loc := known.get(d)) is not None} if known else {}
        todo = [d for d in digests if d not in found] if found else digests
        for start in range(0, len(todo), 500):
            found.update(self.locate_many(todo[start:start + 500]))
        if len(known) > _EXPECTED_MAX:   # looked up and never read: dropped
            known.clear()
        known.update(found)
        return found

    def found_ahead(self, found: dict[str, Location]) -> None:
        """Keep what a look-up before the reads found (a restore's check that every blob
        is there) for the reads, unless that would hold more than a few thousand: a
        small restore then looks each blob up once, not once to check and once to read."""
        if len(self._expected) + len(found) <= _EXPECTED_MAX:
            self._expected.update(found)

    def locate(self, digest: str, *, writing: bool = False) -> Location | None:
        """The blob's frame: in the open pack, or as the index names it (hidden or not).

        ``writing``: asked by a write about to store the blob, which is no worse off for a
        copy it misses (it writes another; the index takes the newer) — so in a store that
        had no pack index when a write first looked, until another process writes to the
        index, a write asks the index only about blobs this process may have sealed (a
        Bloom filter of them, never wrong about one it sealed): no look-up for a new blob
        of a store's first capture. A read always looks."""
        if self._expected and (loc := self._expected.pop(digest, None)) is not None:
            return loc
        with self._lock:
            op = self._open
            if op is not None and digest in op.entries:
                off, length, raw = op.entries[digest]
                return Location(None, off, length, raw)
            if writing:
                if self._no_index is None:
                    self._no_index = not self.has_index()
                if self._no_index and not _in_filter(self._mine, digest):
                    return None
            if not self.has_index():
                return None
            row = self._index().execute(
                "SELECT pack, offset, length, raw, hidden FROM packed WHERE digest=?", (digest,)
            ).fetchone()
        return Location(*row) if row else None

    def locate_many(self, digests: list[str]) -> dict[str, Location]:
        """:meth:`locate` for each of ``digests`` (at most 500) in one query; those no
        pack holds are left out."""
        found: dict[str, Location] = {}
        with self._lock:
            op = self._open
            if op is not None:
                for digest in digests:
                    if digest in op.entries:
                        off, length, raw = op.entries[digest]
                        found[digest] = Location(None, off, length, raw)
            rest = [d for d in digests if d not in found]
            if not rest or not self.has_index():
                return found
            marks = ",".join("?" * len(rest))
            for digest, *row in self._index().execute(
                    f"SELECT digest, pack, offset, length, raw, hidden FROM packed "
                    f"WHERE digest IN ({marks})", rest):
                found[digest] = Location(*row)
        return found

    def rescue(self, digest: str, loc: Location) -> None:
        """Bring back a blob a prune hid (a capture or reader asks for it)."""
        if loc.hidden is not None:
            with self._lock:
                self._index().execute(
                    "UPDATE packed SET hidden=NULL WHERE digest=? AND hidden IS NOT NULL",
                    (digest,))

    # ------------------------------------------------------------ writing
    def add(self, digest: str, frame: bytes, raw: int) -> int:
        """Append blob ``digest`` (its zstd ``frame``) to the open pack; bytes written."""
        with self._lock:
            op = self._open or self._start()
            if digest in op.entries:
                return 0
            try:
                # at the pack's recorded end, not the file's: a write that failed half-way
                # (a full disk) leaves bytes the next frame or the trailer overwrites
                _write_at(op.fd, frame, op.size)
            except OSError as exc:
                raise StoreUnavailableError(self._root_s, exc.strerror or str(exc)) from exc
            op.entries[digest] = (op.size, len(frame), raw)
            op.size += len(frame)
            _crash.point("blob")   # written, not sealed: as a loose blob before its rename
            if op.size >= PACK_LIMIT or len(op.entries) >= PACK_BLOBS:
                self.seal()
            return len(frame)

    def _start(self) -> _OpenPack:
        tmp = f"{self._root_s}/tmp/pack-{os.getpid()}-{secrets.token_hex(8)}"
        try:
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StoreUnavailableError(self._root_s, exc.strerror or str(exc)) from exc
        fcntl.flock(fd, fcntl.LOCK_EX)
        self._open = _OpenPack(tmp, fd)
        return self._open

    def seal(self) -> None:
        """Finish the open pack: trailer, rename into place, index rows, release the lock."""
        with self._lock:
            op, self._open = self._open, None
            if op is None:
                return
            try:
                if op.entries:
                    self._seal(op)
            finally:
                os.close(op.fd)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(op.tmp)

    def _seal(self, op: _OpenPack) -> None:
        rows = [[d, off, length, raw] for d, (off, length, raw) in op.entries.items()]
        trailer = zstandard.ZstdCompressor(level=3).compress(json.dumps(rows).encode())
        final = self.pack_path(op.id)
        try:
            tail = trailer + _TAIL.pack(len(trailer)) + MAGIC
            _write_at(op.fd, tail, op.size)
            os.ftruncate(op.fd, op.size + len(tail))
            fan = os.path.dirname(final)
            if fan not in self._dirs:
                os.makedirs(fan, mode=0o700, exist_ok=True)
                self._dirs.add(fan)
            _crash.point("pack-seal")
            os.rename(op.tmp, final)   # still locked: prune leaves it alone until indexed
            _crash.point("pack-index")
            db = self._index()
            with _tx(db):
                fresh = [(d, op.id, off, length, raw) for d, off, length, raw in rows
                         if d not in op.moved]
                db.executemany("INSERT OR REPLACE INTO packed VALUES (?, ?, ?, ?, ?, NULL)",
                               fresh)
                # a repack moves a row only from where it still is, keeping its hidden mark
                db.executemany(
                    "UPDATE packed SET pack=?, offset=?, length=?, raw=? "
                    "WHERE digest=? AND pack=?",
                    [(op.id, off, length, raw, d, op.moved[d]) for d, off, length, raw in rows
                     if d in op.moved])
            self._state[op.id] = (_key(os.fstat(op.fd)), frozenset())
            if self._no_index:
                self._note_sealed(db, [d for d in op.entries if d not in op.moved])
        except OSError as exc:
            raise StoreUnavailableError(self._root_s, exc.strerror or str(exc)) from exc
        except sqlite3.Error as exc:
            raise StoreUnavailableError(f"{self._root_s}/packs.sqlite", str(exc)) from exc

    def _note_sealed(self, db: sqlite3.Connection, digests: list[str]) -> None:
        """Add the blobs just indexed to the young store's filter, or end the young
        store's shortcut when another process has written to the index (or made it)."""
        version = int(db.execute("PRAGMA data_version").fetchone()[0])
        if not self._made_index or version != self._data_version:
            self._no_index = False
            self._mine = None
            return
        if self._mine is None:
            self._mine = bytearray(_FILTER_BITS >> 3)
        for digest in digests:
            for bit in _filter_bits(digest):
                self._mine[bit >> 3] |= 1 << (bit & 7)

    # ------------------------------------------------------------ reading
    def _read_frame(self, loc: Location) -> bytes:
        op = self._open
        if loc.pack is None:
            if op is None:
                raise FileNotFoundError
            return os.pread(op.fd, loc.length, loc.offset)
        fd = self._fds.get(loc.pack)
        if fd is None:
            fd = os.open(self.pack_path(loc.pack), os.O_RDONLY | os.O_CLOEXEC)
            if len(self._fds) >= 32:
                os.close(self._fds.pop(next(iter(self._fds))))
            self._fds[loc.pack] = fd
        return os.pread(fd, loc.length, loc.offset)

    def read(self, digest: str, *, backup_id: str | None = None,
             path: str | None = None) -> bytes | None:
        """The blob's bytes, verified; None when no pack holds it.  A hidden blob is
        brought back (a reader may be about to reference it); a repack racing the read
        is followed to the blob's new pack."""
        for _attempt in range(3):
            loc = self.locate(digest)
            if loc is None:
                return None
            self.rescue(digest, loc)
            with self._lock:
                try:
                    frame = self._read_frame(loc)
                except FileNotFoundError:
                    self._drop_fd(loc.pack)
                    continue
                except OSError as exc:
                    raise BlobCorruptError(digest, backup_id=backup_id, path=path) from exc
            data = self._decode(frame, loc.raw)
            if data is None or sha256_hex(data) != digest:
                raise BlobCorruptError(digest, backup_id=backup_id, path=path)
            return data
        return None   # the pack is gone: whatever else holds the blob is read instead

    def _decode(self, frame: bytes, raw: int) -> bytes | None:
        if len(frame) < 4:
            return None
        dctx: zstandard.ZstdDecompressor | None = getattr(self._dctxs, "dctx", None)
        if dctx is None:
            dctx = self._dctxs.dctx = zstandard.ZstdDecompressor()
        try:
            return dctx.decompress(frame, max_output_size=raw)
        except zstandard.ZstdError:
            return None

    def _drop_fd(self, pack: str | None) -> None:
        if pack is not None and (fd := self._fds.pop(pack, None)) is not None:
            os.close(fd)

    def sound(self, digest: str, loc: Location) -> bool | None:
        """Whether the blob's frame is intact (None: its pack is gone).  A pack is read
        and every frame hashed once, unless a verification of it as it is now is on
        record (see the module docstring)."""
        if loc.pack is None:
            return True   # written by this process, from bytes it hashed itself
        with self._lock:
            return self._sound(digest, loc.pack)

    def _sound(self, digest: str, pack: str) -> bool | None:
        bad = self._bad(pack)
        return None if bad is None else digest not in bad

    def damaged_in(self, pack: str | None) -> frozenset[str] | None:
        """The blobs of ``pack`` whose frames are damaged (judged as :meth:`sound` does);
        None when the pack is gone.  The open pack (None) has none."""
        if pack is None:
            return frozenset()
        with self._lock:
            return self._bad(pack)

    def _bad(self, pack: str) -> frozenset[str] | None:
        path = self.pack_path(pack)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        key = _key(st)
        state = self._state.get(pack)
        if state is None or state[0] != key:
            row = self._index().execute(
                "SELECT size, ino, mtime_ns, ctime_ns FROM sound WHERE pack=?", (pack,)
            ).fetchone()
            if row is not None and tuple(row) == key:
                state = (key, frozenset())
            else:
                state = (key, self._verify_pack(pack, path))
                if not state[1] and time.time_ns() - st.st_ctime_ns > _RACY_NS:
                    with _tx(self._index()) as db:
                        db.execute("INSERT OR REPLACE INTO sound VALUES (?, ?, ?, ?, ?)",
                                   (pack, *key))
            self._state[pack] = state
        return state[1]

    def _verify_pack(self, pack: str, path: str) -> frozenset[str]:
        """The digests of the pack whose frames do not hash to their names."""
        rows = self._index().execute(
            "SELECT digest, offset, length, raw FROM packed WHERE pack=?", (pack,)).fetchall()
        bad: set[str] = set()
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return frozenset(r[0] for r in rows)
        for digest, off, length, raw in rows:
            got = self._decode(data[off:off + length], raw)
            if got is None or sha256_hex(got) != digest:
                bad.add(digest)
        return frozenset(bad)

    def forget_verified(self) -> None:
        """Drop what this process believed about packs (a blob was found damaged)."""
        self._state.clear()

    # ------------------------------------------------------------ lifecycle
    def digests(self) -> Iterator[str]:
        """Every packed blob that is not hidden, in order."""
        if not self.has_index():
            return
        for (digest,) in self._index().execute(
                "SELECT digest FROM packed WHERE hidden IS NULL ORDER BY digest"):
            yield digest

    def hide(self, digest: str, generation: str) -> bool:
        if not self.has_index():
            return False
        with self._lock, _tx(self._index()) as db:
            return db.execute("UPDATE packed SET hidden=? WHERE digest=? AND hidden IS NULL",
                              (generation, digest)).rowcount > 0

    def unhide(self, digest: str, generation: str) -> None:
        if self.has_index():
            with self._lock, _tx(self._index()) as db:
                db.execute("UPDATE packed SET hidden=NULL WHERE digest=? AND hidden=?",
                           (digest, generation))

    def hidden(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        if self.has_index():
            for gen, digest in self._index().execute(
                    "SELECT hidden, digest FROM packed WHERE hidden IS NOT NULL "
                    "ORDER BY hidden, digest"):
                out.setdefault(gen, []).append(digest)
        return out

    def purge_hidden(self, generation: str, digests: Iterable[str]) -> int:
        """Delete the rows still hidden under ``generation``; drop the packs no row names
        and repack the ones mostly dead.  Bytes freed on disk."""
        if not self.has_index():
            return 0
        db = self._index()
        packs: set[str] = set()
        with self._lock:
            for digest in digests:
                with _tx(db):
                    row = db.execute("SELECT pack FROM packed WHERE digest=? AND hidden=?",
                                     (digest, generation)).fetchone()
                    if row is None:
                        continue
                    _crash.point("prune-delete")
                    db.execute("DELETE FROM packed WHERE digest=? AND hidden=?",
                               (digest, generation))
                    packs.add(row[0])
            return self._compact(sorted(packs))

    def _compact(self, packs: list[str]) -> int:
        freed = 0
        db = self._index()
        for pack in packs:
            path = self.pack_path(pack)
            try:
                size = os.stat(path).st_size
            except FileNotFoundError:
                continue
            live = db.execute("SELECT COALESCE(SUM(length), 0), COUNT(*) FROM packed "
                              "WHERE pack=?", (pack,)).fetchone()
            if live[1] and live[0] * 2 >= size:
                continue
            if live[1]:
                self._repack(pack, path)
            freed += self.drop_if_empty(pack)
        return freed

    def _repack(self, pack: str, path: str) -> None:
        """Copy the pack's remaining frames (verified) into a new pack; their rows move."""
        rows = self._index().execute(
            "SELECT digest, offset, length, raw FROM packed WHERE pack=?", (pack,)).fetchall()
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return
        self.seal()   # the repacked frames go into a pack of their own
        for digest, off, length, raw in rows:
            frame = data[off:off + length]
            got = self._decode(frame, raw)
            if got is None or sha256_hex(got) != digest:
                continue   # damaged: left where it is, for check to report
            op = self._open or self._start()
            op.moved[digest] = pack
            self.add(digest, frame, raw)
        self.seal()
        self._drop_fd(pack)

    def drop_if_empty(self, pack: str) -> int:
        """Unlink a sealed pack no index row names and no writer holds; bytes freed."""
        path = self.pack_path(pack)
        fd = hold_if_unheld(path)
        if fd is None:
            return 0
        try:
            if self._index().execute("SELECT 1 FROM packed WHERE pack=? LIMIT 1",
                                     (pack,)).fetchone():
                return 0
            size = os.fstat(fd).st_size
            os.unlink(path)
            self._drop_fd(pack)
            with self._lock, _tx(self._index()) as db:
                db.execute("DELETE FROM sound WHERE pack=?", (pack,))
            return size
        except FileNotFoundError:
            return 0
        finally:
            os.close(fd)

    def adopt_unindexed(self) -> list[str]:
        """Index the sealed packs no row names and no writer holds; the unreadable ones.

        Such a pack was left by a writer killed between its rename and its index rows,
        or its rows were lost with the index.  It is never deleted for that: its
        trailer's rows are added (a blob already indexed elsewhere keeps that place),
        and ``prune`` then reclaims whatever no backup references, in its two phases.
        A pack left with no row at all holds only blobs found elsewhere and is dropped.
        A pack whose trailer cannot be read is left alone and reported (``check``).
        """
        base = f"{self._root_s}/packs"
        if not os.path.isdir(base):
            return []
        with self._lock:
            named = {p for (p,) in self._index().execute("SELECT DISTINCT pack FROM packed")}
        unreadable: list[str] = []
        for fan in sorted(os.scandir(base), key=lambda e: e.name):
            if not fan.is_dir(follow_symlinks=False):
                continue
            for entry in sorted(os.scandir(fan.path), key=lambda e: e.name):
                pack = entry.name.removesuffix(".pack")
                if (not entry.name.endswith(".pack") or pack in named
                        or entry.name != f"{pack}.pack" or pack[:2] != fan.name):
                    continue
                if not self._adopt(pack, entry.path):
                    unreadable.append(f"packs/{fan.name}/{entry.name}")
        return unreadable

    def _adopt(self, pack: str, path: str) -> bool:
        fd = hold_if_unheld(path)
        if fd is None:
            return True   # its writer is still at work, or it is gone
        try:
            with self._lock:
                db = self._index()
                if db.execute("SELECT 1 FROM packed WHERE pack=? LIMIT 1", (pack,)).fetchone():
                    return True
                rows = _trailer(fd)
                if rows is None:
                    return False
                with _tx(db):
                    db.executemany(
                        "INSERT OR IGNORE INTO packed VALUES (?, ?, ?, ?, ?, NULL)",
                        [(d, pack, off, length, raw) for d, off, length, raw in rows])
        finally:
            os.close(fd)
        self.drop_if_empty(pack)
        return True

    def set_aside(self, digest: str) -> None:
        """Forget a damaged packed blob (its frame stays until the pack is repacked)."""
        if self.has_index():
            with self._lock, _tx(self._index()) as db:
                db.execute("DELETE FROM packed WHERE digest=?", (digest,))
            self.forget_verified()

    def unpack(self, digest: str, loc: Location, final: str) -> None:
        """Give a packed blob a file of its own at ``final`` (its frame as it is)."""
        with self._lock:
            frame = self._read_frame(loc)
            os.makedirs(os.path.dirname(final), mode=0o700, exist_ok=True)
            tmp = f"{self._root_s}/tmp/blob-{os.getpid()}-{secrets.token_hex(8)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, frame)
            finally:
                os.close(fd)
            os.replace(tmp, final)
            if loc.pack is None:
                op = self._open
                if op is not None:
                    op.entries.pop(digest, None)
            else:
                with _tx(self._index()) as db:
                    db.execute("DELETE FROM packed WHERE digest=? AND pack=?",
                               (digest, loc.pack))

    def close(self) -> None:
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()
            if self._db is not None:
                self._db.close()
                self._db = None


def _trailer(fd: int) -> list[tuple[str, int, int, int]] | None:
    """The rows a pack's trailer lists, or None when it cannot be read as one."""
    try:
        size = os.fstat(fd).st_size
        end = os.pread(fd, _TAIL.size + len(MAGIC), size - _TAIL.size - len(MAGIC))
        if len(end) != _TAIL.size + len(MAGIC) or end[_TAIL.size:] != MAGIC:
            return None
        (length,) = _TAIL.unpack(end[:_TAIL.size])
        start = size - _TAIL.size - len(MAGIC) - length
        if start < 0:
            return None
        raw = zstandard.ZstdDecompressor().decompress(os.pread(fd, length, start),
                                                      max_output_size=64 << 20)
        rows = [(str(d), int(o), int(n), int(r)) for d, o, n, r in json.loads(raw)]
    except (OSError, ValueError, TypeError, zstandard.ZstdError):
        return None
    if any(len(d) != 64 or o < 0 or n < 0 or o + n > start for d, o, n, _r in rows):
        return None
    return rows


def _write_at(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


@contextlib.contextmanager
def _tx(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
