"""Reading a tree without changing it: directory fds, lstat, xattrs and streamed hashing.

The walk holds a file descriptor per directory on the current path and
reaches every entry relative to its directory's fd (``openat``/``fstatat``
with ``O_NOFOLLOW``): symlinks are never followed, paths longer than PATH_MAX
are no obstacle, and the walk is iterative, so depth is bounded by the open-file
limit, not the interpreter's stack.  Names are the kernel's bytes, held as
``os.fsdecode`` strings (surrogate-escaped when they are not UTF-8) so they
round-trip exactly.

Files and directories are opened with ``O_NOATIME`` where the kernel allows
it (owner or root), so capturing does not move the access times it records.
A file that changes while it is read is read once more; if it is still
changing, the bytes read are kept, its size is the number of bytes read, and
it is listed in :attr:`Walker.uncaptured` (the copy may be torn).  A file
larger than ``max_file_size`` is not read: its entry has no digest and it is
listed in :attr:`Walker.uncaptured`.  Temporary files a killed restore left
(``.preimage-tmp-*``) are not state: they are skipped and listed in
:attr:`Walker.debris` for the next restore to remove.
"""

from __future__ import annotations

import array
import collections
import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from preimage.interface.errors import InvalidTargetError, PreimageError, TerminalConnectorError
from preimage.interface.sizes import human_bytes
from preimage.snapshot_schemas import Uncaptured
from preimage.snapshot_schemas.files import FileEntry, FileType, walk_order

if TYPE_CHECKING:
    from preimage.interface.blobs import BlobStore, DigestCache

_NOATIME = getattr(os, "O_NOATIME", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
TMP_PREFIX = ".preimage-tmp-"

# Decides whether a path (relative to the walk root, never ".") is left out of
# the walk, with its subtree; it gets the entry's lstat result.
Exclude = Callable[[str, os.stat_result], bool]
_CACHE_BATCH = 500
_AHEAD = 500   # entries of the previous snapshot read (and their blobs looked up) at once
_LISTED_MAX = 100_000   # directory entries whose inodes are kept for one digest-cache query
_CHUNK = 1 << 20
_VALIDATE_ENTRY: Callable[[dict[str, object]], FileEntry] = (
    FileEntry.__pydantic_validator__.validate_python)


def file_type(mode: int) -> FileType:
    """The schema's name for an ``st_mode``."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISCHR(mode):
        return "chardev"
    if stat.S_ISBLK(mode):
        return "blockdev"
    return "socket"


def open_noatime(path: str | Path, flags: int, *, dir_fd: int | None = None) -> int:
    """``os.open`` with ``O_NOFOLLOW | O_NOATIME``, retrying without NOATIME when refused."""
    flags |= os.O_NOFOLLOW | _CLOEXEC
    try:
        return os.open(path, flags | _NOATIME, dir_fd=dir_fd)
    except PermissionError:
        return os.open(path, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.EINVAL and _NOATIME:
            return os.open(path, flags, dir_fd=dir_fd)
        raise


_PROC_FD = os.path.isdir("/proc/self/fd")


def at_path(dir_fd: int, name: str,
            fallback: str | Path | Callable[[], Path] | None = None) -> str:
    """A short path naming ``name`` in the directory ``dir_fd``, for calls that take no
    ``dir_fd`` (xattrs): through ``/proc/self/fd``, else ``fallback`` (called when it is
    a function: a whole path costs more to build than the call it is for)."""
    if _PROC_FD or fallback is None:
        return f"/proc/self/fd/{dir_fd}/{name}"
    return str(fallback() if callable(fallback) else fallback)


def read_xattrs(path: str | Path | int) -> dict[str, str]:
    """Extended attributes of ``path`` (not following symlinks) or of the open file
    descriptor ``path``, values as hex."""
    out: dict[str, str] = {}
    follow = isinstance(path, int)   # a descriptor is the file itself: nothing to follow
    try:
        names = os.listxattr(path, follow_symlinks=follow)
    except OSError:
        return out
    for name in sorted(names):
        with contextlib.suppress(OSError):
            out[name] = os.getxattr(path, name, follow_symlinks=follow).hex()
    return out


def hash_file(path: str | Path, *, dir_fd: int | None = None) -> str:
    """sha256 of a file's bytes, read without moving its atime."""
    fd = open_noatime(path, os.O_RDONLY, dir_fd=dir_fd)
    hasher = hashlib.sha256()
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()


def data_extents(fd: int, size: int) -> list[tuple[int, int]] | None:
    """``(offset, length)`` of the data regions of a sparse file; None when it has no hole."""
    try:
        if os.lseek(fd, 0, os.SEEK_HOLE) >= size:
            return None
        out: list[tuple[int, int]] = []
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:
                    break
                raise
            end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
            out.append((start, end - start))
            pos = end
        return out
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            os.lseek(fd, 0, os.SEEK_SET)


def resolve_root(path: str) -> Path:
    """The absolute, normalised path of a ``file://`` target (symlinks not resolved)."""
    if not path or not path.startswith("/"):
        raise InvalidTargetError(f"file://{path}", "the path must be absolute: file:///abs/path")
    return Path(os.path.normpath(path))


class _Counting:
    """A read-only file wrapper that counts the bytes handed out."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        data = self.fh.read(n)
        self.count += len(data)
        return data


CLONE_MIN = 1 << 20   # files this large are cloned into the store where it can (FICLONE)


class _Previous:
    """The entries of the previous snapshot of the same root, matched to the walk by
    path: both come in walk order, so one pass over each suffices.  They are read
    :data:`_AHEAD` at a time, and ``will_check`` is told those entries' digests (the
    store looks them up in one query where reusing each asks whether its blob is there)."""

    def __init__(self, entries: Iterable[FileEntry],
                 will_check: Callable[[list[str]], None] | None = None) -> None:
        self._it: Iterator[FileEntry] | None = iter(entries)
        self._will_check = will_check
        self._ahead: collections.deque[FileEntry] = collections.deque()
        self._cur: FileEntry | None = None
        self._key: tuple[str, ...] = ()
        self._advance()

    def _read_ahead(self) -> None:
        batch: list[FileEntry] = []
        while self._it is not None and len(batch) < _AHEAD:
            try:
                entry = next(self._it, None)
            except (PreimageError, ValueError, TypeError):
                entry = None   # its document cannot be read: reuse nothing more
            if entry is None:
                self._it = None
                break
            batch.append(entry)
        if self._will_check is not None and batch:
            self._will_check([e.digest for e in batch if e.type == "file" and e.digest])
        self._ahead.extend(batch)

    def _advance(self) -> None:
        if not self._ahead:
            self._read_ahead()
        self._cur = self._ahead.popleft() if self._ahead else None
        if self._cur is not None:
            self._key = walk_order(self._cur.path)

    def get(self, rel: str) -> FileEntry | None:
        key = walk_order(rel)
        while self._cur is not None and self._key < key:
            self._advance()
        return self._cur if self._cur is not None and self._key == key else None


class _Listing:
    """One open directory's names with the inode numbers its listing gave, and the digest
    cache's rows for them once asked (``None``: not yet, or the cache cannot batch)."""

    __slots__ = ("dev", "inodes", "rows")

    def __init__(self, inodes: dict[str, int]) -> None:
        self.inodes = inodes
        self.rows: dict[int, tuple[int, int, int, str]] | None = None
        self.dev = -1


class Walker:
    """Walks a tree in a fixed order (pre-order, names sorted) yielding entries.

    With ``store_content`` regular files are stored in ``blobs`` (reusing
    unchanged blobs via the digest cache); without it they are only hashed
    (planning a restore).  ``exclude`` leaves paths (and their subtrees) out,
    e.g. the ``.git`` directory of a working tree.  ``max_file_size`` leaves
    larger files unread (see the module docstring).

    ``previous`` — the entries of this root's previous snapshot, in walk order —
    lets the walk reuse an entry whose inode, ctime and mtime are those recorded
    there: every change to a file's bytes, size, mode, owner, xattrs or link
    target moves its ctime, so such an entry is unchanged but for its atime
    (read again), and its file is neither read nor even listed for xattrs.  A
    file's blob must still be in the store (``exists``); an entry with hard
    links or without a stored digest is always read afresh.
    """

    def __init__(
        self,
        root: Path,
        blobs: BlobStore | None,
        *,
        store_content: bool = True,
        exclude: Exclude | None = None,
        max_file_size: int | None = None,
        previous: Iterable[FileEntry] | None = None,
    ) -> None:
        self.root = root
        self.blobs = blobs
        self.store_content = store_content and blobs is not None
        self.exclude = exclude
        self.max_file_size = max_file_size
        self.uncaptured: list[Uncaptured] = []
        self.debris: list[str] = []
        self._cache_rows: list[tuple[int, int, int, int, int, str]] = []
        self._links: dict[tuple[int, int], str] = {}
        self._previous = None if previous is None else _Previous(
            previous, blobs.will_check if blobs is not None and store_content else None)
        self._listed: dict[int, _Listing] = {}   # open directory fd -> what its listing said

    def _fail(self, what: str, rel: str, exc: OSError) -> TerminalConnectorError:
        path = self.root if rel == "." else self.root / rel
        hint = " — run as a user that can read it" if exc.errno == errno.EACCES else ""
        return TerminalConnectorError(
            f"cannot {what} {os.fsencode(str(path)).decode(errors='backslashreplace')}: "
            f"{exc.strerror}{hint}",
            target=str(self.root),
        )

    def entries(self) -> Iterator[FileEntry]:
        """Every entry under the root, the root itself first as ``"."``."""
        try:
            parent = os.open(self.root.parent, os.O_PATH | os.O_DIRECTORY | _CLOEXEC)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise self._fail("reach", ".", exc) from exc
        stack: list[tuple[int, str, Iterator[str]]] = []
        try:
            name = self.root.name or "/"
            try:
                st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                return
            except OSError as exc:
                raise self._fail("read", ".", exc) from exc
            yield self._entry(parent, name, ".", st)
            if stat.S_ISDIR(st.st_mode):
                stack.append(self._open_dir(parent, name, "."))
            while stack:
                dir_fd, rel, names = stack[-1]
                child = next(names, None)
                if child is None:
                    self._listed.pop(dir_fd, None)
                    os.close(dir_fd)
                    stack.pop()
                    continue
                child_rel = child if rel == "." else f"{rel}/{child}"
                try:
                    st = os.stat(child, dir_fd=dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue  # vanished while we walked: it is not part of the state
                except OSError as exc:
                    raise self._fail("read", child_rel, exc) from exc
                if child.startswith(TMP_PREFIX):
                    self.debris.append(child_rel)
                    continue
                if self.exclude is not None and self.exclude(child_rel, st):
                    continue
                yield self._entry(dir_fd, child, child_rel, st)
                if stat.S_ISDIR(st.st_mode):
                    stack.append(self._open_dir(dir_fd, child, child_rel))
        finally:
            for dir_fd, _rel, _names in stack:
                os.close(dir_fd)
            self._listed.clear()
            os.close(parent)
            self._flush_cache()

    def _open_dir(self, parent_fd: int, name: str, rel: str) -> tuple[int, str, Iterator[str]]:
        try:
            fd = open_noatime(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=parent_fd)
        except OSError as exc:
            if exc.errno == errno.EMFILE:
                raise TerminalConnectorError(
                    f"{self.root} is nested too deeply to walk with the open-file limit "
                    f"(at {rel}); raise it with `ulimit -n` and capture again",
                    target=str(self.root),
                ) from exc
            raise self._fail("list", rel, exc) from exc
        names: list[str] = []
        inodes = array.array("Q")
        try:
            with os.scandir(fd) as listing:
                for e in listing:
                    names.append(e.name)
                    inodes.append(e.inode())
        except OSError as exc:
            os.close(fd)
            raise self._fail("list", rel, exc) from exc
        if len(names) <= _LISTED_MAX:   # a huge directory is looked up file by file
            self._listed[fd] = _Listing(dict(zip(names, inodes, strict=True)))
        del inodes
        names.sort()
        return fd, rel, iter(names)

    def _cached(self, cache: DigestCache, dir_fd: int, name: str,
                st: os.stat_result) -> str | None:
        """``cache``'s digest for the unchanged file ``st``: looked up for the whole
        directory at its first file (one query, not one per file) when the cache can, and
        the listing's inode numbers are the files' own (not on every overlay)."""
        listing = self._listed.get(dir_fd)
        if listing is not None and listing.inodes.get(name) == st.st_ino:
            if listing.dev == -1:   # the directory's first file: ask for all of them
                listing.dev = st.st_dev
                listing.rows = cache.cached_digests(st.st_dev, list(listing.inodes.values()))
            if listing.rows is not None and listing.dev == st.st_dev:
                row = listing.rows.get(st.st_ino)
                if row is None or row[:3] != (st.st_size, st.st_mtime_ns, st.st_ctime_ns):
                    return None
                return row[3]
        return cache.cached_digest(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                                   st.st_ctime_ns)

    def _reuse(self, prev: FileEntry, ftype: str, st: os.stat_result) -> FileEntry | None:
        """``prev`` (with the current atime) when its source provably did not change."""
        if (prev.type != ftype or prev.inode != st.st_ino or prev.ctime_ns != st.st_ctime_ns
                or prev.mtime_ns != st.st_mtime_ns or prev.hardlink_to is not None
                or (ftype != "dir" and st.st_nlink != 1)):
            return None
        if ftype == "file":
            if prev.digest is None or prev.size != st.st_size:
                return None
            if self.max_file_size is not None and st.st_size > self.max_file_size:
                return None
            if self.store_content and not self.blobs.exists(prev.digest):  # type: ignore[union-attr]
                return None
        if prev.atime_ns == st.st_atime_ns:
            return prev
        return prev.model_copy(update={"atime_ns": st.st_atime_ns})

    def _entry(self, dir_fd: int, name: str, rel: str, st: os.stat_result) -> FileEntry:
        ftype = file_type(st.st_mode)
        if self._previous is not None:
            prev = self._previous.get(rel)
            if prev is not None and (reused := self._reuse(prev, ftype, st)) is not None:
                return reused
        digest = None
        link_target = None
        hardlink_to = None
        rdev = None
        size = st.st_size if ftype == "file" else 0
        extents = None
        xattrs = None
        ctime_ns = st.st_ctime_ns
        if ftype != "dir" and st.st_nlink > 1:
            ident = (st.st_dev, st.st_ino)
            hardlink_to = self._links.get(ident)
            if hardlink_to is None:
                self._links[ident] = rel
        if ftype == "file":
            digest, size, extents, xattrs = self._file(dir_fd, name, rel, st)
        elif ftype == "symlink":
            link_target = os.readlink(name, dir_fd=dir_fd)
            ctime_ns = self._keep_link_atime(dir_fd, name, st)
        elif ftype in ("chardev", "blockdev"):
            rdev = (os.major(st.st_rdev), os.minor(st.st_rdev))
        # the model's validator called directly: FileEntry(...) would do the same
        # through a keyword-argument wrapper that costs a third more
        return _VALIDATE_ENTRY({
            "path": rel,
            "type": ftype,
            "size": size,
            "digest": digest,
            "link_target": link_target,
            "hardlink_to": hardlink_to,
            "mode": stat.S_IMODE(st.st_mode),
            "uid": st.st_uid,
            "gid": st.st_gid,
            "mtime_ns": st.st_mtime_ns,
            "atime_ns": st.st_atime_ns,
            "xattrs": (read_xattrs(at_path(dir_fd, name, lambda: self.root / rel))
                       if xattrs is None else xattrs),
            "rdev": rdev,
            "extents": extents,
            "inode": st.st_ino,
            "ctime_ns": ctime_ns,
        })

    @staticmethod
    def _keep_link_atime(dir_fd: int, name: str, st: os.stat_result) -> int:
        """Undo the atime move of a readlink(); the symlink's ctime as left after it.

        readlink() moves a symlink's atime and there is no O_NOATIME for it: the
        recorded atime is put back so a capture leaves no trace.  That moves the
        ctime, which is recorded as it is now — else the next capture would see a
        changed symlink, read it again and move the ctime again, every time.
        """
        with contextlib.suppress(OSError):
            if os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_atime_ns != st.st_atime_ns:
                os.utime(name, ns=(st.st_atime_ns, st.st_mtime_ns), dir_fd=dir_fd,
                         follow_symlinks=False)
                return os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_ctime_ns
        return st.st_ctime_ns

    def _file(
        self, dir_fd: int, name: str, rel: str, st: os.stat_result
    ) -> tuple[str | None, int, list[tuple[int, int]] | None, dict[str, str] | None]:
        """Digest, size and data extents of a regular file, and its extended attributes
        when it was opened to be read (``None``: not read, look them up by name)."""
        if self.max_file_size is not None and st.st_size > self.max_file_size:
            self.uncaptured.append(Uncaptured(
                name=rel, kind="file",
                reason=f"{human_bytes(st.st_size)}, over the store's per-file cap of "
                       f"{human_bytes(self.max_file_size)} — raise it with "
                       "`preimage quota --max-file-size` to capture it",
            ))
            return None, st.st_size, None, None
        cache = self.blobs.digest_cache if self.blobs is not None else None
        if cache is not None:
            cached = self._cached(cache, dir_fd, name, st)
            if cached and (not self.store_content or self.blobs.exists(cached)):  # type: ignore[union-attr]
                extents = None
                if st.st_blocks * 512 < st.st_size:   # sparse: its holes are part of the state
                    with contextlib.suppress(OSError):
                        fd = open_noatime(name, os.O_RDONLY, dir_fd=dir_fd)
                        try:
                            extents = data_extents(fd, st.st_size)
                        finally:
                            os.close(fd)
                return cached, st.st_size, extents, None
        try:
            digest, size, extents, xattrs = self._read(dir_fd, name, rel, st)
        except OSError as exc:
            raise self._fail("read", rel, exc) from exc
        if size == st.st_size:
            self._cache_rows.append(
                (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest)
            )
            if len(self._cache_rows) >= _CACHE_BATCH:
                self._flush_cache()
        return digest, size, extents, xattrs

    def _small(self, fd: int, before: os.stat_result) -> tuple[str, int] | None:
        """Store a file under a chunk without holes read whole from ``fd``: ``(digest,
        bytes read)``; ``None`` (its offset moved) for any other, read by the general path."""
        if (not self.store_content or self.blobs is None or before.st_size >= _CHUNK
                or before.st_blocks * 512 < before.st_size):
            return None
        parts = []
        got = 0
        while got < _CHUNK:
            part = os.read(fd, _CHUNK - got)
            if not part:
                break
            parts.append(part)
            got += len(part)
        if got >= _CHUNK:   # it grew past a chunk while read: the streaming path
            return None
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        return self.blobs.put_bytes(data), got

    def _read(
        self, dir_fd: int, name: str, rel: str, st: os.stat_result
    ) -> tuple[str, int, list[tuple[int, int]] | None, dict[str, str]]:
        """Digest, bytes read, data extents, and the extended attributes read from the
        same open file (one path lookup fewer than by name)."""
        for attempt in (1, 2):
            fd = open_noatime(name, os.O_RDONLY, dir_fd=dir_fd)
            try:
                before = os.fstat(fd)
                small = self._small(fd, before)
            except BaseException:
                os.close(fd)
                raise
            extents = None
            if small is not None:   # most files: one read, no file object around it
                try:
                    digest, count = small
                    after = os.fstat(fd)
                    xattrs = read_xattrs(fd)
                finally:
                    os.close(fd)
            else:
                with os.fdopen(fd, "rb") as fh:
                    fh.seek(0)
                    holes = before.st_blocks * 512 < before.st_size
                    extents = data_extents(fd, before.st_size) if holes else None
                    counter = _Counting(fh)
                    cloned = None
                    if (self.store_content and self.blobs is not None
                            and before.st_size >= CLONE_MIN):
                        cloned = self.blobs.put_clone(fd)   # a reflink where the fs has them
                    if cloned is not None:
                        digest, counter.count = cloned
                    elif self.store_content and self.blobs is not None:
                        digest = self.blobs.put_file(counter)  # type: ignore[arg-type]
                    else:
                        hasher = hashlib.sha256()
                        while chunk := counter.read(_CHUNK):
                            hasher.update(chunk)
                        digest = hasher.hexdigest()
                    after = os.fstat(fd)
                    xattrs = read_xattrs(fd)
                count = counter.count
            steady = (
                count == before.st_size == after.st_size
                and before.st_mtime_ns == after.st_mtime_ns
                and before.st_ino == st.st_ino
            )
            if steady:
                return digest, count, extents, xattrs
            if attempt == 2:
                self.uncaptured.append(Uncaptured(
                    name=rel, kind="file",
                    reason=f"changed while it was read ({before.st_size} bytes at the start, "
                           f"{after.st_size} at the end, {count} read); the stored copy "
                           "may mix old and new bytes — capture again when it is quiet",
                ))
                return digest, count, None, xattrs
        raise AssertionError("unreachable")

    def _flush_cache(self) -> None:
        cache = self.blobs.digest_cache if self.blobs is not None else None
        if cache is not None and self._cache_rows:
            cache.cache_digests(self._cache_rows)
        self._cache_rows = []
