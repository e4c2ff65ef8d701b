"""What a stopped syscall is about to change, as paths resolved the kernel's way.

:func:`judge` turns one notification into a list of :class:`Change`: ``name``
(an entry is created, removed or replaced: the syscall does not follow its
last symlink), ``drop`` (a name is removed and what it named is not kept by
the call: ``unlink``, the target of a ``rename``), ``rmdir`` (an empty
directory is removed), ``content`` (the bytes of the file a path names),
``meta`` (only its mode, owner, times or xattrs).  An empty list means the
syscall
changes nothing (a read-only ``openat2``, ``O_CREAT`` on a file that exists,
``rmdir`` of a directory that is not empty, a bind to an abstract socket).
``foreign`` is a path in a sandbox's private mount, not reachable from here, or one
that names another file here than the one the sandboxed call changes.
:class:`Unjudgeable` means the supervisor cannot tell: the syscall is refused.
"""

from __future__ import annotations

import os
import stat
import struct
from dataclasses import dataclass
from typing import Literal

from preimage.observe.kernel import Notification
from preimage.observe.paths import (
    AT_EMPTY_PATH,
    AT_FDCWD,
    AT_SYMLINK_NOFOLLOW,
    ForeignPath,
    fd_file,
    read_bytes,
    read_string,
    resolve,
)
from preimage.observe.syscalls import (
    NAMES,
    O_CREAT,
    O_NOFOLLOW,
    O_RDWR,
    O_TRUNC,
    O_WRONLY,
    WRITE_FLAGS,
)

_O_TMPFILE_BIT = 0o20000000   # with O_DIRECTORY: an unnamed file, visible only once linked
_AF_UNIX = 1


class Unjudgeable(Exception):
    """The supervisor cannot tell what this syscall would change."""


@dataclass(frozen=True)
class Change:
    """One path a syscall is about to change, and how."""

    how: Literal["name", "drop", "rmdir", "content", "meta", "foreign"]
    path: str
    reason: str = ""   # for ``foreign``: why the path here is not what changes


def _path(n: Notification, arg: int, dirfd: int | None, *, follow: bool,
          flags: int = 0) -> str:
    raw = read_string(n.pid, n.args[arg]) if n.args[arg] else b""
    if not raw and not flags & AT_EMPTY_PATH and n.args[arg]:
        raise Unjudgeable("an empty path without AT_EMPTY_PATH")
    base = AT_FDCWD if dirfd is None else n.args[dirfd]
    return resolve(n.pid, base, raw, follow=follow)


def _renamed(n: Notification, arg: int, dirfd: int | None) -> Change:
    """One side of a rename; a side in a sandbox's private mount is ``foreign`` (the
    other side is still recorded)."""
    try:
        return Change("name", _path(n, arg, dirfd, follow=False))
    except ForeignPath as exc:
        return Change("foreign", exc.path, exc.reason)


def _fd(n: Notification, arg: int, how: Literal["content", "meta"] = "content"
        ) -> list[Change]:
    try:
        where = fd_file(n.pid, n.args[arg])
    except ForeignPath as exc:
        return [Change("foreign", exc.path, exc.reason)]
    if not where.startswith("/") or where.endswith(" (deleted)"):
        return []   # a pipe, socket, memfd or unlinked file: no path to keep
    return [Change(how, where)]


def _open(n: Notification, dirfd: int | None, arg: int, flags: int) -> list[Change]:
    if not flags & WRITE_FLAGS or flags & _O_TMPFILE_BIT:
        return []
    path = _path(n, arg, dirfd, follow=not flags & O_NOFOLLOW)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return [Change("name", path)] if flags & O_CREAT and not _fails_for_lack_of(path) \
            else []
    except NotADirectoryError:
        return []   # a file where a directory is named: the open fails with ENOTDIR
    except OSError:
        mode = stat.S_IFREG   # cannot look: assume the file is there and record it
    if stat.S_ISLNK(mode):
        return []   # O_NOFOLLOW on a symlink: the open fails with ELOOP
    if flags & (O_WRONLY | O_RDWR | O_TRUNC):
        return [Change("content", path)]
    return []   # O_CREAT alone on a file that exists


def _at_flags(n: Notification, arg: int) -> int:
    return n.args[arg] & 0xFFFFFFFF


def _meta_at(n: Notification, dirfd: int, arg: int, flags: int) -> list[Change]:
    if not n.args[arg] or (flags & AT_EMPTY_PATH and not read_string(n.pid, n.args[arg])):
        return _fd(n, dirfd, "meta")
    return [Change("meta", _path(n, arg, dirfd, follow=not flags & AT_SYMLINK_NOFOLLOW,
                                 flags=flags))]


def _fails_for_lack_of(path: str) -> bool:
    """Whether a syscall making ``path`` fails with ``ENOENT``/``ENOTDIR`` because its
    directory is missing or not a directory (``path`` is resolved: its directory is not a
    symlink).  What cannot be looked at does not count (it is recorded)."""
    try:
        return not stat.S_ISDIR(os.lstat(os.path.dirname(path) or "/").st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _rmdir(path: str) -> list[Change]:
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return []   # rmdir of a file or a symlink fails with ENOTDIR
    except FileNotFoundError:
        return []
    except OSError:
        pass
    try:
        with os.scandir(path) as it:
            if next(it, None) is not None:
                return []   # not empty: rmdir fails with ENOTEMPTY
    except OSError:
        pass
    return [Change("rmdir", path)]


def _existing(how: Literal["name", "drop", "content", "meta"], path: str) -> list[Change]:
    """A syscall that acts on an existing path: on a missing one it fails with ENOENT
    and changes nothing (``rm -f`` of what is not there)."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError:
        pass
    return [Change(how, path)]


_RENAME_EXCHANGE = 2


def _rename(source: Change, dest: Change, flags: int = 0) -> list[Change]:
    if source.how == "name" and not _existing("name", source.path):
        return []   # no source: the rename fails
    if dest.how == "name" and not flags & _RENAME_EXCHANGE:
        # what the target named loses its last name here (an exchange keeps it at the source)
        dest = Change("drop", dest.path)
    return [source, dest]


def _created(path: str) -> list[Change]:
    """A syscall that only creates: where something exists it fails with EEXIST
    (``mkdir -p`` tries every directory of its path)."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return [] if _fails_for_lack_of(path) else [Change("name", path)]
    except NotADirectoryError:
        return []
    except OSError:
        pass
    else:
        return []
    return [Change("name", path)]


_AT_SYMLINK_FOLLOW = 0x400


def _linked(source: str, name: str) -> list[Change]:
    """A new hard link: the new name, and the file it links — its link count and ctime
    change, and a restore that removes the new name must leave it as it was."""
    created = _created(name)
    return [*created, *_existing("meta", source)] if created else []


def _bind(n: Notification) -> list[Change]:
    size = min(n.args[2] & 0xFFFFFFFF, 110)
    if size < 3:
        return []
    addr = read_bytes(n.pid, n.args[1], size)
    family, = struct.unpack_from("=H", addr, 0)
    if family != _AF_UNIX or addr[2] == 0:
        return []   # not a Unix socket, or an abstract one: no file
    raw = addr[2:].split(b"\0", 1)[0]
    return [Change("name", resolve(n.pid, AT_FDCWD, raw, follow=False))]


def refused_read_only(pid: int, change: Change) -> bool:
    """Whether ``change`` will fail with ``EROFS``: a name made or removed in a directory on
    a read-only mount, or content or metadata changed where both the path and its
    directory are on read-only mounts (a symlink's own mount is its directory's).  Seen
    through ``/proc/<pid>/root``, so a sandbox's read-only binds count; anything that
    cannot be looked at counts as writable (it is recorded)."""
    if change.how == "foreign":
        return False
    parent = os.path.dirname(change.path) or "/"
    places = [parent] if change.how in ("name", "drop", "rmdir") else [change.path, parent]
    try:
        return all(os.statvfs(f"/proc/{pid}/root{p}").f_flag & os.ST_RDONLY for p in places)
    except OSError:
        return False


def judge(n: Notification) -> list[Change]:
    """The paths syscall ``n`` is about to change (see the module docstring)."""
    name = NAMES.get(n.nr)
    a = n.args
    if name == "open":
        return _open(n, None, 0, a[1])
    if name == "openat":
        return _open(n, 0, 1, a[2])
    if name == "creat":
        return _open(n, None, 0, O_CREAT | O_WRONLY | O_TRUNC)
    if name == "openat2":
        flags, = struct.unpack("=Q", read_bytes(n.pid, a[2], 8))
        return _open(n, 0, 1, flags)
    if name == "truncate":
        return [Change("content", _path(n, 0, None, follow=True))]
    if name in ("ftruncate", "fallocate"):
        return _fd(n, 0)
    if name == "unlink":
        return _existing("drop", _path(n, 0, None, follow=False))
    if name == "rmdir":
        return _rmdir(_path(n, 0, None, follow=False))
    if name == "unlinkat":
        path = _path(n, 1, 0, follow=False)
        return _rmdir(path) if _at_flags(n, 2) & 0x200 else _existing("drop", path)
    if name == "rename":
        return _rename(_renamed(n, 0, None), _renamed(n, 1, None))
    if name == "renameat":
        return _rename(_renamed(n, 1, 0), _renamed(n, 3, 2))
    if name == "renameat2":
        return _rename(_renamed(n, 1, 0), _renamed(n, 3, 2), _at_flags(n, 4))
    if name in ("mkdir", "mknod"):
        return _created(_path(n, 0, None, follow=False))
    if name in ("mkdirat", "mknodat"):
        return _created(_path(n, 1, 0, follow=False))
    if name == "link":   # Linux's link() does not follow a symlink it is given
        return _linked(_path(n, 0, None, follow=False), _path(n, 1, None, follow=False))
    if name == "linkat":
        return _linked(_path(n, 1, 0, follow=bool(_at_flags(n, 4) & _AT_SYMLINK_FOLLOW),
                             flags=_at_flags(n, 4)),
                       _path(n, 3, 2, follow=False))
    if name == "symlink":
        return _created(_path(n, 1, None, follow=False))
    if name == "symlinkat":
        return _created(_path(n, 2, 1, follow=False))
    if name in ("chmod", "chown", "utime", "utimes", "setxattr", "removexattr"):
        return [Change("meta", _path(n, 0, None, follow=True))]
    if name in ("lchown", "lsetxattr", "lremovexattr"):
        return [Change("meta", _path(n, 0, None, follow=False))]
    if name in ("fchmod", "fchown", "fsetxattr", "fremovexattr"):
        return _fd(n, 0, "meta")
    if name in ("fchmodat", "futimesat"):
        return [Change("meta", _path(n, 1, 0, follow=True))]
    if name == "fchmodat2":
        return _meta_at(n, 0, 1, _at_flags(n, 3))
    if name == "fchownat":
        return _meta_at(n, 0, 1, _at_flags(n, 4))
    if name == "utimensat":
        return _meta_at(n, 0, 1, _at_flags(n, 3))
    if name in ("setxattrat", "removexattrat"):
        return _meta_at(n, 0, 1, _at_flags(n, 2))
    if name == "bind":
        return _bind(n)
    raise Unjudgeable(f"{name or f'syscall {n.nr}'} names no path the supervisor can resolve")
