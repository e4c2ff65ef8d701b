"""The mount table: which paths are kernel interfaces, which hold data.

``/proc`` and ``/sys`` describe the kernel, and most of ``/dev`` is device
nodes (``> /dev/null`` changes nothing a backup could hold).  But ``/dev``
also holds filesystems with real data — ``/dev/shm`` is a tmpfs that
programs keep state in, and in many containers ``/dev`` itself is a tmpfs —
so a path under ``/dev`` is treated as kernel state only when it is proven
so: a device node, a pipe or socket, bash's ``/dev/fd``/``/dev/tcp`` names,
or a path on a pseudo-filesystem (``devtmpfs``, ``devpts``, ``mqueue``, …) by
the mount table.  Anything else — a tmpfs under ``/dev`` or ``/run/user/UID``
— is data and is protected like any other path.
"""

from __future__ import annotations

import os
import re
import stat

# Filesystems that expose kernel objects, not files anyone keeps data in.
PSEUDO_FS = frozenset({
    "proc", "sysfs", "devtmpfs", "devpts", "mqueue", "cgroup", "cgroup2", "debugfs",
    "tracefs", "securityfs", "pstore", "bpf", "configfs", "fusectl", "binfmt_misc",
    "efivarfs", "hugetlbfs", "autofs", "rpc_pipefs", "nsfs", "selinuxfs",
})
_KERNEL_TREES = ("/proc", "/sys")
# Names bash itself interprets (or that point at this process's descriptors).
_DEV_NAMES = ("/dev/fd/", "/dev/tcp/", "/dev/udp/", "/dev/stdin", "/dev/stdout", "/dev/stderr")
_ESCAPE = re.compile(r"\\([0-7]{3})")


def mount_table() -> list[tuple[str, str]]:
    """``(mount point, filesystem type)`` of every mount of this process's namespace
    (``/proc/self/mountinfo``; empty when it cannot be read)."""
    try:
        with open("/proc/self/mountinfo") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        head, sep, tail = line.partition(" - ")
        fields = head.split(" ")
        if len(fields) > 4 and sep:
            point = _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4])
            out.append((point, tail.split(" ", 1)[0]))
    return out


def fs_type(path: str, table: list[tuple[str, str]] | None = None) -> str | None:
    """The filesystem type ``path`` lies on: that of the deepest mount point above the real
    path of its deepest existing ancestor (``None`` when the table says nothing)."""
    here = os.path.abspath(path)
    while not os.path.lexists(here) and here != "/":
        here = os.path.dirname(here)
    real = os.path.realpath(here)
    best: tuple[int, str] | None = None
    for point, kind in table if table is not None else mount_table():
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= best[0]):  # later mounts shadow earlier
            best = (len(point), kind)
    return best[1] if best else None


def kernel_path(path: str) -> bool:
    """Whether ``path`` names kernel state rather than data (see the module docs)."""
    p = os.path.normpath(path)
    if any(p == t or p.startswith(t + "/") for t in _KERNEL_TREES):
        return True
    if not (p == "/dev" or p.startswith("/dev/")):
        return False
    if p == "/dev" or p.startswith(_DEV_NAMES):
        return True
    try:
        mode = os.stat(p).st_mode
    except OSError:
        mode = None
    if mode is not None and (stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode)
                             or stat.S_ISSOCK(mode)):
        return True
    return fs_type(p) in PSEUDO_FS   # unknown: data (a safety tool protects when unsure)
