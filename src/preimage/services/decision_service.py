"""``preimage serve``: the resident decision service the hook client talks to.

One process per user and settings (see :mod:`preimage.services.wire`),
started on demand by the first hook call and gone after ``idle`` seconds
without a call.  It imports the layer, compiles the rules and parses a
command once at start, so each hook call costs a socket round trip and the
decision itself; store connections, connector clients and the model tier
(litellm, with its bundled cost map) stay warm in it.

Each connection is served by its own thread: a capture that takes minutes in
one session never holds up the answer to another session's read-only call.
Peers of another uid are refused (``SO_PEERCRED``) even if the socket's 0600
mode were loosened.  Every answer is made by
:func:`preimage.layer.harnesses.hook.handle`, the same function the in-process fallback
uses.  The log (``serve.log`` beside the hook log) has one JSON line per
start, call, refusal and exit.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from preimage.services import wire

DEFAULT_IDLE = 900.0   # seconds without a call before the service exits


def serve_log_path() -> Path:
    """``serve.log`` beside the hook log."""
    return Path(wire.log_dir()) / "serve.log"


@dataclass
class _Counters:
    started: float = field(default_factory=time.time)
    last_call: float = field(default_factory=time.time)
    in_flight: int = 0
    served: Counter[str] = field(default_factory=Counter)


class DecisionService:
    """Listen on ``address`` and answer hook calls until idle or stopped."""

    def __init__(self, address: wire.Address, *, idle: float = DEFAULT_IDLE,
                 log: Path | None = None) -> None:
        self.address = address
        self.idle = idle
        self.log_path = log or serve_log_path()
        self.counters = _Counters()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._lock_fd: int | None = None
        self._listener: socket.socket | None = None

    # ------------------------------------------------------------ log
    def log(self, event: str, **fields: Any) -> None:
        """One JSON line in the service log (never raises)."""
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
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
        """Import the layer, compile the rules and run the shell parser once."""
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        from preimage.layer.call import ToolCall
        from preimage.layer.config import LayerConfig
        from preimage.layer.deciding.backup_layer import BackupLayer
        from preimage.layer.deciding.rules import load_rules
        from preimage.layer.harnesses.hook import handle  # noqa: F401 - the import is the point

        BackupLayer(rules=load_rules(), config=LayerConfig()).plan(
            ToolCall.shell("ls -la | grep x > /dev/null", cwd="/"))
        try:
            model = LayerConfig.load().model
        except Exception:  # a broken config is reported per call, by handle()
            model = None
        if model:
            threading.Thread(target=_import_litellm, name="warm-litellm", daemon=True).start()

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
        sock.settimeout(0.5)
        self._listener = sock
        return sock

    def serve_forever(self) -> int:
        """Run until idle, ``stop`` or SIGTERM; 0 on a clean exit, 3 when one already runs."""
        if not self.claim():
            return 3
        try:
            self.warm()
            sock = self.bind()
        except Exception as exc:  # nothing listens: clients decide in-process
            self.log("failed", error=f"{type(exc).__name__}: {exc}")
            self._release()
            raise
        ino = os.stat(self.address.socket).st_ino
        with self._lock:
            self.counters.last_call = time.time()  # idle from now, not from before warm()
        self.log("start", socket=str(self.address.socket), idle=self.idle,
                 settings=sorted(wire.settings(os.environ)))
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: self._stop.set())
            signal.signal(signal.SIGINT, lambda *_: self._stop.set())
        reason = "stopped"
        try:
            while not self._stop.is_set():
                try:
                    conn, _ = sock.accept()
                except TimeoutError:
                    with self._lock:
                        free = self.counters.in_flight == 0
                        quiet = free and time.time() - self.counters.last_call > self.idle
                    gone = wire.home_gone() if free else None
                    if quiet or gone:
                        reason = gone or "idle"
                        break
                    continue
                threading.Thread(target=self._serve_conn, args=(conn,), daemon=True).start()
        finally:
            sock.close()
            with contextlib.suppress(OSError):
                if os.stat(self.address.socket).st_ino == ino:
                    os.unlink(self.address.socket)
            self._drain()
            self.log("exit", reason=reason, served=dict(self.counters.served))
            self._release()
        return 0

    def _drain(self, limit: float = 30.0) -> None:
        """Let calls in flight finish (bounded) before the process goes."""
        end = time.monotonic() + limit
        while time.monotonic() < end:
            with self._lock:
                if self.counters.in_flight == 0:
                    return
            time.sleep(0.05)

    def _release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # ------------------------------------------------------------ one connection
    def _serve_conn(self, conn: socket.socket) -> None:
        with conn:
            pid, uid = _peer(conn)
            if uid != os.getuid():
                self.log("refused", peer_pid=pid, peer_uid=uid)
                with contextlib.suppress(OSError):
                    wire.reply(conn, {"event": "error", "error": "refused: another user's process"})
                return
            conn.settimeout(10.0)
            reader = wire.LineReader(conn)
            try:
                head = reader.line()
                if head is None:
                    return
                size = int(head.get("body", 0))
                if not 0 <= size <= wire.MAX_BODY:
                    raise ValueError(f"body of {size} bytes refused")
                body = reader.body(size)
            except (OSError, ValueError) as exc:
                self.log("bad-request", peer_pid=pid, error=str(exc))
                with contextlib.suppress(OSError):
                    wire.reply(conn, {"event": "error", "error": f"bad request: {exc}"})
                return
            if head.get("v") != wire.PROTOCOL:
                with contextlib.suppress(OSError):
                    wire.reply(conn, {"event": "error", "error": f"protocol {head.get('v')!r} not "
                                      f"spoken; this service speaks {wire.PROTOCOL}"})
                return
            op = head.get("op")
            if op == "hook":
                self._hook(conn, head, body, pid)
            elif op == "status":
                wire.reply(conn, {"event": "status", **self.status()})
            elif op == "stop":
                self.log("stop-requested", peer_pid=pid)
                wire.reply(conn, {"event": "stopping", "pid": os.getpid()})
                self._stop.set()
            else:
                wire.reply(conn, {"event": "error", "error": f"unknown op {op!r}"})

    def _hook(self, conn: socket.socket, head: dict[str, Any], body: bytes, peer: int) -> None:
        from preimage.layer.harnesses.hook import handle

        args = [str(a) for a in head.get("args") or []]
        harness = str(head.get("harness") or "claude-code")
        env = head.get("env") if isinstance(head.get("env"), dict) else None
        cwd = head.get("cwd") if isinstance(head.get("cwd"), str) else None
        with self._lock:
            self.counters.in_flight += 1
            self.counters.last_call = time.time()
        started = time.perf_counter()
        try:
            wire.reply(conn, {"event": "accepted", "pid": os.getpid(),
                              "deadline": _deadline(args)})
            outcome = handle(harness, args, body.decode("utf-8", "replace"), env=env, cwd=cwd,
                             pid=peer or None)
            conn.settimeout(30.0)
            wire.reply(conn, {"event": "answer", "stdout": outcome.stdout,
                              "stderr": outcome.stderr, "exit_code": outcome.exit_code})
            result = "answered"
        except OSError as exc:  # the client went away; the decision (and backup) still stands
            result = f"client gone: {exc}"
        finally:
            with self._lock:
                self.counters.in_flight -= 1
                self.counters.last_call = time.time()
                self.counters.served["hook"] += 1
        self.log("hook", peer_pid=peer, harness=harness, bytes=len(body), result=result,
                 seconds=round(time.perf_counter() - started, 4))

    def status(self) -> dict[str, Any]:
        """What ``preimage serve --status`` prints."""
        with self._lock:
            c = self.counters
            return {
                "pid": os.getpid(), "socket": str(self.address.socket), "key": self.address.key,
                "started": c.started, "uptime": round(time.time() - c.started, 1),
                "idle_exit": self.idle, "idle_for": round(time.time() - c.last_call, 1),
                "in_flight": c.in_flight, "served": dict(c.served), "log": str(self.log_path),
                "home": os.environ.get("PREIMAGE_HOME", ""),
                "config_dir": os.environ.get("PREIMAGE_CONFIG_DIR", ""),
                "settings": sorted(wire.settings(os.environ)),
            }


def _peer(conn: socket.socket) -> tuple[int, int]:
    """``(pid, uid)`` of the process at the other end (Linux ``SO_PEERCRED``)."""
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, _gid = struct.unpack("3i", raw)
        return pid, uid
    except OSError:
        return 0, -1


def _deadline(args: list[str]) -> float:
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


def _import_litellm() -> None:
    with contextlib.suppress(Exception):
        import litellm  # noqa: F401 - warm the model tier's import


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
