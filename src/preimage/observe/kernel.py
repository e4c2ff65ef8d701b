"""The seccomp user-notification calls, through ``ctypes`` (no compiled code).

The supervised side calls :func:`install_filter` between ``fork`` and
``execve``: ``PR_SET_NO_NEW_PRIVS`` (which is what lets an ordinary user
install a filter), then ``seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER)``,
which returns the listener descriptor.  The supervisor receives each stopped
syscall with :func:`receive`, answers it with :func:`allow` or :func:`refuse`,
and checks with :func:`still_valid` that a process it read memory from is
still the one waiting.  Once the listener is closed, every watched syscall of
the tree fails with ``ENOSYS``: a supervisor that dies lets nothing through
unrecorded.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from dataclasses import dataclass

from preimage.observe.compiled import loop_status
from preimage.observe.syscalls import filter_program

_SYS_SECCOMP = 317
_PR_SET_NO_NEW_PRIVS = 38
_SECCOMP_SET_MODE_FILTER = 1
_FLAG_NEW_LISTENER = 1 << 3
_FLAG_WAIT_KILLABLE_RECV = 1 << 5    # 5.19+: a received syscall is not restarted by a signal
_NOTIF_RECV = 0xC0502100
_NOTIF_SEND = 0xC0182101
_NOTIF_ID_VALID = 0x40082102
_FLAG_CONTINUE = 1
_NOTIF_SET_FLAGS = 0x40082104
_FD_SYNC_WAKE_UP = 1   # 6.6+: the stopped process and the supervisor hand over on one CPU
_ACTIONS = "/proc/sys/kernel/seccomp/actions_avail"

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.ioctl.restype = ctypes.c_int


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


@dataclass(frozen=True)
class Notification:
    """One stopped syscall: its cookie, the process, the number and six arguments."""

    id: int
    pid: int
    nr: int
    args: tuple[int, int, int, int, int, int]


def unavailable_reason() -> str | None:
    """Why supervision cannot run here (``None``: it can).  ``PREIMAGE_OBSERVE=off``
    turns it off (the layer then reads command lines, as without kernel support)."""
    if os.environ.get("PREIMAGE_OBSERVE", "").lower() in ("off", "0", "no"):
        return "turned off (PREIMAGE_OBSERVE=off)"
    if os.uname().sysname != "Linux":
        return f"seccomp user notification is a Linux facility (this is {os.uname().sysname})"
    if os.uname().machine != "x86_64":
        return f"the watched syscall table is written for x86_64 (this is {os.uname().machine})"
    try:
        with open(_ACTIONS) as fh:
            actions = fh.read().split()
    except OSError:
        return f"the kernel does not list its seccomp actions ({_ACTIONS} is unreadable)"
    if "user_notif" not in actions:
        return "the kernel has no seccomp user notification (user_notif)"
    return None


def status_line() -> str:
    """One line for listings: whether file changes are observed here, or read, and why."""
    reason = unavailable_reason()
    if reason is None:
        return ("file changes: observed (seccomp user notification: each call's syscalls "
                f"watched; loop: {loop_status()})")
    return f"file changes: read from the command line — supervision unavailable: {reason}"


def install_filter() -> int:
    """Put the watch filter on the calling process; return the listener descriptor.

    Raises :class:`OSError` (``EBUSY``: another supervisor already holds this
    tree's listener, as inside some sandboxes).
    """
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")
    program = filter_program()
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    for flags in (_FLAG_NEW_LISTENER | _FLAG_WAIT_KILLABLE_RECV, _FLAG_NEW_LISTENER):
        fd = _libc.syscall(_SYS_SECCOMP, _SECCOMP_SET_MODE_FILTER, flags, ctypes.byref(prog))
        if fd >= 0:
            return int(fd)
        err = ctypes.get_errno()
        if err != errno.EINVAL:   # EINVAL: an older kernel without WAIT_KILLABLE_RECV
            break
    raise OSError(err, f"seccomp(NEW_LISTENER): {os.strerror(err)}")


def sync_wakeups(listener: int) -> bool:
    """Ask the kernel to wake the supervisor on the CPU of the process that stopped, and
    that process on the supervisor's (one handover instead of two cross-CPU wakeups);
    False where the kernel does not have it (before 6.6): nothing else changes."""
    if os.environ.get("PREIMAGE_OBSERVE_SYNC", "").lower() == "off":
        return False
    return bool(_libc.ioctl(listener, _NOTIF_SET_FLAGS, ctypes.c_uint64(_FD_SYNC_WAKE_UP)) == 0)


def receive(listener: int) -> Notification | None:
    """The next stopped syscall; ``None`` when its process died before it was read."""
    buf = ctypes.create_string_buffer(80)
    if _libc.ioctl(listener, _NOTIF_RECV, buf) != 0:
        err = ctypes.get_errno()
        if err in (errno.ENOENT, errno.EINTR):
            return None
        raise OSError(err, f"seccomp notification receive: {os.strerror(err)}")
    return parse(buf.raw)


def parse(raw: bytes) -> Notification:
    """A ``struct seccomp_notif`` (80 bytes) as a :class:`Notification`."""
    nid, pid, _flags, nr, _arch, _ip = struct.unpack_from("=QIIiIQ", raw, 0)
    args = struct.unpack_from("=6Q", raw, 32)
    return Notification(nid, pid, nr, args)   # type: ignore[arg-type]


def _send(listener: int, nid: int, error: int, flags: int) -> None:
    resp = struct.pack("=QqiI", nid, 0, -error if error else 0, flags)
    buf = ctypes.create_string_buffer(resp, 24)
    if _libc.ioctl(listener, _NOTIF_SEND, buf) != 0:
        err = ctypes.get_errno()
        if err != errno.ENOENT:   # ENOENT: the process was killed while it waited
            raise OSError(err, f"seccomp notification answer: {os.strerror(err)}")


def allow(listener: int, nid: int) -> None:
    """Let the stopped syscall run as it is."""
    _send(listener, nid, 0, _FLAG_CONTINUE)


def refuse(listener: int, nid: int, error: int) -> None:
    """Fail the stopped syscall with ``error`` (an ``errno`` value)."""
    _send(listener, nid, error, 0)


def still_valid(listener: int, nid: int) -> bool:
    """Whether syscall ``nid`` is still waiting (its process was not replaced)."""
    cookie = ctypes.c_uint64(nid)
    return bool(_libc.ioctl(listener, _NOTIF_ID_VALID, ctypes.byref(cookie)) == 0)
