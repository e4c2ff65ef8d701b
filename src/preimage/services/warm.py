"""The warm process: ``preimage`` commands forked from an interpreter that has
already imported preimage, its models and its drivers.

Starting Python and importing preimage, pydantic and a database driver costs
about 0.4 s of CPU before a command does anything — as long as ``pg_dump``
takes to dump a million-row table.  So, as Gradle and Bazel do with their
daemons, the first command of a session starts a warm process in the
background (and runs in its own process this once); every later command of
that kind sends it its arguments, working directory, environment and its
standard input, output and error (the descriptors themselves, over a Unix
socket), and the warm process forks a child that runs the command exactly as
this process would have, writing straight to the caller's terminal or pipes.
The caller waits for the child's exit status and forwards the signals it gets
(Ctrl-C, ``kill``) to it.

One warm process runs per user and installation (:mod:`preimage.services.wire`), for
every ``PREIMAGE_HOME``, config and tool setting: each command's child takes the
caller's whole environment and working directory before it runs, and the warm process
itself keeps only :func:`preimage.services.wire.resident_env` of the one it was started
with, so nothing it imported or holds belongs to one caller.  Its socket is
``cli-<key>.sock`` (0600) in the user's runtime directory (0700).  It serves only a
caller of its own user confined exactly as it is — same namespaces, root, credentials,
capabilities, no_new_privs, seccomp filters and LSM label
(:func:`preimage.services.peer.refusal`): a command never runs with rights its caller
does not have; any other caller runs its command itself.  A caller killed outright
(``kill -9``) ends the command it asked for.
It forks only while it has no thread but its own,
and exits after ``$PREIMAGE_SERVE_IDLE`` seconds (default 900) with no command.
``PREIMAGE_SERVICE=off`` keeps every command in its own process, as it keeps
hook decisions in the hook's.  Only commands that never prompt are served;
the others (``guard``, ``serve``, ``install``…) always run in their own process.

This module's client half imports only the standard library.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
import time
import types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from preimage.services.wire import Address

#: The commands a warm process runs: none of them prompts or keeps the terminal.
SERVED = frozenset({
    "capture", "restore", "undo", "diff", "score", "list", "show", "check", "stats",
    "forget", "prune", "copy", "export", "log", "connectors", "rules", "quota",
})
CONNECT_SECONDS = 1.0
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
_LENGTH = struct.Struct(">I")
MAX_REQUEST = 16 << 20


def address(env: dict[str, str] | os._Environ[str] | None = None) -> Address:
    """The warm process's socket, lock and start marker (in ``env``'s runtime directory)."""
    from preimage.services import wire

    return wire.Address.from_env(env, kind="cli")


# ------------------------------------------------------------------ client
def run_served(argv: list[str]) -> int | None:
    """Run ``preimage ARGV`` in the warm process: its exit status, or ``None`` when this
    process must run it itself (not a served command, no warm process yet — one is
    started for the next command — or the warm process closed the request untaken)."""
    from preimage.services import wire

    if not argv or argv[0] not in SERVED or wire.service_off(os.environ):
        return None
    try:
        where = address()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    with sock:
        sock.settimeout(CONNECT_SECONDS)
        try:
            sock.connect(where.socket)
        except OSError:
            start(where)
            return None
        try:
            cwd = os.getcwd()
        except OSError:
            return None  # a directory that is gone: the command says so itself
        main = sys.modules["__main__"]
        request = json.dumps({  # the last two: how click names the program in its messages
            "op": "run", "argv": argv, "cwd": cwd, "env": dict(os.environ),
            "argv0": sys.argv[0], "main_package": getattr(main, "__package__", None),
        }).encode("utf-8", "surrogateescape")
        frame = _LENGTH.pack(len(request)) + request
        relay = _Relay()  # from here a signal is for the command, wherever it runs
        try:
            sent = socket.send_fds(sock, [frame], [0, 1, 2])
            sock.sendall(frame[sent:])
        except OSError:
            relay.give_back()
            return None  # the request did not arrive whole: nothing ran
        sock.settimeout(TAKE_SECONDS)  # the child says it started, or the request is closed
        reader = sock.makefile("rb")
        first = _line(reader)
        if first is None:
            relay.give_back()
            return None  # closed untaken: run it here
        if first.get("event") != "started":
            relay.give_back()
            return _unknown("the warm process answered oddly", first)
        relay.attach(int(first["pid"]))
        sock.settimeout(None)
        doc = _line(reader)
        if doc is None or doc.get("event") != "exit":
            if relay.sent:  # it died of the signal this process passed on, as this one would
                return 128 + relay.sent[-1]
            return _unknown(f"the warm process went away while running the command "
                            f"(pid {relay.pid})", doc)
        return int(doc.get("status", 1))


TAKE_SECONDS = 120.0


def _line(reader: Any) -> dict[str, Any] | None:
    """The next JSON line (``None`` at the end of the stream or on a timeout)."""
    while True:
        try:
            raw = reader.readline()
            break
        except InterruptedError:
            continue
        except OSError:
            return None
    try:
        doc = json.loads(raw) if raw else None
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _unknown(why: str, doc: object) -> int:
    sys.stderr.write(f"preimage: {why}; the command's outcome is unknown — run "
                     f"`preimage list` to see whether it finished ({doc!r})\n")
    return 70


class _Relay:
    """Holds the signals this process gets while a warm child runs its command, and
    passes them on to the child once its pid is known."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.pending: list[int] = []
        self.sent: list[int] = []
        self.old = {signum: signal.signal(signum, self._on) for signum in _SIGNALS}

    def _on(self, signum: int, _frame: object) -> None:
        if self.pid is None:
            self.pending.append(signum)
        else:
            self._send(signum)

    def _send(self, signum: int) -> None:
        self.sent.append(signum)
        try:
            os.kill(self.pid, signum)  # type: ignore[arg-type]
        except OSError:
            pass

    def attach(self, pid: int) -> None:
        self.pid = pid
        for signum in self.pending:
            self._send(signum)
        self.pending.clear()

    def give_back(self) -> None:
        """Nothing runs elsewhere: the old handlers again, and any signal held re-raised."""
        for old, handler in self.old.items():
            signal.signal(old, handler)
        for signum in self.pending:
            os.kill(os.getpid(), signum)


def start(where: Address) -> bool:
    """Start the warm process detached, unless a command did so moments ago."""
    from preimage.services import wire

    return wire.start_detached(where.started,
                              ["-c", "from preimage._entry import serve_warm; serve_warm()"], 10.0)


def ask(where: Address, op: str) -> dict[str, Any] | None:
    """``status`` or ``stop``: the warm process's answer, or ``None`` when none runs."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5.0)
            sock.connect(where.socket)
            body = json.dumps({"op": op}).encode()
            sock.sendall(_LENGTH.pack(len(body)) + body)
            line = sock.makefile("rb").readline()
    except OSError:
        return None
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


# ------------------------------------------------------------------ server
def _warm_up(preload: Sequence[str]) -> None:
    """Import what commands need (``preload``: ``module`` or ``module:name`` of a lazy
    package), so that every child starts with it."""
    import importlib

    for path in preload:
        module, _, name = path.partition(":")
        try:
            loaded = importlib.import_module(module)
            if name:
                getattr(loaded, name)  # a lazy package imports the connector's modules here
        except Exception:  # an extra that is not installed: a command needing it says so
            pass


def serve(idle: float, command: Callable[[], int], preload: Sequence[str] = (),
          warm_up: Callable[[], None] | None = None) -> int:
    """Listen until ``idle`` seconds pass with no command running or arriving; each
    request runs ``command`` (the full command line) in a forked child, after
    ``preload`` was imported once here."""
    import contextlib
    import fcntl
    import gc
    import select
    import threading

    from preimage.services import wire
    from preimage.services.peer import confinement, same_confinement

    here = address()
    lock = os.open(here.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 3  # another warm process holds it
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    kept = wire.resident_env(os.environ)   # the starter's settings and secrets are not ours
    os.environ.clear()
    os.environ.update(kept)
    _warm_up(preload)
    if warm_up is not None:
        warm_up()
    # what is loaded now is shared with every child: out of the collector's sight, a
    # child's collections neither walk it nor copy its pages (they write to each object)
    gc.collect()
    gc.freeze()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the children
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # leave by the finally below
    with contextlib.suppress(FileNotFoundError):
        os.unlink(here.socket)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(here.socket)
    finally:
        os.umask(old)
    listener.listen(64)
    own = confinement("self")
    children: set[int] = set()
    served = 0
    last = time.monotonic()
    try:
        while True:
            ready, _, _ = select.select([listener], [], [], 1.0)
            children = {pid for pid in children if _alive(pid)}
            if children or ready:
                last = time.monotonic()
            elif time.monotonic() - last > idle:
                return 0
            if not ready:
                continue
            conn, _ = listener.accept()
            if not same_confinement(conn, own):
                conn.close()   # unanswered: the caller runs the command with its own rights
                continue
            outcome = _take(conn, here, {"running": len(children), "served": served},
                            threading.active_count(), command,
                            inherited=(listener.fileno(), lock))
            if outcome == "stop":
                return 0
            if isinstance(outcome, int):
                children.add(outcome)
                served += 1
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(here.socket)
        os.close(lock)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _take(conn: socket.socket, where: Address, counts: dict[str, int], threads: int,
          command: Callable[[], int], inherited: tuple[int, ...] = ()) -> int | str | None:
    """Read one request: fork its command (the child's pid), answer ``status``, or
    ``"stop"``.  A request it cannot take is closed unanswered: the caller runs it."""
    fds: list[int] = []
    try:
        with conn:
            conn.settimeout(5.0)
            data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
            while len(data) < _LENGTH.size or len(data) < _LENGTH.size + _LENGTH.unpack(
                    data[:_LENGTH.size])[0]:
                if len(data) > MAX_REQUEST:
                    raise ValueError("request too large")
                more = conn.recv(1 << 16)
                if not more:
                    raise ValueError("short request")
                data += more
            request = json.loads(data[_LENGTH.size:].decode("utf-8", "surrogateescape"))
            op = request.get("op")
            if op in ("status", "stop"):
                conn.sendall(json.dumps({"event": op, "pid": os.getpid(), **counts,
                                         "socket": where.socket}).encode() + b"\n")
                return "stop" if op == "stop" else None
            if op != "run" or len(fds) != 3 or threads != 1:
                return None  # forking beside another thread could inherit a held lock
            pid = os.fork()
            if pid == 0:
                for fd in inherited:  # the listener and the lock stay the warm process's
                    os.close(fd)
                _child(conn, fds, request, command)  # never returns
            return pid
    except (OSError, ValueError, KeyError, TypeError):
        return None
    finally:
        for fd in fds:
            os.close(fd)


def _child(conn: socket.socket, fds: list[int], request: dict[str, Any],
           command: Callable[[], int]) -> None:
    """Run the command as a fresh process would, tell the caller its status, and exit."""
    status = 1
    try:
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            os.close(fd)
        fds.clear()
        conn.settimeout(None)
        conn.sendall(json.dumps({"event": "started", "pid": os.getpid()}).encode() + b"\n")
        _end_with_caller(conn)
        os.chdir(request["cwd"])
        from preimage.services import wire

        wire.take_environment(request["env"])
        _streams()
        sys.argv = [request.get("argv0") or "preimage", *request["argv"]]
        main = types.ModuleType("__main__")  # the caller's, not this process's -m module
        main.__package__ = request.get("main_package")
        sys.modules["__main__"] = main
        status = command()
    except BaseException:  # nothing may return into the warm process's loop
        import traceback

        traceback.print_exc()
    finally:
        try:
            conn.sendall(json.dumps({"event": "exit", "status": status}).encode() + b"\n")
        finally:
            os._exit(status)


def _end_with_caller(conn: socket.socket) -> None:
    """End this command when its caller goes away.  The caller passes on the signals it
    can catch; one it cannot (``kill -9``) closes its end of ``conn`` as it dies, and
    this ends the command as that signal would have ended it in the caller's process."""
    import threading

    def watch() -> None:
        try:
            while conn.recv(1 << 10):   # the caller sends nothing more: only its end counts
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="caller-watch", daemon=True).start()


def _streams() -> None:
    """New ``sys.stdin``/``stdout``/``stderr`` over descriptors 0-2, set up as Python sets
    them up for a process started with them (line-buffered on a terminal)."""
    import io

    encoding = os.environ.get("PYTHONIOENCODING", "").split(":")[0] or sys.stdout.encoding
    for fd, name, mode in ((0, "stdin", "rb"), (1, "stdout", "wb"), (2, "stderr", "wb")):
        stream = io.TextIOWrapper(
            open(fd, mode, closefd=False), encoding=encoding,  # noqa: SIM115 — stays open
            errors="backslashreplace" if name == "stderr" else "strict",
            line_buffering=os.isatty(fd) or name == "stderr", write_through=name == "stderr")
        setattr(sys, name, stream)
