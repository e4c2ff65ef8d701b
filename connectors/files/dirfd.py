"""Writing under a root through directory file descriptors, never through a symlink.

:class:`TreeHandle` reaches every path of a restore component by component
from the target's parent, each directory opened ``O_PATH | O_DIRECTORY |
O_NOFOLLOW`` relative to the one before, and does every write with the
``*at`` system calls relative to the entry's own directory.  A component that
is not a real directory — a symlink put in the way, a file — stops the
operation with :class:`UnsafePathError`; nothing is written through it or
outside the root.  The target's parent itself is checked against the real
path recorded at capture: if it resolves elsewhere now, nothing is written.
Paths longer than PATH_MAX are no obstacle, as no call sees a whole path.

**Staged subtrees.** A directory the restore creates (it is not there live) is
built under a hidden name beside its final one (``.preimage-tmp-stage-*``),
everything beneath it written in place — no temp file and rename per entry, no
stat of what is there, since nothing is — and renamed to its name only once its
subtree is written and its metadata set (:meth:`TreeHandle.publish`).  So a
restore that fails or is killed before then leaves nothing of that subtree where
it belongs; the next restore removes the hidden leftover (the walk lists one
inside the target as debris; one beside the target's root — a root the restore
creates — is removed by :meth:`TreeHandle.sweep_stages` unless a running restore
holds its ``flock``).

**The parent's times.** The target's parent lies outside the target, but writing the
root itself (a file target's temp file and rename, a staged root's rename, a probe)
moves the parent's mtime.  Its ``(atime, mtime)`` are noted when the restore first
reaches it, before any write, and set back when the restore closes if they moved: a
restore, or an undo of one file, leaves the directory around its target as it found it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from preimage.connectors.files.walk import TMP_PREFIX, at_path
from preimage.interface import crash as _crash
from preimage.interface.blobs import FICLONE, NO_CLONE
from preimage.interface.errors import RestoreError, UnsafePathError

_DIR = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_CACHED = 256
STAGE_PREFIX = f"{TMP_PREFIX}stage-"


def shown(path: Path | str) -> str:
    """A path as a person reads it (bytes that are not UTF-8 as ``\\xNN``)."""
    return os.fsencode(str(path)).decode(errors="backslashreplace")


class Meta(NamedTuple):
    """What :meth:`TreeHandle.set_metadata` sets, for a file that gets it as it is written."""

    xattrs: dict[str, str]
    uid: int
    gid: int
    mode: int
    atime_ns: int
    mtime_ns: int


class TreeHandle:
    """Directory fds for one restore root (see the module docstring)."""

    def __init__(self, root: Path, expected_parent: str | None) -> None:
        parent = str(root.parent)
        real = os.path.realpath(parent)
        if expected_parent is not None and real != expected_parent:
            raise UnsafePathError(
                shown(root),
                f"its parent {shown(parent)} now resolves to {shown(real)}, not "
                f"{shown(expected_parent)} as when it was captured — a symlink was put in its "
                "way",
            )
        self.real_parent = Path(real)
        self.root = self.real_parent / root.name
        self.name = root.name
        self._parent: int | None = None
        self._dirs: dict[str, int] = {}
        # the top of each subtree being built, by its final path -> its hidden name
        self._staged: dict[str, str] = {}
        self._fresh: set[str] = set()    # directories made by this restore, not yet published
        self._held: dict[str, int] = {}  # a root staged beside the target: its flock'ed fd
        self._parent_times: tuple[int, int] | None = None   # before the restore's writes

    # ------------------------------------------------------------ reaching directories
    def close(self) -> None:
        """Remove every subtree still staged (its restore failed), then close every fd."""
        try:
            for rel in sorted(self._staged, key=lambda r: -r.count("/")):
                self.discard(rel)
        finally:
            self.forget_dirs()
            for fd in self._held.values():
                os.close(fd)
            self._held.clear()
            if self._parent is not None:
                self._put_back_parent_times()
                os.close(self._parent)
                self._parent = None

    def forget_dirs(self, under: str | None = None) -> None:
        """Drop cached directory fds: all, or those of ``under`` and below (a directory
        removed or replaced)."""
        for rel in list(self._dirs):
            if under is None or under in (".", rel) or rel.startswith(under + "/"):
                os.close(self._dirs.pop(rel))

    def abs(self, rel: str) -> Path:
        """The absolute path of ``rel`` (for messages)."""
        return self.root if rel == "." else self.root / rel

    def parent_exists(self) -> bool:
        """Whether the target's parent directory is there."""
        return self.real_parent.is_dir()

    def make_parent(self) -> None:
        """Create the target's parent (and its parents), as ``mkdir -p`` on the real path."""
        try:
            self.real_parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RestoreError(
                f"cannot create {shown(self.real_parent)}: {exc.strerror}; nothing was written"
            ) from exc

    def parent_fd(self) -> int:
        """The target's parent, reached from ``/`` without following a symlink."""
        if self._parent is None:
            fd = os.open("/", _DIR)
            try:
                for part in self.real_parent.parts[1:]:
                    nxt = self._step(fd, part, self.real_parent)
                    os.close(fd)
                    fd = nxt
            except BaseException:
                os.close(fd)
                raise
            self._parent = fd
            with contextlib.suppress(OSError):
                st = os.stat(".", dir_fd=fd)
                self._parent_times = (st.st_atime_ns, st.st_mtime_ns)
        return self._parent

    def _put_back_parent_times(self) -> None:
        """Set the parent's times back to those noted before the restore's first write,
        if they moved (the ctime is the kernel's own)."""
        if self._parent is None or self._parent_times is None:
            return
        with contextlib.suppress(OSError):
            st = os.stat(".", dir_fd=self._parent)
            if st.st_mtime_ns != self._parent_times[1]:
                os.utime(".", ns=self._parent_times, dir_fd=self._parent)

    def _step(self, fd: int, part: str, where: Path | str | Callable[[], Path]) -> int:
        try:
            return os.open(part, _DIR, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                shown_where = shown(where() if callable(where) else where)
                raise UnsafePathError(
                    shown_where, f"{part!r} on the way is not a real directory (a symlink?)"
                ) from exc
            raise

    def dir_fd(self, rel: str) -> int:
        """The directory ``rel`` ("." is the root), every component a real directory."""
        fd = self._dirs.get(rel)
        if fd is not None:
            return fd
        if rel == ".":
            fd = self._step(self.parent_fd(), self._staged.get(".", self.name), self.root)
        else:
            up, _, name = rel.rpartition("/")
            fd = self._step(self.dir_fd(up or "."), self._staged.get(rel, name),
                            lambda: self.abs(rel))
        if len(self._dirs) >= _MAX_CACHED:   # keep only the chain leading here
            for cached in list(self._dirs):
                if not (cached == "." or rel.startswith(cached + "/")):
                    os.close(self._dirs.pop(cached))
        self._dirs[rel] = fd
        return fd

    def locate(self, rel: str) -> tuple[int, str]:
        """``(fd of the directory holding rel, rel's name in it)``."""
        if rel == ".":
            return self.parent_fd(), self._staged.get(".", self.name)
        up, _, name = rel.rpartition("/")
        if self._staged and rel in self._staged:
            name = self._staged[rel]
        return self.dir_fd(up or "."), name

    def lstat(self, rel: str) -> os.stat_result | None:
        """``lstat`` of ``rel``, or None when it is not there."""
        fd, name = self.locate(rel)
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    # ------------------------------------------------------------ writing
    def make_writable(self, rel: str) -> None:
        """Give the owner write and search permission on directory ``rel`` if it lacks them."""
        if rel in self._fresh:   # made 0700 by this restore
            return
        with contextlib.suppress(OSError, UnsafePathError):
            fd, name = self.locate(rel)
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode) and (st.st_mode & 0o300) != 0o300:
                os.chmod(name, stat.S_IMODE(st.st_mode) | 0o700, dir_fd=fd)

    def remove(self, rel: str, *, only_if_empty: bool) -> str:
        """Remove ``rel`` (a directory with its subtree, unless ``only_if_empty``);
        return a reason when it is kept instead."""
        fd, name = self.locate(rel)
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return ""
        self.make_writable(_parent(rel))
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(name, dir_fd=fd)
            return ""
        self.forget_dirs(rel)
        if only_if_empty:
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                return "holds paths this restore leaves alone (excluded from the capture)"
            return ""
        _rmtree_at(fd, name)
        return ""

    def _replace_with(self, rel: str, make: Callable[[int, str], None]) -> None:
        """Create ``rel`` as a temp entry beside it, then rename it over whatever is there
        (in a staged subtree: in place, as nobody sees it until it is published)."""
        fd, name = self.locate(rel)
        if _parent(rel) in self._fresh:
            make(fd, name)
            return
        tmp = f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        make(fd, tmp)
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                self.forget_dirs(rel)
                _rmtree_at(fd, name)
        except FileNotFoundError:
            pass
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)

    def mkdir(self, rel: str) -> None:
        """Make ``rel`` a real directory (replacing a non-directory), owner-writable.  One
        that is not there is staged (see the module docstring) until :meth:`publish`."""
        fd, name = self.locate(rel)
        if rel != "." and _parent(rel) in self._fresh:
            os.mkdir(name, 0o700, dir_fd=fd)
            self._fresh.add(rel)
            return
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is None:
            self._stage(rel, fd)
            return
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(name, dir_fd=fd)
            os.mkdir(name, 0o700, dir_fd=fd)
        self.make_writable(rel)

    def _stage(self, rel: str, fd: int) -> None:
        """Make directory ``rel`` under a hidden name in its parent ``fd``."""
        hidden = f"{STAGE_PREFIX}{self._stage_tag() if rel == '.' else ''}" \
                 f"{os.getpid()}-{secrets.token_hex(4)}"
        os.mkdir(hidden, 0o700, dir_fd=fd)
        if rel == ".":   # beside the target: held, so another restore's sweep spares it
            held = os.open(hidden, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                           dir_fd=fd)
            fcntl.flock(held, fcntl.LOCK_EX)
            self._held[rel] = held
        self._staged[rel] = hidden
        self._fresh.add(rel)

    def _stage_tag(self) -> str:
        # names this root's staging beside it, whatever the length of its name
        return hashlib.sha256(os.fsencode(self.name)).hexdigest()[:16] + "-"

    def staged(self, rel: str) -> bool:
        """Whether ``rel`` is the top of a subtree built under a hidden name."""
        return rel in self._staged

    def publish(self, rel: str) -> None:
        """Rename the staged subtree ``rel`` to its name (over whatever appeared there
        since the plan, as any write of the restore replaces it)."""
        _crash.point("restore-publish")
        hidden = self._staged.pop(rel)
        fd, name = self.locate(rel)
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None:
            if stat.S_ISDIR(st.st_mode):
                _rmtree_at(fd, name)
            else:
                os.unlink(name, dir_fd=fd)
        os.rename(hidden, name, src_dir_fd=fd, dst_dir_fd=fd)
        # cached fds beneath stay right: they name the directories, not their paths
        self._fresh = {d for d in self._fresh if not (d == rel or _under(d, rel))}
        held = self._held.pop(rel, None)
        if held is not None:
            os.close(held)

    def discard(self, rel: str) -> None:
        """Remove the staged subtree ``rel`` (its restore did not finish)."""
        hidden = self._staged.pop(rel)
        self._fresh = {d for d in self._fresh if not (d == rel or _under(d, rel))}
        self.forget_dirs(rel)
        with contextlib.suppress(OSError, UnsafePathError):
            fd, _name = self.locate(rel)
            _rmtree_at(fd, hidden)

    def sweep_stages(self) -> None:
        """Remove what killed restores of this root left beside it (staged, never
        published); a stage a running restore holds is left to it."""
        fd = self.parent_fd()
        prefix = STAGE_PREFIX + self._stage_tag()
        try:   # listed through a descriptor opened for reading (``fd`` is O_PATH)
            listing = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
            try:
                names = [n for n in os.listdir(listing) if n.startswith(prefix)]
            finally:
                os.close(listing)
        except OSError:
            return
        for name in names:
            try:
                probe = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                                | os.O_CLOEXEC, dir_fd=fd)
            except OSError:
                continue
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue   # a running restore builds it
            finally:
                os.close(probe)
            with contextlib.suppress(OSError):
                _rmtree_at(fd, name)

    def write_file(self, rel: str, chunks: Iterable[bytes], size: int,
                   extents: list[tuple[int, int]] | None, meta: Meta | None = None) -> None:
        """Write a regular file from ``chunks`` (holes left where ``extents`` has none);
        with ``meta``, its metadata too, through the descriptor it was written by (no
        path looked up again for it), as :meth:`set_metadata` would set it."""
        self._make_file(rel, lambda: chunks, size, extents, None, meta)

    def clone_file(self, rel: str, source_fd: int, chunks: Callable[[], Iterable[bytes]],
                   size: int, extents: list[tuple[int, int]] | None,
                   meta: Meta | None = None) -> None:
        """Write a regular file as a reflink of ``source_fd`` (FICLONE: its extents are
        shared, nothing is copied); where the filesystem cannot, from ``chunks()``."""
        self._make_file(rel, chunks, size, extents, source_fd, meta)

    def _make_file(self, rel: str, chunks: Callable[[], Iterable[bytes]], size: int,
                   extents: list[tuple[int, int]] | None, source_fd: int | None,
                   meta: Meta | None) -> None:
        def make(fd: int, tmp: str) -> None:
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                          0o600, dir_fd=fd)
            try:
                try:
                    cloned = False
                    if source_fd is not None:
                        try:
                            fcntl.ioctl(out, FICLONE, source_fd)
                            cloned = True
                        except OSError as exc:
                            if exc.errno not in NO_CLONE:
                                raise
                    if not cloned:
                        _write_sparse(out, chunks(), extents) if extents \
                            else _write_all(out, chunks())
                        if extents is not None:
                            os.ftruncate(out, size)
                    if meta is not None:
                        _set_file_meta(out, meta)
                finally:
                    os.close(out)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=fd)
                raise

        self._replace_with(rel, make)

    def symlink(self, rel: str, target: str) -> None:
        """Make ``rel`` a symlink to ``target`` (verbatim)."""
        self._replace_with(rel, lambda fd, tmp: os.symlink(target, tmp, dir_fd=fd))

    def fifo(self, rel: str) -> None:
        """Make ``rel`` a FIFO."""
        self._replace_with(rel, lambda fd, tmp: os.mkfifo(tmp, 0o600, dir_fd=fd))

    def device(self, rel: str, kind: int, major: int, minor: int) -> None:
        """Make ``rel`` a device node (needs root)."""
        self._replace_with(
            rel, lambda fd, tmp: os.mknod(tmp, kind | 0o600, os.makedev(major, minor), dir_fd=fd)
        )

    def hardlink(self, rel: str, lead: str) -> bool:
        """Make ``rel`` another name of ``lead``; False when ``lead`` is not there."""
        held, lead_name = self.locate(lead)
        lead_fd = os.dup(held)   # locating rel may drop the cached fd
        try:
            try:
                os.stat(lead_name, dir_fd=lead_fd, follow_symlinks=False)
            except FileNotFoundError:
                return False
            self._replace_with(
                rel,
                lambda fd, tmp: os.link(lead_name, tmp, src_dir_fd=lead_fd, dst_dir_fd=fd,
                                        follow_symlinks=False),
            )
        finally:
            os.close(lead_fd)
        return True

    def set_metadata(self, rel: str, *, is_link: bool, xattrs: dict[str, str], uid: int,
                     gid: int, mode: int, atime_ns: int, mtime_ns: int) -> None:
        """xattrs, owner, mode (after chown, which clears setuid), then times."""
        fd, name = self.locate(rel)
        if not is_link:
            _set_xattrs(at_path(fd, name, lambda: self.abs(rel)), xattrs)
        with contextlib.suppress(PermissionError):
            os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
        if not is_link:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISLNK(st.st_mode):
                os.chmod(name, mode, dir_fd=fd)
        os.utime(name, ns=(atime_ns, mtime_ns), dir_fd=fd, follow_symlinks=False)


def _parent(rel: str) -> str:
    return "." if rel == "." else (rel.rpartition("/")[0] or ".")


def _under(path: str, top: str) -> bool:
    return top == "." or path.startswith(top + "/")


def _write_all(fd: int, chunks: Iterable[bytes]) -> None:
    copy_into = getattr(chunks, "copy_into", None)
    if copy_into is not None:   # bytes already on this machine's disk: copied in the kernel
        copy_into(fd)
        return
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            n = os.write(fd, view)
            view = view[n:]


def _write_sparse(fd: int, chunks: Iterable[bytes], extents: list[tuple[int, int]]) -> None:
    """Write only the data regions (the rest stays a hole)."""
    pos = 0
    for chunk in chunks:
        end = pos + len(chunk)
        for start, length in extents:
            a, b = max(start, pos), min(start + length, end)
            if a < b:
                data = memoryview(chunk)[a - pos : b - pos]
                while data:
                    n = os.pwrite(fd, data, a)
                    data, a = data[n:], a + n
        pos = end


def _set_file_meta(fd: int, meta: Meta) -> None:
    """:meth:`TreeHandle.set_metadata` for the regular file open at ``fd``, in its order:
    xattrs, owner, mode (after chown, which clears setuid), then times."""
    _set_xattrs(fd, meta.xattrs)
    with contextlib.suppress(PermissionError):
        os.fchown(fd, meta.uid, meta.gid)
    os.fchmod(fd, meta.mode)
    os.utime(fd, ns=(meta.atime_ns, meta.mtime_ns))


def _set_xattrs(path: str | int, wanted: dict[str, str]) -> None:
    follow = isinstance(path, int)   # a descriptor is the file itself: nothing to follow
    try:
        present = set(os.listxattr(path, follow_symlinks=follow))
    except OSError:
        return
    for name in present - set(wanted):
        with contextlib.suppress(OSError):
            os.removexattr(path, name, follow_symlinks=follow)
    for name, value in wanted.items():
        with contextlib.suppress(OSError):
            os.setxattr(path, name, bytes.fromhex(value), follow_symlinks=follow)


def _rmtree_at(dir_fd: int, name: str) -> None:
    """Remove the directory ``name`` under ``dir_fd`` with its subtree, read-only
    directories included, never following a symlink."""
    with contextlib.suppress(OSError):
        os.chmod(name, 0o700, dir_fd=dir_fd)
    for _top, dirs, _files, fd in os.fwalk(name, dir_fd=dir_fd, follow_symlinks=False):
        for d in dirs:
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(os.stat(d, dir_fd=fd, follow_symlinks=False).st_mode):
                    os.chmod(d, 0o700, dir_fd=fd)
    shutil.rmtree(name, dir_fd=dir_fd)
