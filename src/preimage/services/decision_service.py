"""``preimage serve``: the resident decision service the hook client talks to.

One process per user and installation (see :mod:`preimage.services.wire`), started
on demand by the first hook call and gone after ``idle`` seconds without a call.  It
imports the layer, compiles the rules and parses a command once at start; then each
connection is answered in a child forked for it, which takes the calling hook's whole
environment (``PREIMAGE_HOME``, ``PREIMAGE_CONFIG_DIR``, ``PGHOST``, credentials…)
before it decides, and exits when it has answered.  So one service serves every home,
config and session of its user, and:

* nothing of one caller stays in the service: store handles, connections, config and
  secrets live in the child and end with it, so a home that is deleted is held by
  nobody (the service itself runs in ``/`` and keeps only
  :func:`preimage.services.wire.resident_env` of the environment it was started with);
* a capture that takes minutes in one session never holds up the answer to another
  session's read-only call: each call has a process of its own;
* a child that crashes takes down one call, never the service.

Forking costs about a millisecond here, against a hook process's ~30 ms start.  Only
callers of the service's own uid (``SO_PEERCRED``), confined exactly as it is
(:func:`preimage.services.peer.refusal`), are served — the service captures with its
own rights, so a sandboxed hook must not get more through it; anyone else is refused
and decides in its own process.  Every answer is made by
:func:`preimage.layer.harnesses.hook.handle`, the same function the in-process
fallback uses.  The log (``serve.log`` in the runtime directory, beside the socket;
one JSON line per start, call, refusal and exit) is the user's, not a home's.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import signal
import socket
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from preimage.services import wire
from preimage.services.call_process import (
    Request,
    Spare,
    answer,
    become_call_process,
    walk_capture_path,
    walk_decision_path,
)
from preimage.services.peer import confinement, peer, refusal

DEFAULT_IDLE = 900.0   # seconds without a call before the service exits
WARM_FOLDERS = 8       # config folders whose rules the service keeps compiled for its children
HEADER_SECONDS = 2.0   # a client sends its request's first line as it connects
LOG_LIMIT = 1 << 20    # serve.log is rotated to serve.log.1 beyond this many bytes


def serve_log_path(address: wire.Address | None = None) -> Path:
    """``serve.log`` in the runtime directory (the user's, not one home's)."""
    folder = address.folder if address is not None else wire.runtime_dir()
    return Path(folder) / "serve.log"


class DecisionService:
    """Listen on ``address`` and answer hook calls until idle or stopped."""

    def __init__(self, address: wire.Address, *, idle: float = DEFAULT_IDLE,
                 log: Path | None = None) -> None:
        self.address = address
        self.idle = idle
        self.log_path = log or serve_log_path(address)
        self.started = time.time()
        self.last_call = time.time()
        self.served: Counter[str] = Counter()
        self.children: set[int] = set()
        self._stop = False
        self._lock_fd: int | None = None
        self._listener: socket.socket | None = None
        self._notes_r, self._notes_w = -1, -1   # children name the config folders they used
        self._notes = b""
        self.warm_folders: dict[str, int] = {}   # oldest first: the id of its rules
        self.spare: Spare | None = None

    # ------------------------------------------------------------ log
    def log(self, event: str, **fields: Any) -> None:
        """One JSON line in the service log (never raises)."""
        try:
            with contextlib.suppress(OSError):
                if self.log_path.stat().st_size > LOG_LIMIT:
                    os.replace(self.log_path, self.log_path.with_name(self.log_path.name + ".1"))
            fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a") as fh:
                fh.write(json.dumps({"time": round(time.time(), 3), "event": event,
                                     "pid": os.getpid(), **fields}, default=str) + "\n")
        except OSError:
            pass

    # ------------------------------------------------------------ life cycle
    def claim(self) -> bool:
        """Take the service's lock; ``False`` when another service holds it."""
        fd = os.open(self.address.lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd
        return True

    def warm(self) -> None:
        """Import the layer, compile the rules and run the shell parser once, capture a
        scratch folder as a protected call does (and import the model tier when the
        starting config names a model), all before the first fork: every child starts
        with them imported and made.  No thread is left running — a
        fork beside one could inherit a lock it holds."""
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
        from preimage.layer.call import ToolCall
        from preimage.layer.config import LayerConfig
        from preimage.layer.deciding.backup_layer import BackupLayer
        from preimage.layer.deciding.rules import load_rules
        from preimage.layer.harnesses.hook import handle  # noqa: F401 - the import is the point

        BackupLayer(rules=load_rules(), config=LayerConfig()).plan(
            ToolCall.shell("ls -la | grep x > /dev/null", cwd="/"))
        with contextlib.suppress(Exception):   # a broken config is reported per call
            walk_decision_path(thread=False)
        with contextlib.suppress(Exception):   # a capture's failure is reported per call
            walk_capture_path()
        try:
            model = LayerConfig.load().model
        except Exception:  # a broken config is reported per call, by handle()
            model = None
        if model:
            with contextlib.suppress(Exception):
                import litellm  # noqa: F401 - warm the model tier's import
        from preimage.layer.config import rules_dir

        self._learn({str(rules_dir())})

    def _learn(self, folders: set[str]) -> bool:
        """Keep the rules of the config folders children last used compiled here (at most
        :data:`WARM_FOLDERS`, none that is gone), so the next child inherits them instead
        of validating them again; freeze what is loaded, so children do not copy it.
        ``True`` when a folder's rules were compiled anew (a spare lacks them)."""
        import gc

        from preimage.layer.deciding.rules import keep_rule_sets, load_rules

        changed = False
        for folder in folders:
            known = self.warm_folders.pop(folder, 0)
            try:
                self.warm_folders[folder] = id(load_rules(Path(folder)))
            except Exception:   # a broken rules file is reported per call
                self.warm_folders[folder] = 0
            changed = changed or self.warm_folders[folder] != known
        for folder in list(self.warm_folders):   # oldest first; a deleted config goes at once
            gone = folder not in folders and not os.path.isdir(os.path.dirname(folder))
            if gone or len(self.warm_folders) > WARM_FOLDERS:
                del self.warm_folders[folder]
        keep_rule_sets(self.warm_folders)
        if changed:
            gc.freeze()
        return changed

    def bind(self) -> socket.socket:
        """Listen on the socket, 0600 (a stale socket of a dead service is replaced)."""
        path = str(self.address.socket)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(path)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        sock.listen(64)
        self._listener = sock
        return sock

    def serve_forever(self) -> int:
        """Run until idle, ``stop`` or SIGTERM; 0 on a clean exit, 3 when one already runs."""
        if not self.claim():
            return 3
        kept = wire.resident_env(os.environ)   # the starter's settings and secrets are not ours
        os.environ.clear()
        os.environ.update(kept)
        os.chdir("/")   # no caller's folder is held open
        try:
            self.warm()
            sock = self.bind()
        except Exception as exc:  # nothing listens: clients decide in-process
            self.log("failed", error=f"{type(exc).__name__}: {exc}")
            self._release()
            raise
        ino = os.stat(self.address.socket).st_ino
        own = confinement("self")
        self._notes_r, self._notes_w = os.pipe()
        os.set_blocking(self._notes_r, False)
        self._fork_spare()
        self.last_call = time.time()  # idle from now, not from before warm()
        self.log("start", socket=str(self.address.socket), idle=self.idle)
        if _main_thread():
            signal.signal(signal.SIGTERM, self._on_stop)
            signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the children
        reason = "stopped"
        try:
            while not self._stop:
                ready, _, _ = select.select([sock.fileno(), self._notes_r], [], [], 0.5)
                self.children = {pid for pid in self.children if _alive(pid)}
                if self.children:
                    self.last_call = time.time()
                if self._notes_r in ready:
                    self._read_notes()
                if self.spare is None and (self._notes_r in ready or not ready):
                    # The call handed to the last spare has been answered (its process
                    # wrote its notes), or nothing happened for a while: the next spare is
                    # forked now, not beside the call it would slow down.
                    self._fork_spare()
                if sock.fileno() not in ready:
                    if time.time() - self.last_call > self.idle:
                        reason = "idle"
                        break
                    if any(not os.path.isdir(os.path.dirname(f)) for f in self.warm_folders):
                        self._learn(set())   # a config folder was deleted: drop its rules
                    continue
                try:
                    conn, _ = sock.accept()
                except OSError:
                    continue
                self.last_call = time.time()
                self._take(conn, own)
        finally:
            sock.close()
            with contextlib.suppress(OSError):
                if os.stat(self.address.socket).st_ino == ino:
                    os.unlink(self.address.socket)
            if self.spare is not None:
                self.spare.retire()
            # calls in flight finish in their own processes; nothing waits for them here
            self.log("exit", reason=reason, served=dict(self.served),
                     in_flight=len(self.children))
            self._release()
        return 0

    def _read_notes(self) -> None:
        """Take what call processes reported (``rules FOLDER``, ``model``) and load it."""
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while chunk := os.read(self._notes_r, 1 << 16):
                self._notes += chunk
        *lines, self._notes = self._notes.split(b"\n")
        folders = {line[6:].decode("utf-8", "surrogateescape") for line in lines
                   if line.startswith(b"rules ")}
        changed = bool(folders) and self._learn(folders)
        modules = sorted({name.decode() for line in lines if line.startswith(b"modules ")
                          for name in line.split()[1:]} - set(sys.modules))
        if b"model" in lines and "litellm" not in sys.modules:
            modules.insert(0, "litellm")
        if modules:
            # A call needed them: import them here once (this pauses new calls for the
            # import; a client whose call is not taken within 2 s decides in-process).
            self.log("importing", modules=len(modules), model="litellm" in modules)
            changed = _import(modules) or changed
            if _threads() > 1:   # a fork beside a thread could inherit a lock it holds
                self.log("stopping", why="an imported module started a thread")
                self._stop = True
                return
        if changed and self.spare is not None:
            self.spare.retire()   # it was forked before these rules were compiled
            self._fork_spare()

    def _closing(self) -> list[int]:
        """The service's own descriptors, which no call process keeps."""
        fds = [self._notes_r]
        if self._listener is not None:
            fds.append(self._listener.fileno())
        if self._lock_fd is not None:
            fds.append(self._lock_fd)
        return fds

    def _fork_spare(self) -> None:
        self.spare = Spare.fork(self._closing(), self.log, self._notes_w)

    def _on_stop(self, *_: object) -> None:
        self._stop = True

    def _release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # ------------------------------------------------------------ one connection
    def _take(self, conn: socket.socket, own: tuple[str, ...] | None) -> None:
        """Refuse the caller, answer ``status`` or ``stop``, or fork a child that answers
        a hook call.  Only the request's first line is read here (a client sends it as it
        connects); the payload is read by the child."""
        with conn:
            why = refusal(conn, own)
            pid, uid = _peer(conn)
            if why is not None:
                self.log("refused", peer_pid=pid, peer_uid=uid, why=why)
                with contextlib.suppress(OSError):
                    conn.settimeout(1.0)
                    wire.reply(conn, {"event": "error", "error": f"refused: {why}"})
                return
            conn.settimeout(HEADER_SECONDS)
            reader = wire.LineReader(conn)
            try:
                head = reader.line()
                if head is None:
                    return
                size = int(head.get("body", 0))
                if not 0 <= size <= wire.MAX_BODY:
                    raise ValueError(f"body of {size} bytes refused")
            except (OSError, ValueError) as exc:
                self.log("bad-request", peer_pid=pid, error=str(exc))
                with contextlib.suppress(OSError):
                    wire.reply(conn, {"event": "error", "error": f"bad request: {exc}"})
                return
            op = head.get("op")
            with contextlib.suppress(OSError):
                if head.get("v") != wire.PROTOCOL:
                    wire.reply(conn, {"event": "error", "error": f"protocol {head.get('v')!r} "
                                      f"not spoken; this service speaks {wire.PROTOCOL}"})
                elif op == "status":
                    wire.reply(conn, {"event": "status", **self.status()})
                elif op == "stop":
                    self.log("stop-requested", peer_pid=pid)
                    wire.reply(conn, {"event": "stopping", "pid": os.getpid()})
                    self._stop = True
                elif op != "hook":
                    wire.reply(conn, {"event": "error", "error": f"unknown op {op!r}"})
            if op != "hook" or head.get("v") != wire.PROTOCOL:
                return
            request = Request(head, size, reader.buf, pid)
            spare, self.spare = self.spare, None
            if spare is not None and spare.hand(conn, request):
                child: int | None = spare.pid
            else:
                child = self._fork_call(conn, request)
            if child is not None:
                self.children.add(child)
                self.served["hook"] += 1

    def _fork_call(self, conn: socket.socket, request: Request) -> int | None:
        """Answer ``request`` in a process forked for it now (no spare was ready)."""
        try:
            child = os.fork()
        except OSError as exc:  # no process to spare: the client decides in-process
            self.log("fork-failed", error=str(exc))
            return None
        if child == 0:
            code = 0
            try:
                become_call_process(self._closing())
                answer(conn, request, self.log, self._notes_w)
            except BaseException:  # nothing may return into the service's loop
                code = 1
            finally:
                os._exit(code)
        return child

    def status(self) -> dict[str, Any]:
        """What ``preimage serve --status`` prints."""
        return {
            "pid": os.getpid(), "socket": str(self.address.socket), "key": self.address.key,
            "started": self.started, "uptime": round(time.time() - self.started, 1),
            "idle_exit": self.idle, "idle_for": round(time.time() - self.last_call, 1),
            "in_flight": len(self.children), "calls": sorted(self.children),
            "served": {"hook": self.served["hook"]},
            "log": str(self.log_path), "uid": os.getuid(),
            "warm_rules": list(self.warm_folders),
        }


def _import(names: list[str]) -> bool:
    """Import ``names`` (any that fails is skipped: the call imports it itself); whether
    anything was imported.  No thread may be left running: the service forks."""
    import importlib

    before = len(sys.modules)
    for name in names:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    return len(sys.modules) > before


def _threads() -> int:
    import threading

    return threading.active_count()


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _peer(conn: socket.socket) -> tuple[int, int]:
    """``(pid, uid)`` of the caller, ``(0, -1)`` when the kernel does not say."""
    try:
        return peer(conn)
    except OSError:
        return 0, -1


def idle_seconds() -> float:
    """``$PREIMAGE_SERVE_IDLE`` or the default."""
    try:
        return float(os.environ.get("PREIMAGE_SERVE_IDLE") or DEFAULT_IDLE)
    except ValueError:
        return DEFAULT_IDLE


def status(address: wire.Address | None = None) -> dict[str, Any] | None:
    """The running service's status, or ``None`` when none answers."""
    try:
        doc = wire.ask(address or wire.Address.from_env(), "status")
    except OSError:
        return None
    return doc if doc.get("event") == "status" else None


def stop(address: wire.Address | None = None, wait: float = 35.0) -> int | None:
    """Ask the service to exit and wait until it has; its pid, or ``None`` if none ran."""
    address = address or wire.Address.from_env()
    try:
        doc = wire.ask(address, "stop")
    except OSError:
        return None
    end = time.monotonic() + wait
    while time.monotonic() < end:  # the lock is released as the process's last act
        fd = os.open(address.lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            time.sleep(0.05)
        finally:
            os.close(fd)
    return int(doc.get("pid", 0)) or None
