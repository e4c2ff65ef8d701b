"""Running a command or a function under supervision, and answering its syscalls.

Order of one supervised call:

1. a socket pair; the child (after ``fork``, before ``execve``) installs the
   filter and sends the listener descriptor over it, then closes its own copy
   — were the child to keep it, a dead supervisor would leave the tree blocked
   instead of failing its changes with ``ENOSYS``;
2. the loop: each stopped syscall is judged (:mod:`.judge`), the before-image
   of every path it will change is recorded (:mod:`.recorder`), and only then
   is the syscall let through.  A syscall whose paths cannot be read or
   recorded is refused with an ``errno`` and a line on stderr: nothing changes
   unrecorded;
3. when the command's own process exits, the call's backup is sealed (and,
   for ``undo``, its targets captured again as the post-call backup);
4. processes the call left running (``server &``) keep their filter, so the
   listener must outlive the call: a detached continuation of the supervisor
   keeps answering them, recording into a backup of their own (label
   ``background of …``, same session) until the last of them exits.  They are
   never answered with errors for the call having ended.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import pickle
import select
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from preimage.interface.errors import PreimageError
from preimage.observe import compiled, kernel
from preimage.observe.judge import Unjudgeable, judge, refused_read_only
from preimage.observe.native_loop import Native
from preimage.observe.paths import ForeignPath, UnreadablePath
from preimage.observe.recorder import Recorder
from preimage.observe.syscalls import NAMES
from preimage.store.store import Store

# starts the call's process: its pid, and how to wait for its exit status
Starter = Callable[[], tuple[int, Callable[[], int]]]


class SupervisionUnavailable(PreimageError):
    """Supervision cannot run here (no ``user_notif``, a listener already held, …)."""


@dataclass
class Outcome:
    """What a supervised call did: its exit status and its backup (``None``: it
    changed nothing), the number of syscalls answered and the time they took."""

    returncode: int
    backup_id: str | None
    post_backup_id: str | None = None
    records: int = 0
    notified: int = 0
    refused: list[str] = field(default_factory=list)
    uncaptured: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    background: bool = False
    value: Any = None
    loop: str = ""   # "compiled", or why the Python loop answered the syscalls
    native: int = 0  # of ``notified``, the syscalls the compiled loop answered itself

    def summary(self) -> list[str]:
        """What the call recorded, in lines for a person (the CLI prefixes them)."""
        if self.backup_id is None:
            lines = [f"observed {self.notified} syscall(s); nothing changed, no backup"]
        else:
            lines = [f"observed: {self.records} path(s) backed up before they changed in "
                     f"{self.backup_id} (restore: preimage restore {self.backup_id}; undo just "
                     f"this: preimage undo {self.backup_id})"]
        if self.loop:
            lines.append(f"syscalls answered by the {self.loop} loop" if self.loop == "compiled"
                         else f"syscalls answered by {self.loop}")
        lines += [f"not captured: {u}" for u in self.uncaptured]
        lines += self.notes
        if self.background:
            lines.append("processes the command left running stay watched; their changes go "
                         "to a backup labelled 'background of: …'")
        return lines

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view (``preimage run --json``)."""
        return {"observed": True, "backup": self.backup_id, "post_backup": self.post_backup_id,
                "records": self.records, "notified": self.notified, "refused": self.refused,
                "uncaptured": self.uncaptured, "notes": self.notes,
                "background": self.background, "returncode": self.returncode,
                "loop": self.loop}


class Loop:
    """Answers the stopped syscalls of one listener into one recorder."""

    def __init__(self, listener: int, recorder: Recorder, log: TextIO | None) -> None:
        self.listener = listener
        self.recorder = recorder   # replaced at a call boundary in session mode
        self.handlers: dict[int, Callable[[], None]] = {}   # more descriptors to serve
        self.log = log
        self.notified = 0
        self.native_answered = 0   # of them, answered in the compiled loop
        self.refused: list[str] = []
        lib, self.engine = compiled.library()   # "compiled", or why the Python loop runs
        self.native = Native(lib, listener) if lib is not None else None

    def close(self) -> None:
        """Free the compiled loop's state (the listener stays open)."""
        if self.native is not None:
            self.native.close()
            self.native = None

    def answer(self, n: kernel.Notification) -> None:
        """Record what ``n`` will change, then let it run (or refuse it, saying why)."""
        self.notified += 1
        name = NAMES.get(n.nr, f"syscall {n.nr}")
        try:
            changes = judge(n)
            if not kernel.still_valid(self.listener, n.id):
                return   # the process died (or was replaced) while it was read
            for change in changes:
                if refused_read_only(n.pid, change):
                    continue   # the kernel refuses it (EROFS): nothing will change there
                if change.how in ("name", "drop"):
                    self.recorder.name(change.path, dropped=change.how == "drop")
                elif change.how == "foreign":
                    self.recorder.foreign(change.path, n.pid, change.reason)
                elif change.how == "rmdir":
                    self.recorder.removed_dir(change.path)
                else:
                    self.recorder.object(change.path, content=change.how == "content")
        except ForeignPath as exc:
            # a sandbox's private mount: gone with it, and not reachable from here
            self.recorder.foreign(exc.path, n.pid, exc.reason)
        except (Unjudgeable, UnreadablePath, PreimageError, OSError) as exc:
            code = exc.errno if isinstance(exc, UnreadablePath) else (
                errno.EPERM if isinstance(exc, Unjudgeable) else errno.EIO)
            why = f"{name} of process {n.pid} refused ({os.strerror(code)}): {exc}"
            if not isinstance(exc, UnreadablePath) or code != errno.EFAULT:
                self.refused.append(why)
                if self.log is not None:
                    print(f"preimage: {why} — nothing was changed unrecorded", file=self.log)
            kernel.refuse(self.listener, n.id, code)
            return
        kernel.allow(self.listener, n.id)

    def run(self, until: int | None, deadline: float | None = None,
            on_deadline: Callable[[], None] | None = None) -> bool:
        """Answer syscalls until process descriptor ``until`` is readable (the call's
        own process exited: True) or no watched process is left (False).  At
        ``deadline`` (monotonic seconds) ``on_deadline`` is called once (it kills
        the call), and the loop goes on answering until the call is gone."""
        if self.native is not None:
            return self._run_native(self.native, until, deadline, on_deadline)
        poller = select.poll()
        poller.register(self.listener, select.POLLIN)
        if until is not None:
            poller.register(until, select.POLLIN)
        for fd in self.handlers:
            poller.register(fd, select.POLLIN)
        while True:
            wait = None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            ready = poller.poll(wait)
            if not ready and deadline is not None and on_deadline is not None:
                on_deadline()
                deadline = None
            for fd, events in ready:
                if fd == until:
                    return True
                if fd in self.handlers:
                    self.handlers[fd]()
                    continue
                if events & select.POLLIN:
                    n = kernel.receive(self.listener)
                    if n is not None:
                        self.answer(n)
                elif events & (select.POLLHUP | select.POLLERR):
                    return False


    def _run_native(self, native: Native, until: int | None, deadline: float | None,
                    on_deadline: Callable[[], None] | None) -> bool:
        """:meth:`run` with the compiled loop answering what it can; every syscall it
        hands over is answered by :meth:`answer`, as on the Python path."""
        fds = ([until] if until is not None else []) + list(self.handlers)
        ready = (ctypes.c_int * max(1, len(fds)))(*fds)
        result = compiled.Result()
        while True:
            native.follow(self.recorder)
            native.sync_trash()
            wait = -1 if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            status = native.serve(ready, len(fds), wait, result)
            fresh = native.take_links()
            self.notified += fresh
            self.native_answered += fresh
            if status == compiled.PUNT:
                self.answer(native.handed_over(result))
            elif status == compiled.FD:
                if result.fd == until:
                    return True
                self.handlers[result.fd]()
            elif status == compiled.TIMEOUT:
                if on_deadline is not None:
                    on_deadline()
                deadline = None
            elif status == compiled.HUP:
                return False
            elif status == compiled.ERROR:
                raise OSError(result.err, f"seccomp notification: {os.strerror(result.err)}")


def install_in_child(sock: socket.socket) -> None:
    """In the child, between fork and exec: install the filter, hand over the
    listener, keep no copy of it."""
    try:
        fd = kernel.install_filter()
    except OSError as exc:
        sock.sendall(b"E" + str(exc).encode())
        raise
    socket.send_fds(sock, [b"L"], [fd])
    os.close(fd)


def why_not_installed(sock: socket.socket, exc: Exception) -> str:
    """What the child said when it could not install the filter (else ``exc``)."""
    sock.setblocking(False)
    try:
        said = sock.recv(512)
    except OSError:
        said = b""
    finally:
        sock.setblocking(True)
    if not said.startswith(b"E"):
        return str(exc)
    text = said[1:].decode(errors="replace")
    if f"[Errno {errno.EBUSY}]" in text:
        return ("this process tree is already supervised (another seccomp listener holds it: "
                "preimage session, a sandbox)")
    return text


def receive_listener(sock: socket.socket) -> int:
    msg, fds, _flags, _addr = socket.recv_fds(sock, 512, 1)
    if not fds:
        why = msg[1:].decode(errors="replace") if msg.startswith(b"E") else "no listener"
        raise SupervisionUnavailable(f"cannot supervise the call: {why}")
    return fds[0]


@contextlib.contextmanager
def quiet_interrupts() -> Any:
    """Ctrl-C reaches the supervised command (same process group); the supervisor
    keeps answering until it exits instead of dying and failing its syscalls."""
    previous = {s: signal.signal(s, lambda *_: None) for s in (signal.SIGINT, signal.SIGQUIT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def require() -> None:
    """Raise :class:`SupervisionUnavailable` unless this system can supervise."""
    reason = kernel.unavailable_reason()
    if reason is not None:
        raise SupervisionUnavailable(f"supervision is unavailable: {reason}")


def run_command(
    argv: Sequence[str], *, store: Store, label: str = "",
    tool_call: dict[str, Any] | None = None, session: str | None = None,
    cwd: str | None = None, env: Mapping[str, str] | None = None,
    log: TextIO | None = sys.stderr, post_call: bool = True, timeout: float | None = None,
    parent_id: str | None = None, **popen: Any,
) -> Outcome:
    """Run ``argv`` under supervision; its changes' before-images become one backup.

    ``timeout``: seconds after which the command's process group is killed
    (it runs in a session of its own then).  ``parent_id``: the backup of the call this
    run is part of (``preimage guard``'s reading): the observed backup is recorded as a
    part of it, so undoing or restoring either covers both
    (:mod:`preimage.engine.call_parts`).  ``popen`` goes to
    :class:`subprocess.Popen` (``stdin``, ``stdout``, ``stderr``).

    Raises :class:`SupervisionUnavailable` when the filter cannot be installed
    (the command has not run then), ``FileNotFoundError`` for a missing program.
    """
    require()
    parent, child = socket.socketpair()

    def start() -> tuple[int, Callable[[], int]]:
        try:
            # the supervisor runs no threads, so preexec_fn is safe here
            proc = subprocess.Popen(list(argv), cwd=cwd, env=dict(env) if env else None,
                                    preexec_fn=lambda: install_in_child(child),  # noqa: PLW1509
                                    start_new_session=timeout is not None, **popen)
        except subprocess.SubprocessError as exc:
            raise SupervisionUnavailable(
                f"cannot supervise {argv[0]}: {why_not_installed(parent, exc)}") from exc
        finally:
            child.close()
        return proc.pid, proc.wait

    return _supervise(start, parent, store=store, label=label or " ".join(argv),
                      tool_call=tool_call, session=session, log=log, post_call=post_call,
                      timeout=timeout, parent_id=parent_id)


def run_function(
    fn: Callable[..., Any], *args: Any, store: Store, label: str = "",
    tool_call: dict[str, Any] | None = None, session: str | None = None,
    log: TextIO | None = sys.stderr, post_call: bool = True, **kwargs: Any,
) -> Outcome:
    """Call ``fn(*args, **kwargs)`` in a forked child under supervision; its return
    value (pickled back) is ``Outcome.value``; an exception it raised is raised here."""
    require()
    parent, child = socket.socketpair()
    result_r, result_w = os.pipe()

    def start() -> tuple[int, Callable[[], int]]:
        pid = os.fork()
        if pid == 0:   # pragma: no cover - the child
            code = 0
            try:
                parent.close()
                os.close(result_r)
                install_in_child(child)
                child.close()
                try:
                    payload = pickle.dumps((True, fn(*args, **kwargs)))
                except BaseException as exc:
                    payload = pickle.dumps((False, exc))
                with os.fdopen(result_w, "wb") as out:
                    out.write(payload)
            except BaseException:
                code = 70
            os._exit(code)
        child.close()
        os.close(result_w)
        return pid, lambda: os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    return _supervise(start, parent, store=store, label=label or getattr(fn, "__name__", "call"),
                      tool_call=tool_call, session=session, log=log, post_call=post_call,
                      result_fd=result_r)


def _supervise(
    start: Starter, sock: socket.socket, *, store: Store, label: str,
    tool_call: dict[str, Any] | None, session: str | None, log: TextIO | None,
    post_call: bool, result_fd: int | None = None, timeout: float | None = None,
    parent_id: str | None = None,
) -> Outcome:
    started = time.perf_counter()
    compiled.library()   # built (once) before the call starts, not while it waits
    with sock, quiet_interrupts():
        pid, wait = start()
        pidfd = os.pidfd_open(pid)
        try:
            listener = receive_listener(sock)
        except SupervisionUnavailable:
            wait()
            os.close(pidfd)
            raise
        kernel.sync_wakeups(listener)
        recorder = Recorder(store, label=label, tool_call=tool_call, session=session,
                            parent_id=parent_id)
        loop = Loop(listener, recorder, log)
        try:
            reader = _Reader(result_fd)
            def kill() -> None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                outcome_notes.append(f"killed after {timeout} s")

            outcome_notes: list[str] = []
            loop.run(pidfd, None if timeout is None else time.monotonic() + timeout, kill)
            reader.drain()
            returncode = wait()
        finally:
            loop.close()
            recorder.close()
            os.close(pidfd)
    outcome = Outcome(returncode, recorder.backup_id,
                      records=recorder.count + recorder.linked, notified=loop.notified,
                      refused=loop.refused, uncaptured=recorder.uncaptured, notes=outcome_notes,
                      loop=loop.engine, native=loop.native_answered)
    if outcome.returncode < 0:
        outcome.returncode = 128 - outcome.returncode
    outcome.value = reader.value()
    background = still_watched(listener)
    if background:
        outcome.background = True
        continue_detached(listener, store.home, label, session, tool_call)
    os.close(listener)
    if post_call and recorder.backup_id is not None:
        from preimage.engine.undo import capture_after

        after = capture_after(recorder.backup_id, store=store)
        outcome.post_backup_id = after.id if after is not None else None
    outcome.seconds = time.perf_counter() - started
    return outcome


class _Reader:
    """The pickled result of a supervised function (read while it runs, so a large
    result cannot block the child on a full pipe)."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        self.data = b""

    def drain(self) -> None:
        if self.fd is None:
            return
        with os.fdopen(self.fd, "rb") as fh:
            self.data = fh.read()
        self.fd = None

    def value(self) -> Any:
        if not self.data:
            return None
        ok, value = pickle.loads(self.data)   # noqa: S301 - our own forked child wrote it
        if not ok:
            raise value
        return value


def still_watched(listener: int) -> bool:
    """Whether any process under the filter is still alive (the listener hangs up
    when the last one exits)."""
    ready = select.poll()
    ready.register(listener, select.POLLIN)
    return not any(ev & (select.POLLHUP | select.POLLERR) and not ev & select.POLLIN
                   for _fd, ev in ready.poll(0))


def _close_streams(keep: int) -> None:
    """Close every inherited pipe, socket and terminal but ``keep``.  Files stay open:
    SQLite's per-process lock table, copied by the fork, still refers to them, and
    closing them under it makes the continuation's own catalog fail to open."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= 2 or fd == keep:
            continue
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode):
            os.close(fd)


def continue_detached(listener: int, home: Path, label: str, session: str | None,
                       tool_call: dict[str, Any] | None) -> None:
    """Keep answering the processes the call left running, in a detached process.

    It is forked twice, the middle process exiting at once, so the continuation is
    nobody's child here: a long-lived caller (a session, an audit over thousands of
    calls) does not collect a zombie for each continuation that ends.  The middle
    process lets go of the caller's pipes, sockets and terminals before it forks, so
    once this returns no leftover holds them: an inherited pipe would keep whoever
    reads the caller's output (a harness, a test runner) waiting until the leftovers
    end."""
    middle = os.fork()
    if middle != 0:
        os.waitpid(middle, 0)
        return
    try:   # pragma: no cover - the middle process
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        _close_streams(keep=listener)
        if os.fork() != 0:
            os._exit(0)
    except BaseException:
        os._exit(70)
    code = 0   # pragma: no cover - the detached continuation
    try:
        with Store(home) as store:
            recorder = Recorder(store, label=f"background of: {label}"[:200],
                                tool_call=tool_call, session=session)
            try:
                loop = Loop(listener, recorder, None)
                try:
                    loop.run(None)
                finally:
                    loop.close()
            finally:
                recorder.close()
    except BaseException:
        code = 70
    os._exit(code)
