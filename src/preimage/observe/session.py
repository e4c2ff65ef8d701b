"""Session mode: one supervisor for a whole harness, one backup per tool call.

``preimage session -- claude …`` runs the harness under supervision, so its
own file tools, its MCP servers and every shell call it starts are watched
alike.  The harness's hooks only mark where a call begins and ends: the hook
process (itself supervised) finds ``PREIMAGE_SUPERVISOR`` in its environment
and sends ``begin``/``end`` with the call's id and input to that Unix socket
(:func:`preimage.services.hook_client.mark_boundary`); the supervisor answers
once the boundary is applied, so a call's first change always lands in its
own backup.

Windows, in order of time:

* between calls, changes go to a backup labelled ``session … between calls``;
* a ``begin`` seals it and opens the call's backup (its tool call recorded);
* the ``end`` of the last open call seals that backup, captures its targets
  again for ``undo`` (``post-call``), and opens the next between-calls one.

Calls that run in parallel cannot be told apart by process: a harness's own
file tools write from the harness's process, for every call.  So calls whose
windows overlap share one backup, from the first ``begin`` to the last
``end``; its label and tool call name the first call.  Restoring it brings
back the state before all of them.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from preimage.observe import compiled
from preimage.observe.recorder import Recorder
from preimage.observe.supervisor import (
    Loop,
    SupervisionUnavailable,
    continue_detached,
    install_in_child,
    quiet_interrupts,
    receive_listener,
    require,
    still_watched,
    why_not_installed,
)
from preimage.store.store import Store

ENV = "PREIMAGE_SUPERVISOR"   # the boundary socket, in the supervised harness's environment


@dataclass
class SessionOutcome:
    """A supervised session: the harness's exit status and its backups, in order."""

    returncode: int
    backups: list[str] = field(default_factory=list)
    calls: int = 0
    notified: int = 0
    background: bool = False


class CallWindows:
    """Moves a :class:`Loop` from one backup to the next at the hooks' marks."""

    def __init__(self, loop: Loop, store: Store, session: str, ignore: tuple[str, ...],
                 log: TextIO | None) -> None:
        self.loop = loop
        self.store = store
        self.session = session
        self.ignore = ignore
        self.log = log
        self.open_calls: dict[str, dict[str, Any]] = {}
        self.first: dict[str, Any] | None = None
        self.backups: list[str] = []
        self.calls = 0
        loop.recorder = self._between()

    def _between(self) -> Recorder:
        return Recorder(self.store, label=f"session {self.session}: between calls",
                        session=self.session, ignore=self.ignore)

    def _seal(self, *, post_call: bool) -> None:
        recorder = self.loop.recorder
        recorder.close()
        if recorder.backup_id is None:
            return
        self.backups.append(recorder.backup_id)
        if post_call:
            from preimage.engine.undo import capture_after

            capture_after(recorder.backup_id, store=self.store)

    def begin(self, call_id: str, record: dict[str, Any]) -> None:
        """A call starts: its changes go to its own backup (shared with overlapping calls)."""
        self.calls += 1
        if not self.open_calls:
            self._seal(post_call=False)
            what = record.get("command") or record.get("tool") or "call"
            self.loop.recorder = Recorder(self.store, label=f"{what}"[:200], tool_call=record,
                                          session=self.session, ignore=self.ignore)
        self.open_calls[call_id] = record

    def end(self, call_id: str) -> None:
        """A call ended: when no other is open, seal its backup and its post-call capture."""
        self.open_calls.pop(call_id, None)
        if not self.open_calls:
            self._seal(post_call=True)
            self.loop.recorder = self._between()

    def serve(self, server: socket.socket) -> None:
        """Answer one hook's mark (one JSON line in, ``ok`` out once applied)."""
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            return
        with conn:
            conn.settimeout(5)
            try:
                data = b""
                while not data.endswith(b"\n") and len(data) < 65536:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                mark = json.loads(data or b"{}")
                call_id = str(mark.get("call") or "")
                if mark.get("event") == "begin" and call_id:
                    self.begin(call_id, mark.get("record") or {})
                elif mark.get("event") == "end" and call_id:
                    self.end(call_id)
                conn.sendall(b"ok\n")
            except (OSError, ValueError) as exc:
                if self.log is not None:
                    print(f"preimage: a call boundary was not applied: {exc}", file=self.log)

    def close(self) -> None:
        """Seal whatever window is open (the harness exited)."""
        self._seal(post_call=bool(self.open_calls))


def run_session(
    argv: Sequence[str], *, store: Store, session: str | None = None,
    cwd: str | None = None, env: Mapping[str, str] | None = None,
    log: TextIO | None = sys.stderr, ignore: tuple[str, ...] = (),
) -> SessionOutcome:
    """Run a harness under supervision, one backup per tool call (see the module).

    Raises :class:`SupervisionUnavailable` when the filter cannot be installed.
    """
    require()
    compiled.library()   # built (once) before the harness starts
    session = session or time.strftime("s%Y%m%d-%H%M%S")
    with tempfile.TemporaryDirectory(prefix="preimage-session-") as where:
        path = os.path.join(where, "boundary.sock")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(16)
        server.setblocking(False)
        child_env = {**(env if env is not None else os.environ), ENV: path}
        parent, child = socket.socketpair()
        with server, parent, quiet_interrupts():
            try:
                proc = subprocess.Popen(list(argv), cwd=cwd, env=child_env,
                                        preexec_fn=lambda: install_in_child(child))  # noqa: PLW1509
            except subprocess.SubprocessError as exc:
                raise SupervisionUnavailable(
                    f"cannot supervise {argv[0]}: {why_not_installed(parent, exc)}") from exc
            finally:
                child.close()
            pidfd = os.pidfd_open(proc.pid)
            try:
                listener = receive_listener(parent)
            except SupervisionUnavailable:
                proc.wait()
                os.close(pidfd)
                raise
            loop = Loop(listener, Recorder(store, label="", session=session), log)
            windows = CallWindows(loop, store, session, (where, *ignore), log)
            loop.handlers[server.fileno()] = lambda: windows.serve(server)
            try:
                loop.run(pidfd)
                returncode = proc.wait()
            finally:
                loop.close()
                windows.close()
                os.close(pidfd)
    outcome = SessionOutcome(returncode if returncode >= 0 else 128 - returncode,
                             windows.backups, windows.calls, loop.notified)
    if still_watched(listener):
        outcome.background = True
        continue_detached(listener, store.home, f"session {session}", session, None)
    os.close(listener)
    with contextlib.suppress(OSError):
        os.unlink(path)
    return outcome
