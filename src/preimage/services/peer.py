"""Who is at the other end of a resident process's socket, and whether it may be served.

A resident process (the decision service, the warm process) acts with its own rights:
it captures, writes the store and runs commands as itself.  So it serves only a caller
of its own user confined exactly as it is (:func:`same_confinement`); any other caller
is refused and decides or runs in its own process, where its own limits apply.  Standard
library only: the hook's client and the warm process's client import this path.
"""

from __future__ import annotations

import os
import socket
import struct


def peer(conn: socket.socket) -> tuple[int, int]:
    """The connecting process's pid and uid, as the kernel recorded them at ``connect``
    (pid 0: it lives in a PID namespace this process cannot see)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    return int(pid), int(uid)


#: What makes two processes of one user able to do different things: their namespaces
#: (a mount namespace with the store or the workspace read-only, another network), their
#: root directory, credentials and capabilities, no_new_privs (which Landlock and most
#: seccomp sandboxes set), seccomp filters, and the LSM label.
NAMESPACES = ("mnt", "user", "pid", "net", "ipc", "uts", "cgroup")
STATUS_FIELDS = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
                  "NoNewPrivs", "Seccomp", "Seccomp_filters")


def confinement(pid: int | str) -> tuple[str, ...] | None:
    """What confines process ``pid`` (see :data:`NAMESPACES`), read from ``/proc``;
    ``None`` when any of it cannot be read (then it is not known to equal anything)."""
    base = f"/proc/{pid}"
    try:
        out = [f"{name}:{os.readlink(f'{base}/ns/{name}')}" for name in NAMESPACES
               if os.path.lexists(f"/proc/self/ns/{name}")]
        root = os.stat(f"{base}/root")
        out.append(f"root:{root.st_dev}:{root.st_ino}")
        with open(f"{base}/status", encoding="utf-8", errors="replace") as fh:
            fields = dict(line.rstrip("\n").split(":", 1) for line in fh if ":" in line)
        out += [f"{name}:{' '.join(fields.get(name, '').split())}" for name in STATUS_FIELDS]
        try:
            with open(f"{base}/attr/current", encoding="utf-8", errors="replace") as fh:
                out.append(f"label:{fh.read().strip()}")
        except OSError:
            out.append("label:")   # no LSM: the same for every process
    except (OSError, ValueError):
        return None
    return tuple(out)


def refusal(conn: socket.socket, own: tuple[str, ...] | None) -> str | None:
    """Why the caller on ``conn`` may not be served (``None``: it may).  A resident process
    acts with its own rights, so it serves only its own user (``SO_PEERCRED``), confined
    exactly as it is: a caller in a sandbox (another mount namespace with the store
    read-only, no_new_privs, other seccomp filters) decides or runs in its own process,
    where the sandbox applies."""
    try:
        pid, uid = peer(conn)
    except OSError as exc:
        return f"its credentials cannot be read ({exc})"
    if uid != os.getuid():
        return f"another user's process (uid {uid})"
    if pid <= 0:
        return "a process in a PID namespace this one cannot see"
    if own is None or confinement(pid) != own:
        return "a process confined differently (namespaces, credentials or sandbox)"
    return None


def same_confinement(conn: socket.socket, own: tuple[str, ...] | None) -> bool:
    """Whether the caller on ``conn`` may be served (see :func:`refusal`)."""
    return refusal(conn, own) is None
