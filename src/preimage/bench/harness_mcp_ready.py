"""Waiting, before the model's first call to an MCP server, until the harness's server is up.

A harness starts its MCP servers as child processes when it starts.  Claude Code, when
the model names a tool of a server still starting, waits at most ten seconds and then
answers "No such tool available"; on a loaded machine postgres-mcp (a Python program
importing its parser and driver) takes longer than that.  A model is slower than the
scripted one: before answering with a server's first call the runner holds the answer
until the server's process has started and gone idle (waiting for its next request:
its CPU time unchanged over a short interval), read from ``/proc``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

IDLE_INTERVAL = 0.5
READY_TIMEOUT = 120.0


def _stat(pid: int) -> tuple[int, int] | None:
    """``(parent pid, CPU ticks)`` of ``pid``, or ``None`` when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[11]) + int(fields[12])


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None:
                children.setdefault(st[0], []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            out.append(child)
            todo.append(child)
    return out


def _running(root: int, executable: str) -> list[int]:
    """Descendants of ``root`` whose command line names ``executable``."""
    found = []
    for pid in _descendants(root):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(executable.encode() in part for part in argv):
            found.append(pid)
    return found


def _idle(pid: int) -> bool:
    first = _stat(pid)
    time.sleep(IDLE_INTERVAL)
    return first is not None and _stat(pid) == first


def server_marker(command: str) -> str:
    """What names an installed server in its process's command line: its virtualenv or
    ``node_modules`` folder (a console script runs under the venv's Python, a package's
    bin link resolves to its own file)."""
    return str(Path(command).parent.parent)


def wait_until_idle(root: int, executable: str, timeout: float = READY_TIMEOUT) -> bool:
    """Wait until a process under ``root`` running ``executable`` exists and every one is
    idle; ``False`` when that did not happen within ``timeout`` (the call then goes ahead,
    and the harness's answer says what it made of it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = _running(root, executable)
        if not pids:
            time.sleep(IDLE_INTERVAL)
        elif all(_idle(p) and _idle(p) for p in pids):
            time.sleep(IDLE_INTERVAL)   # the harness reads the server's tool list
            return True
    return False
