"""The process that answers one hook call for the decision service, and the spare one
waiting for the next call.

The decision service (:mod:`preimage.services.decision_service`) answers every call in
a process of its own, forked from it, which takes the calling hook's environment and
exits when it has answered (why: see that module).  A freshly forked process is slow
for its first call: every page of the service's memory it writes (Python writes
reference counts as it reads objects) is copied first — about 1,700 page copies and
half of a read-only call's CPU, measured.  So the service keeps one **spare**: a process
forked ahead of time that has already walked the decision path once (the hook options,
the config, the harness's payload reader, the rules and the shell parser on a
read-only command), so those pages are its own, and then waits on a private channel.
When it has answered, a call process names on the service's notes pipe the rules
folder it used and the modules it had to import (the model tier, a capture's engine,
store and connector, a driver), so the service loads them for the processes it forks
next — the state a threaded service keeps after its first call of each kind.
A call is handed to it as the connection itself (``SCM_RIGHTS``) plus what the service
already read of the request.  The service forks the next spare once that call has been
answered (its process's notes arrive) or the service had nothing to do for half a second —
not right after the hand-off, where the new spare's fork and warm-up would compete with
the call for the CPU: at load 25 to 30 on two cores that halved a read-only call's time from
connect to answer (p50 77 to 125 ms → 38 to 44 ms, measured).  A call right behind the
last one still meets the new spare warming up (a whole compiled hook: 111 ms back to back
against 54 ms spaced by 0.3 s, at load 30); forking the spare at once but letting it warm
up only after the call was answered did no better there (139 ms), so the simple order
stays.  A call answered before its capture after the call (``then``) writes its notes
with the answer, so the next spare warms up beside that capture, which nobody waits
for: a read-only call 3 ms behind a protected call's post-call event took 11.4-12.1 ms
from a compiled hook's start to its answer against 14.8-15.3 ms (medians of 25, three
pairs, load 1); 20 ms behind, 7.6-7.8 ms either way.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from preimage.services import wire

_LENGTH = struct.Struct(">I")
Log = Callable[..., None]


class Request:
    """One hook call as the service read it: the header, what it already read of the
    payload, and the calling process."""

    __slots__ = ("buffered", "head", "peer", "size")

    def __init__(self, head: dict[str, Any], size: int, buffered: bytes, peer: int) -> None:
        self.head = head
        self.size = size
        self.buffered = buffered
        self.peer = peer

    def encode(self) -> bytes:
        doc = {"head": self.head, "size": self.size, "peer": self.peer,
               "buffered": self.buffered.decode("latin-1")}
        raw = json.dumps(doc).encode()
        return _LENGTH.pack(len(raw)) + raw

    @classmethod
    def decode(cls, raw: bytes) -> Request:
        doc = json.loads(raw)
        return cls(doc["head"], int(doc["size"]), doc["buffered"].encode("latin-1"),
                   int(doc["peer"]))


def become_call_process(closing: list[int]) -> None:
    """In a process just forked from the service: default signal handling (subprocesses
    are waited for again) and none of the service's own descriptors (``closing``)."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    for fd in closing:
        with contextlib.suppress(OSError):
            os.close(fd)


def answer(conn: socket.socket, request: Request, log: Log, notes: int) -> None:
    """Read the rest of the payload, take the caller's environment and answer the call;
    then name the caller's rules folder on ``notes`` so the service warms it."""
    conn.settimeout(10.0)
    reader = wire.LineReader(conn)
    reader.buf = request.buffered
    try:
        body = reader.body(request.size)
    except (OSError, ValueError) as exc:
        log("bad-request", peer_pid=request.peer, error=str(exc))
        with contextlib.suppress(OSError):
            wire.reply(conn, {"event": "error", "error": f"bad request: {exc}"})
        return
    from preimage.layer.harnesses.hook import handle

    had_model = "litellm" in sys.modules
    had_modules = set(sys.modules)
    head = request.head
    args = [str(a) for a in head.get("args") or []]
    harness = str(head.get("harness") or "claude-code")
    env = head.get("env") if isinstance(head.get("env"), dict) else None
    cwd = head.get("cwd") if isinstance(head.get("cwd"), str) else None
    if env is not None:  # this process is the caller's now: its settings are ours
        wire.take_environment({str(k): str(v) for k, v in env.items()})
    started = time.perf_counter()
    try:
        wire.reply(conn, {"event": "accepted", "pid": os.getpid(), "deadline": deadline(args)})
        outcome = handle(harness, args, body.decode("utf-8", "replace"), env=env, cwd=cwd,
                         pid=request.peer or None, answer_first=True)
        conn.settimeout(30.0)
        try:
            wire.reply(conn, {"event": "answer", "stdout": outcome.stdout,
                              "stderr": outcome.stderr, "exit_code": outcome.exit_code})
            result = "answered"
            with contextlib.suppress(OSError):   # the client reads no further
                conn.shutdown(socket.SHUT_RDWR)
        finally:
            if outcome.then is not None:   # the capture after the call: answered first
                # told now, the service forks the next call's spare while this capture
                # runs (the harness waits for neither), not once it is done
                had_modules = _tell(notes, had_model, had_modules)
                outcome.then()
    except OSError as exc:  # the client went away; the decision (and backup) still stands
        result = f"client gone: {exc}"
    log("hook", peer_pid=request.peer, harness=harness, bytes=len(body), result=result,
        seconds=round(time.perf_counter() - started, 4))
    _tell(notes, had_model, had_modules)


def _tell(notes: int, had_model: bool, had_modules: set[str]) -> set[str]:
    """Name on the service's ``notes`` the caller's rules folder and what this process had
    to import beyond ``had_modules``; the modules imported by now."""
    now = set(sys.modules)
    with contextlib.suppress(Exception):
        from preimage.layer.config import rules_dir

        note = b"rules " + os.fsencode(str(rules_dir())) + b"\n"
        if "litellm" in sys.modules and not had_model:   # the service imports it for the next
            note += b"model\n"
        os.write(notes, note)
        # What this call had to import (a capture's engine, store and connector, a driver):
        # the service imports it too, so the next call's process starts with it, as a
        # threaded service's next call would.  One line per write, each under PIPE_BUF, so
        # lines of processes writing at once never interleave.
        line = b"modules"
        for name in sorted(now - had_modules):
            if len(line) + len(name) > 3500:
                os.write(notes, line + b"\n")
                line = b"modules"
            line += b" " + name.encode()
        if line != b"modules":
            os.write(notes, line + b"\n")
    return now


def deadline(args: list[str]) -> float:
    """Seconds the answer may take: the call's ``--timeout`` or the configured one."""
    if "--timeout" in args:
        i = args.index("--timeout")
        with contextlib.suppress(IndexError, ValueError):
            return float(args[i + 1])
    try:
        from preimage.layer.config import LayerConfig

        return LayerConfig.load().timeout
    except Exception:
        return 45.0


def walk_decision_path(*, thread: bool = True) -> None:
    """Decide a read-only call as a hook would, writing nothing: the pages this touches
    become the spare's own before any call waits on it.  ``thread``: start and join the
    thread a decision runs in too (not in the service itself, which forks)."""
    from preimage.layer.call import ToolCall
    from preimage.layer.config import LayerConfig
    from preimage.layer.deciding.backup_layer import BackupLayer
    from preimage.layer.harnesses import get_harness
    from preimage.layer.harnesses.hook import _hook_options, log_line

    payload = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "session_id": "",
               "tool_input": {"command": "ls -la"}, "cwd": "/", "tool_use_id": ""}
    _hook_options([])
    config = LayerConfig.load()
    adapter = get_harness("claude-code")
    adapter.event(json.loads(json.dumps(payload)))
    BackupLayer(config=config).plan(ToolCall.shell("ls -la | grep x > /dev/null", cwd="/"))
    # What the hook does around the decision, minus its effects: the log line's redaction
    # and encoding (the regular expressions' replacement templates are parsed on first
    # use), the answer, and the thread the decision runs in — a first call's costs, paid
    # here instead (measured: a read-only call's `handle()` 3.2 → 1.8 ms in a spare).
    from preimage.layer.decision import Action, Decision

    passed = Decision(Action.PASS, None)
    log_line({"event": "decision", "harness": "claude-code", "tool": "Bash", "session": "s",
              "tool_use_id": "t", "input": {"command": "ls --color=auto"},   # every rule
              **passed.to_dict()})
    adapter.nothing_after(adapter.answer(passed, config).stdout)
    from preimage.interface.redact import compile_rules

    compile_rules()   # the credential shapes and PEM armour too, which `ls` does not need
    if thread:
        worker = threading.Thread(target=_under_a_deadline, daemon=True)
        worker.start()
        worker.join()


def walk_capture_path() -> None:
    """Back up a scratch file into a scratch store and capture it again, as a protected
    call's two hooks do, then remove both: the validators, statements and modules a
    capture makes on first use become this process's, so a process forked from it does
    not make them again (measured in a forked child: its capture after a call 14-18 ms
    -> 3.6 ms, its first capture 12 -> 9 ms).  Nothing outside the scratch folder is
    written, and no thread is left running."""
    import shutil
    import tempfile
    from pathlib import Path

    from preimage.engine.capture import capture
    from preimage.engine.undo import capture_after
    from preimage.store.store import Store

    scratch = Path(tempfile.mkdtemp(prefix="preimage-warm-"))
    try:
        (scratch / "t").mkdir()
        (scratch / "t" / "a").write_bytes(b"a\n")
        with Store(scratch / "home") as store:
            backup = capture([f"file://{scratch / 't'}"], store=store, kind="layer",
                             tier="workspace", label="warm-up")
            capture_after(backup.id, store=store)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _under_a_deadline() -> None:
    """Nothing, in the context a decision's thread sets up (see ``walk_decision_path``)."""
    from preimage.engine.deadline import given_up_when

    with given_up_when(threading.Event()):
        pass


class Spare:
    """A process forked ahead of a call, waiting for one (see the module's docstring)."""

    def __init__(self, pid: int, channel: socket.socket) -> None:
        self.pid = pid
        self.channel = channel

    @classmethod
    def fork(cls, closing: list[int], log: Log, notes: int) -> Spare | None:
        """Fork a spare; ``None`` when no process can be made (calls are forked directly)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            pid = os.fork()
        except OSError as exc:
            ours.close()
            theirs.close()
            log("fork-failed", error=str(exc))
            return None
        if pid == 0:
            code = 0
            try:
                ours.close()
                become_call_process(closing)
                _wait_and_answer(theirs, log, notes)
            except BaseException:  # nothing may return into the service's loop
                code = 1
            finally:
                os._exit(code)
        theirs.close()
        return cls(pid, ours)

    def hand(self, conn: socket.socket, request: Request) -> bool:
        """Give the spare ``conn`` and the request; ``False`` when it did not get them (then
        the call is the caller's to answer).  Once the connection is sent the call is the
        spare's, even if the rest of the frame cannot follow: it then closes the call
        unanswered (the client says NOT backed up) — never two processes on one call."""
        try:
            self.channel.settimeout(1.0)
            frame = request.encode()
            try:
                sent = socket.send_fds(self.channel, [frame], [conn.fileno()])
            except OSError:
                return False
            with contextlib.suppress(OSError):  # the spare may already have closed its end
                if sent < len(frame):
                    self.channel.sendall(frame[sent:])
            return True
        finally:
            self.channel.close()

    def retire(self) -> None:
        """Let the spare go without a call (it exits when its channel closes)."""
        self.channel.close()


def _wait_and_answer(channel: socket.socket, log: Log, notes: int) -> None:
    """The spare's life: warm up, wait for a call (or the channel's end), answer it."""
    with contextlib.suppress(Exception):  # a broken config is reported per call
        walk_decision_path()
    data, fds, _, _ = socket.recv_fds(channel, 1 << 16, 1)
    if not fds:
        return   # retired, or the service is gone
    while len(data) < _LENGTH.size or len(data) < _LENGTH.size + _LENGTH.unpack(
            data[:_LENGTH.size])[0]:
        more = channel.recv(1 << 16)
        if not more:
            return
        data += more
    channel.close()
    request = Request.decode(data[_LENGTH.size:])
    with socket.socket(fileno=fds[0]) as conn:
        answer(conn, request, log, notes)
