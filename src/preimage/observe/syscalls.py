"""The syscalls supervision watches (x86_64), and the classic-BPF filter that picks them.

The filter returns ``SECCOMP_RET_USER_NOTIF`` for every syscall that can change
the file system and ``SECCOMP_RET_ALLOW`` for the rest, so reads, writes to an
already open file, ``stat`` and ``exec`` never leave the kernel.  ``open`` and
``openat`` notify only when their flags ask for writing, truncating or
creating (tested on the register in the filter).  ``openat2`` keeps its flags
in memory the filter cannot read, so it always notifies, as does anything
else the filter cannot judge.

Refused outright, with ``ENOSYS`` so programs take their plain-syscall path:
``io_uring_setup`` (its submissions never pass seccomp), and every syscall of
another ABI (i386 ``int 0x80``, x32), whose numbers this table does not model.

Not watched, and why: ``write``/``pwrite``/``mmap``/``copy_file_range``/
``sendfile``/``splice`` and the ``FICLONE`` ioctls act on a descriptor that was
opened for writing, and that ``open`` was watched; mounts change no file.
"""

from __future__ import annotations

import errno
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000

RET_ALLOW = 0x7FFF0000
RET_USER_NOTIF = 0x7FC00000
RET_ERRNO = 0x00050000

# open(2) flags that make an open change something (O_TMPFILE needs O_WRONLY/O_RDWR)
O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_TRUNC = 0o1, 0o2, 0o100, 0o200, 0o1000
O_NOFOLLOW = 0o400000
WRITE_FLAGS = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC

# the flag-tested opens: number → index of the flags argument
FLAGGED_OPENS = {"open": (2, 1), "openat": (257, 2)}

WATCHED: dict[str, int] = {
    "creat": 85, "openat2": 437,
    "truncate": 76, "ftruncate": 77, "fallocate": 285,
    "unlink": 87, "unlinkat": 263, "rmdir": 84,
    "rename": 82, "renameat": 264, "renameat2": 316,
    "mkdir": 83, "mkdirat": 258, "mknod": 133, "mknodat": 259,
    "link": 86, "linkat": 265, "symlink": 88, "symlinkat": 266,
    "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452,
    "chown": 92, "fchown": 93, "lchown": 94, "fchownat": 260,
    "utime": 132, "utimes": 235, "futimesat": 261, "utimensat": 280,
    "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "setxattrat": 463,
    "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199, "removexattrat": 466,
    "bind": 49,                 # an AF_UNIX bind to a path creates a socket file
    "open_by_handle_at": 304,   # a handle names no path: refused by the supervisor
}
REFUSED: dict[str, int] = {"io_uring_setup": 425}

NAMES: dict[int, str] = {
    **{nr: name for name, nr in WATCHED.items()},
    **{nr: name for name, (nr, _arg) in FLAGGED_OPENS.items()},
}

# classic BPF opcodes
_LD_ABS_W = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def filter_program() -> bytes:
    """The filter as ``struct sock_filter`` instructions (jumps only go forward)."""
    enosys = RET_ERRNO | errno.ENOSYS
    out: list[bytes] = [
        _insn(_LD_ABS_W, 0, 0, 4),                         # seccomp_data.arch
        _insn(_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        _insn(_RET_K, 0, 0, enosys),                       # another ABI: not modelled
        _insn(_LD_ABS_W, 0, 0, 0),                         # seccomp_data.nr
        _insn(_JGE_K, 0, 1, X32_SYSCALL_BIT),
        _insn(_RET_K, 0, 0, enosys),
    ]
    for nr in REFUSED.values():
        out += [_insn(_JEQ_K, 0, 1, nr), _insn(_RET_K, 0, 0, enosys)]
    for nr, arg in FLAGGED_OPENS.values():
        # the low 32 bits of args[arg] (little endian): notify when a write flag is set
        out += [
            _insn(_JEQ_K, 0, 4, nr),
            _insn(_LD_ABS_W, 0, 0, 16 + 8 * arg),
            _insn(_JSET_K, 0, 1, WRITE_FLAGS),
            _insn(_RET_K, 0, 0, RET_USER_NOTIF),
            _insn(_RET_K, 0, 0, RET_ALLOW),
        ]
    numbers = sorted(WATCHED.values())
    for i, nr in enumerate(numbers):
        # jump to the notify return that follows the list (at most 255 ahead)
        out.append(_insn(_JEQ_K, len(numbers) - i, 0, nr))
    out += [_insn(_RET_K, 0, 0, RET_ALLOW), _insn(_RET_K, 0, 0, RET_USER_NOTIF)]
    return b"".join(out)
