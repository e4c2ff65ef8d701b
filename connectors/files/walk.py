"""Reading a tree without changing it: lstat, xattrs and streamed hashing.

Files and directories are opened with ``O_NOATIME`` where the kernel allows
it (owner or root), so capturing does not move the access times it records;
symlinks are never followed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from preimage._errors import InvalidTargetError, TerminalConnectorError
from preimage.snapshot_schemas.files import FileEntry, FileType

if TYPE_CHECKING:
    from preimage._blobs import BlobStore

_NOATIME = getattr(os, "O_NOATIME", 0)

# Decides whether a path (relative to the walk root, never ".") is left out of
# the walk, with its subtree; it gets the entry's lstat result.
Exclude = Callable[[str, os.stat_result], bool]
_CACHE_BATCH = 500


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


def open_noatime(path: str | Path, flags: int) -> int:
    """``os.open`` with ``O_NOFOLLOW | O_NOATIME``, retrying without NOATIME when refused."""
    flags |= os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(path, flags | _NOATIME)
    except PermissionError:
        return os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.EINVAL and _NOATIME:
            return os.open(path, flags)
        raise


def read_xattrs(path: str | Path) -> dict[str, str]:
    """Extended attributes of ``path`` (not following symlinks), values as hex."""
    out: dict[str, str] = {}
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return out
    for name in sorted(names):
        with contextlib.suppress(OSError):
            out[name] = os.getxattr(path, name, follow_symlinks=False).hex()
    return out


def hash_file(path: str | Path) -> str:
    """sha256 of a file's bytes, read without moving its atime."""
    fd = open_noatime(path, os.O_RDONLY)
    hasher = hashlib.sha256()
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(1 << 20):
            hasher.update(chunk)
    return hasher.hexdigest()


def resolve_root(path: str) -> Path:
    """The absolute, normalised path of a ``file://`` target (symlinks not resolved)."""
    if not path or not path.startswith("/"):
        raise InvalidTargetError(f"file://{path}", "the path must be absolute: file:///abs/path")
    return Path(os.path.normpath(path))


class Walker:
    """Walks a tree in a fixed order (pre-order, names sorted) yielding entries.

    With ``store_content`` regular files are stored in ``blobs`` (reusing
    unchanged blobs via the digest cache); without it they are only hashed
    (planning a restore).  ``exclude`` leaves paths (and their subtrees) out,
    e.g. the ``.git`` directory of a working tree.
    """

    def __init__(
        self,
        root: Path,
        blobs: BlobStore | None,
        *,
        store_content: bool = True,
        exclude: Exclude | None = None,
    ) -> None:
        self.root = root
        self.blobs = blobs
        self.store_content = store_content and blobs is not None
        self.exclude = exclude
        self._cache_rows: list[tuple[int, int, int, int, int, str]] = []
        self._links: dict[tuple[int, int], str] = {}

    def entries(self) -> Iterator[FileEntry]:
        """Every entry under the root, the root itself first as ``"."``."""
        try:
            st = os.lstat(self.root)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise TerminalConnectorError(
                f"cannot read {self.root}: {exc.strerror}", target=str(self.root)
            ) from exc
        try:
            yield self._entry(".", self.root, st)
            if stat.S_ISDIR(st.st_mode):
                yield from self._walk_dir(self.root, "")
        finally:
            self._flush_cache()

    def _walk_dir(self, directory: Path, rel: str) -> Iterator[FileEntry]:
        try:
            fd = open_noatime(directory, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise TerminalConnectorError(
                f"cannot list {directory}: {exc.strerror} — run as a user that can read it",
                target=str(self.root),
            ) from exc
        try:
            with os.scandir(fd) as it:
                names = sorted(e.name for e in it)
        finally:
            os.close(fd)
        for name in names:
            path = directory / name
            child_rel = f"{rel}/{name}" if rel else name
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue  # vanished while we walked: it is not part of the state
            if self.exclude is not None and self.exclude(child_rel, st):
                continue
            yield self._entry(child_rel, path, st)
            if stat.S_ISDIR(st.st_mode):
                yield from self._walk_dir(path, child_rel)

    def _entry(self, rel: str, path: Path, st: os.stat_result) -> FileEntry:
        ftype = file_type(st.st_mode)
        digest = None
        link_target = None
        hardlink_to = None
        rdev = None
        if ftype != "dir" and st.st_nlink > 1:
            ident = (st.st_dev, st.st_ino)
            hardlink_to = self._links.get(ident)
            if hardlink_to is None:
                self._links[ident] = rel
        if ftype == "file":
            digest = self._digest(path, st)
        elif ftype == "symlink":
            link_target = os.readlink(path)
            self._keep_link_atime(path, st)
        elif ftype in ("chardev", "blockdev"):
            rdev = (os.major(st.st_rdev), os.minor(st.st_rdev))
        return FileEntry(
            path=rel,
            type=ftype,
            size=st.st_size if ftype == "file" else 0,
            digest=digest,
            link_target=link_target,
            hardlink_to=hardlink_to,
            mode=stat.S_IMODE(st.st_mode),
            uid=st.st_uid,
            gid=st.st_gid,
            mtime_ns=st.st_mtime_ns,
            atime_ns=st.st_atime_ns,
            xattrs=read_xattrs(path),
            rdev=rdev,
            inode=st.st_ino,
            ctime_ns=st.st_ctime_ns,
        )

    @staticmethod
    def _keep_link_atime(path: Path, st: os.stat_result) -> None:
        # readlink() moves a symlink's atime and there is no O_NOATIME for it:
        # put the recorded atime back so a capture leaves no trace.
        with contextlib.suppress(OSError):
            if os.lstat(path).st_atime_ns != st.st_atime_ns:
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)

    def _digest(self, path: Path, st: os.stat_result) -> str:
        cache = self.blobs.digest_cache if self.blobs is not None else None
        if cache is not None:
            cached = cache.cached_digest(
                st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns
            )
            if cached and (not self.store_content or self.blobs.exists(cached)):  # type: ignore[union-attr]
                return cached
        try:
            if not self.store_content or self.blobs is None:
                digest = hash_file(path)
            else:
                fd = open_noatime(path, os.O_RDONLY)
                with os.fdopen(fd, "rb") as fh:
                    digest = self.blobs.put_file(fh)
        except OSError as exc:
            raise TerminalConnectorError(
                f"cannot read {path}: {exc.strerror}", target=str(self.root)
            ) from exc
        self._cache_rows.append(
            (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest)
        )
        if len(self._cache_rows) >= _CACHE_BATCH:
            self._flush_cache()
        return digest

    def _flush_cache(self) -> None:
        cache = self.blobs.digest_cache if self.blobs is not None else None
        if cache is not None and self._cache_rows:
            cache.cache_digests(self._cache_rows)
        self._cache_rows = []
