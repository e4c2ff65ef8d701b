"""Reading a stopped process's path arguments and resolving them as the kernel will.

A path argument is a pointer into the process: it is read from
``/proc/<pid>/mem``.  A relative path starts at the directory of its ``dirfd``
(``/proc/<pid>/fd/<n>``) or at the process's working directory
(``/proc/<pid>/cwd``); a process whose root is not ``/`` (``chroot``, another
mount namespace) is reached through ``/proc/<pid>/root``.  Every directory
component is then resolved the kernel's way — symlinks followed in order, so
``link/..`` is the parent of the link's *target*, not the directory holding
the link (what ``os.path.normpath`` would wrongly give).  The last component is
followed or not as the syscall does (``unlink`` never follows it; ``open``
does unless ``O_NOFOLLOW``).
"""

from __future__ import annotations

import errno
import os
import re

AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000
AT_SYMLINK_NOFOLLOW = 0x100
PATH_MAX = 4096
_PAGE = 4096
_PSEUDO = ("/dev/", "/proc/", "/sys/")


class UnreadablePath(Exception):
    """A path argument or a descriptor could not be read from the process; ``errno``
    is what the kernel itself would answer (``EFAULT`` for memory, ``EBADF`` for a
    descriptor)."""

    def __init__(self, message: str, errno_value: int = errno.EFAULT) -> None:
        super().__init__(message)
        self.errno = errno_value


NOT_REACHABLE = "not reachable from the supervisor"
OTHER_FILE = "another file there than the one at this path here (a file bound over it)"
NOT_HERE = "the file there is not at this path here"
UNSEEN = "cannot be looked at there"


class ForeignPath(Exception):
    """A path inside a process's own mount namespace that does not reach the same file at
    the same path from the supervisor's (a private ``/tmp`` of a sandbox, a file bound
    over another): it cannot be kept.  ``reason`` says which."""

    def __init__(self, path: str, pid: int, reason: str = NOT_REACHABLE) -> None:
        super().__init__(f"{path} in the mount namespace of process {pid}: {reason}")
        self.path = path
        self.reason = reason


def read_string(pid: int, address: int) -> bytes:
    """The NUL-terminated string at ``address`` in process ``pid``."""
    if address == 0:
        raise UnreadablePath("a NULL path")
    out = b""
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise UnreadablePath(f"cannot open the memory of process {pid}: {exc.strerror}") from exc
    try:
        while len(out) <= PATH_MAX:
            # never read across a page the string may not reach (it could be unmapped)
            size = _PAGE - (address + len(out)) % _PAGE
            chunk = os.pread(fd, size, address + len(out))
            if not chunk:
                break
            end = chunk.find(b"\0")
            if end >= 0:
                return out + chunk[:end]
            out += chunk
    except OSError as exc:
        raise UnreadablePath(f"cannot read a path of process {pid}: {exc.strerror}") from exc
    finally:
        os.close(fd)
    raise UnreadablePath(f"a path of process {pid} is longer than PATH_MAX")


def read_bytes(pid: int, address: int, size: int) -> bytes:
    """``size`` bytes at ``address`` in process ``pid``."""
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
        try:
            return os.pread(fd, size, address)
        finally:
            os.close(fd)
    except OSError as exc:
        raise UnreadablePath(f"cannot read the memory of process {pid}: {exc.strerror}") from exc


def _signed(value: int) -> int:
    """A 64-bit register holding an ``int`` (``AT_FDCWD`` is -100)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _own_namespace(pid: int) -> bool:
    """Whether ``pid`` sees the same mounts as the supervisor (then its paths are ours)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt") == os.readlink("/proc/self/ns/mnt") and \
            os.readlink(f"/proc/{pid}/root") == "/"
    except OSError as exc:
        raise UnreadablePath(f"cannot read the mounts of process {pid}: {exc.strerror}") from exc


def realpath_under(root: str, path: str, *, follow: bool = True) -> str:
    """``path`` (absolute, as process sees it) with every symlink resolved inside
    ``root`` — an absolute link target starts again at ``root``, ``..`` stops there —
    as the kernel resolves it for a process whose root is ``root``.  Returns the
    path as the process sees it."""
    parts = [p for p in path.split("/") if p]
    done: list[str] = []
    hops = 0
    while parts:
        name = parts.pop(0)
        if name == ".":
            continue
        if name == "..":
            if done:
                done.pop()
            continue
        candidate = "/" + "/".join([*done, name])
        if not parts and not follow:
            done.append(name)
            break
        try:
            target = os.readlink(root + candidate)
        except OSError:
            done.append(name)   # not a symlink (or missing: the rest stays as written)
            continue
        hops += 1
        if hops > 40:
            raise UnreadablePath(f"too many symlinks in {path}", errno.ELOOP)
        if target.startswith("/"):
            done = []
        parts = [p for p in target.split("/") if p] + parts
    return "/" + "/".join(done)


def fd_path(pid: int, fd: int) -> str:
    """What descriptor ``fd`` of ``pid`` names (a path, or ``pipe:[…]`` and the like)."""
    fd = _signed(fd)
    where = f"/proc/{pid}/cwd" if fd == AT_FDCWD else f"/proc/{pid}/fd/{fd}"
    try:
        return os.fsdecode(os.readlink(where))
    except OSError as exc:
        raise UnreadablePath(f"cannot read descriptor {fd} of process {pid}: "
                             f"{exc.strerror}", errno.EBADF) from exc


def resolve(pid: int, dirfd: int, raw: bytes, *, follow: bool) -> str:
    """The absolute path the kernel will act on for ``raw`` relative to ``dirfd``.

    Raises :class:`UnreadablePath` when the process or its descriptor is gone.
    """
    text = os.fsdecode(raw)
    if _own_namespace(pid):
        return _resolve_here(pid, dirfd, text, follow=follow)
    # another mount namespace (a container, bubblewrap): resolve inside its root, then
    # keep the path only where the same directory is reachable at the same path here
    root = f"/proc/{pid}/root"
    if text.startswith("/"):
        inside = text
    else:
        base = fd_path(pid, dirfd)
        if not base.startswith("/"):
            raise UnreadablePath(f"descriptor {_signed(dirfd)} of process {pid} is not a "
                                 f"directory ({base})", errno.ENOTDIR)
        inside = os.path.join(base, text) if text else base
    seen = realpath_under(root, inside, follow=follow)
    if seen.startswith(_PSEUDO):
        return seen   # a device or kernel file: no state of the user's, left to the recorder
    parent = os.path.dirname(seen) or "/"
    try:
        theirs, ours = os.stat(root + parent), os.stat(parent)
    except OSError:
        raise ForeignPath(seen, pid) from None
    if (theirs.st_dev, theirs.st_ino) != (ours.st_dev, ours.st_ino):
        raise ForeignPath(seen, pid)
    # the same directory can still hold a different file there: one bound over the name
    # inside the sandbox (a mount point is an entry of its own, the directory is shared)
    try:
        target = os.lstat(root + seen)
    except (FileNotFoundError, NotADirectoryError):
        return seen   # nothing there yet: what the call makes is made here too
    except OSError:
        raise ForeignPath(seen, pid, UNSEEN) from None
    try:
        here = os.lstat(seen)
    except OSError:
        raise ForeignPath(seen, pid, NOT_HERE) from None
    if (target.st_dev, target.st_ino) != (here.st_dev, here.st_ino):
        raise ForeignPath(seen, pid, OTHER_FILE)
    return seen


def fd_file(pid: int, fd: int) -> str:
    """What descriptor ``fd`` of ``pid`` names, as :func:`fd_path`, where a path of a
    sandboxed process is kept only when the descriptor is open on the very file
    (``st_dev``, ``st_ino``) that path names here: the kernel gives the process's own
    name for it, which here may be another file or none (:class:`ForeignPath`)."""
    where = fd_path(pid, fd)
    if not where.startswith("/") or where.endswith(" (deleted)") or where.startswith(_PSEUDO) \
            or _own_namespace(pid):
        return where
    link = f"/proc/{pid}/cwd" if _signed(fd) == AT_FDCWD else f"/proc/{pid}/fd/{_signed(fd)}"
    try:
        theirs = os.stat(link)   # follows the magic link to the open file itself
    except OSError as exc:
        raise UnreadablePath(f"cannot read descriptor {_signed(fd)} of process {pid}: "
                             f"{exc.strerror}", errno.EBADF) from exc
    try:
        ours = os.lstat(where)
    except OSError:
        raise ForeignPath(where, pid, NOT_HERE) from None
    if (theirs.st_dev, theirs.st_ino) != (ours.st_dev, ours.st_ino):
        raise ForeignPath(where, pid, OTHER_FILE)
    return where


_MAGIC = re.compile(r"^/proc/(\d+)/(?:task/\d+/)?(fd/\d+|cwd|root)(?=/|$)")


def _unproc(pid: int, path: str) -> str:
    """``/proc/self/…`` as the process means it, and a magic link of ``/proc/<n>/``
    (``fd/N``, ``cwd``, ``root``) followed to what it names.  Raises
    :class:`UnreadablePath` (``EACCES``) when that link cannot be read: a path left
    under ``/proc`` would pass for a kernel file and go unrecorded."""
    for alias in ("/proc/self", "/proc/thread-self"):
        if path == alias or path.startswith(alias + "/"):
            path = f"/proc/{pid}" + path[len(alias):]
    for _hop in range(40):
        match = _MAGIC.match(path)
        if match is None:
            return path
        try:
            target = os.readlink(match.group(0))
        except OSError as exc:
            raise UnreadablePath(f"cannot follow {match.group(0)} for process {pid}: "
                                 f"{exc.strerror}", errno.EACCES) from exc
        if not target.startswith("/"):
            raise UnreadablePath(f"{match.group(0)} of process {pid} names {target}, "
                                 "not a path", errno.ENOTDIR)
        path = target.removesuffix(" (deleted)") + path[match.end():]
    raise UnreadablePath(f"too many /proc links in a path of process {pid}", errno.ELOOP)


def _resolve_here(pid: int, dirfd: int, text: str, *, follow: bool) -> str:
    if text.startswith("/proc/"):
        text = _unproc(pid, text)
    if text.startswith("/"):
        full = text
    else:
        base = fd_path(pid, dirfd)
        if not base.startswith("/"):
            raise UnreadablePath(f"descriptor {_signed(dirfd)} of process {pid} is not a "
                                 f"directory ({base})", errno.ENOTDIR)
        full = os.path.join(base, text) if text else base
    if follow:
        resolved = os.path.realpath(full)
    else:
        stripped = full.rstrip("/") or "/"
        head, name = os.path.split(stripped)
        if name in ("", ".", ".."):
            resolved = os.path.realpath(stripped)
        else:
            resolved = os.path.join(os.path.realpath(head or "/"), name)
    # a symlink into /proc/<n>/fd/… that realpath could not follow: follow it, or refuse
    return _unproc(pid, resolved) if resolved.startswith("/proc/") else resolved
