"""Where the resident processes listen and the frames they speak (standard library only).

One decision service and one warm process run per user and installation: the
socket's name is a hash of the uid, the protocol version and this installation
(the interpreter and this copy of preimage), nothing else.  Every setting that
changes a decision or a capture — ``PREIMAGE_HOME``, ``PREIMAGE_CONFIG_DIR``,
``PREIMAGE_MODE``, ``KUBECONFIG``, ``PGHOST``, the working directory — travels with
each request, and the request is answered in a process forked for it with exactly
that environment; so any home, config or session of the user is served by the same
pair, none of them can leak into another's decisions, and a secret a request carries
lives only as long as the forked process that answers it.  The resident processes
themselves keep only :func:`resident_env` of the environment they were started with.

The socket lives in ``$PREIMAGE_RUNTIME_DIR``, else ``$XDG_RUNTIME_DIR/preimage``,
else ``/tmp/preimage-<uid>``: a directory of mode 0700 owned by the user
(anything else is refused), holding ``serve-<key>.sock`` (0600) and the
``.lock`` the running service holds.

Frames (protocol 1).  Request: one JSON line ``{"v": 1, "op": …, "body": N,
…}`` followed by ``N`` raw bytes (the hook payload, unparsed).  Replies: JSON
lines; for ``op: "hook"`` first ``{"event": "accepted", "deadline": S}`` as
soon as the service has read the request, then ``{"event": "answer",
"stdout", "stderr", "exit_code"}``.  Any reply may be ``{"event": "error",
"error": …}``.  Unknown versions are answered with an error naming the
versions spoken.
"""

from __future__ import annotations

import _socket
import os
import stat
import sys
import zlib

from preimage.services import lean_json as json

# Neither typing nor pathlib is imported: this is the hook's path.  Nor ``json`` and
# ``socket``: with ``re`` and ``enum`` under them they were ~30 ms of a hook's start under
# load; ``lean_json`` and ``_socket`` (what ``socket`` wraps) do the same work.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROTOCOL = 1
MAX_HEADER = 1 << 20           # one header line; the payload itself travels raw
MAX_BODY = 256 << 20           # a hook payload larger than this is refused

# What a resident process keeps of the environment it was started with: how Python finds
# its modules, where its socket is, the language.  Everything else — HOME, the store, the
# config, credentials such as PGPASSWORD or a model's API key — belongs to a caller (often
# a scratch folder deleted a moment later) and comes with each request instead.
_RESIDENT_NAMES = frozenset({
    "PATH", "LANG", "TZ", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PREIMAGE_RUNTIME_DIR",
    "XDG_RUNTIME_DIR", "PREIMAGE_SERVE_IDLE", "LITELLM_LOCAL_MODEL_COST_MAP",
    "PYDANTIC_DISABLE_PLUGINS",
})


class RuntimeDirError(OSError):
    """The runtime directory is missing, foreign or open to other users."""


def resident_env(env: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The part of ``env`` a resident process keeps for itself (see :data:`_RESIDENT_NAMES`;
    ``LC_*`` too): no secret and no caller's setting outlives the request that carried it."""
    return {k: v for k, v in env.items() if k in _RESIDENT_NAMES or k.startswith("LC_")}


def take_environment(env: dict[str, str]) -> None:
    """Make ``env`` this process's environment, as a caller's request asks of the process
    forked for it — and forget what this process derived from the one before: Python's
    temporary folder is looked up once per process (``tempfile.tempdir``), and the resident
    process that forked this one looked it up from its own environment (no ``TMPDIR``), so
    without this a served command would write its temporary files where the caller did not
    ask (a ``TMPDIR`` on tmpfs ignored for the machine's ``/tmp``)."""
    os.environ.clear()
    os.environ.update(env)
    cached = sys.modules.get("tempfile")
    if cached is not None:
        cached.tempdir = None   # type: ignore[attr-defined]


def installation() -> str:
    """This interpreter and this copy of preimage (a new install gets a new service)."""
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    try:
        stamp = os.stat(os.path.join(here, "__init__.py")).st_mtime_ns
    except OSError:
        stamp = 0
    return f"{os.path.realpath(sys.executable)}|{here}|{stamp}"  # python, python3: one service


def service_key() -> str:
    """16 hex digits naming the resident processes of this uid and installation."""
    doc = json.dumps([os.getuid(), PROTOCOL, installation()])
    raw = doc.encode("utf-8", "surrogateescape")
    # two independent 32-bit checksums: a name, not a secret, so no hashlib (OpenSSL) import
    return f"{zlib.crc32(raw):08x}{zlib.adler32(raw[::-1]):08x}"


def runtime_dir(env: dict[str, str] | os._Environ[str] | None = None, *, create: bool = True) -> str:
    """The per-user directory holding service sockets (0700, owned by the user).

    Raises :class:`RuntimeDirError` when it is a symlink, owned by another
    user or readable by others — a socket there could be someone else's.
    """
    env = os.environ if env is None else env
    uid = os.getuid()
    if env.get("PREIMAGE_RUNTIME_DIR"):
        path = env["PREIMAGE_RUNTIME_DIR"]
    elif env.get("XDG_RUNTIME_DIR"):
        path = os.path.join(env["XDG_RUNTIME_DIR"], "preimage")
    else:
        path = f"/tmp/preimage-{uid}"
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise RuntimeDirError(f"{path} is not a directory")
    if st.st_uid != uid:
        raise RuntimeDirError(f"{path} belongs to uid {st.st_uid}, not {uid}")
    if st.st_mode & 0o077:
        raise RuntimeDirError(f"{path} is open to other users (mode {st.st_mode & 0o777:o})")
    return path


class Address:
    """The files of one resident process: its socket, its lock and the start marker.
    ``kind`` names it: ``serve`` (the decision service) or ``cli`` (the warm process
    that runs commands, :mod:`preimage.services.warm`)."""

    __slots__ = ("folder", "key", "kind")

    def __init__(self, key: str, folder: str, kind: str = "serve") -> None:
        self.key = key
        self.folder = folder
        self.kind = kind

    def __repr__(self) -> str:
        return f"Address({self.key!r}, {self.folder!r}, {self.kind!r})"

    @classmethod
    def from_env(cls, env: dict[str, str] | os._Environ[str] | None = None,
                 kind: str = "serve") -> Address:
        """The address for ``env`` (default: this process's environment)."""
        return cls(service_key(), runtime_dir(env), kind)

    def _file(self, suffix: str) -> str:
        return os.path.join(self.folder, f"{self.kind}-{self.key}.{suffix}")

    @property
    def socket(self) -> str:
        return self._file("sock")

    @property
    def lock(self) -> str:
        return self._file("lock")

    @property
    def started(self) -> str:
        """Touched by a client that started a service (so the next one does not start another)."""
        return self._file("start")


def service_off(env: dict[str, str] | os._Environ[str]) -> bool:
    """``PREIMAGE_SERVICE=off`` (or 0, no, false): no resident process is asked or started."""
    return env.get("PREIMAGE_SERVICE", "").lower() in ("0", "off", "no", "false")


def log_dir(env: dict[str, str] | os._Environ[str] | None = None) -> str:
    """Where the hook log and the service log live (``$PREIMAGE_LOG``'s folder, else the
    user log directory) — the same rule as :func:`preimage.layer.config.log_path`."""
    env = os.environ if env is None else env
    if env.get("PREIMAGE_LOG"):
        return os.path.dirname(os.path.abspath(env["PREIMAGE_LOG"]))
    home = env.get("HOME") or os.path.expanduser("~")
    state = env.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")
    return os.path.join(state, "preimage", "log")


def start_detached(marker: str, args: list[str], backoff: float) -> bool:
    """Run ``python ARGS`` detached from this process (its own session, no terminal, only
    :func:`resident_env` of this environment), unless ``marker`` was touched less than
    ``backoff`` seconds ago — by a client that started it moments before; True when started."""
    import time

    try:
        if time.time() - os.stat(marker).st_mtime < backoff:
            return False
    except OSError:
        pass
    try:
        with open(marker, "w"):
            pass
        import subprocess

        subprocess.Popen(
            [sys.executable, *args], cwd="/", env=resident_env(os.environ),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True,
        )
    except OSError:
        return False
    return True


# ------------------------------------------------------------------ frames
def send(sock: _socket.socket, header: dict[str, Any], body: bytes = b"") -> None:
    """One frame: the header as a JSON line, then ``body`` raw."""
    head = {"v": PROTOCOL, **header, "body": len(body)}
    sock.sendall(json.dumps(head).encode() + b"\n" + body)


def reply(sock: _socket.socket, doc: dict[str, Any]) -> None:
    """One reply line."""
    sock.sendall(json.dumps({"v": PROTOCOL, **doc}).encode() + b"\n")


class LineReader:
    """Reads JSON lines and raw bodies from a socket, honouring its timeout."""

    def __init__(self, sock: _socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def _fill(self) -> bool:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def line(self, limit: int = MAX_HEADER) -> dict[str, Any] | None:
        """The next JSON line, or ``None`` at end of stream.

        Raises :class:`ValueError` for a line that is not a JSON object or is
        longer than ``limit``; socket timeouts propagate.
        """
        while b"\n" not in self.buf:
            if len(self.buf) > limit:
                raise ValueError("header line too long")
            if not self._fill():
                return None
        raw, _, self.buf = self.buf.partition(b"\n")
        doc = json.loads(raw)
        if not isinstance(doc, dict):
            raise ValueError("frame is not a JSON object")
        return doc

    def body(self, size: int) -> bytes:
        """Exactly ``size`` raw bytes (raises :class:`ValueError` when the stream ends first)."""
        while len(self.buf) < size:
            if not self._fill():
                raise ValueError("stream ended inside a body")
        data, self.buf = self.buf[:size], self.buf[size:]
        return data


class Socket(_socket.socket):
    """A Unix stream socket that closes at the end of a ``with`` block (as
    ``socket.socket`` does, without importing ``socket``)."""

    def __enter__(self) -> Socket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def unix_socket() -> Socket:
    """A new Unix stream socket."""
    return Socket(_socket.AF_UNIX, _socket.SOCK_STREAM)


def connect(address: Address, timeout: float) -> Socket:
    """A connected socket to the service (raises :class:`OSError` when none listens)."""
    sock = unix_socket()
    sock.settimeout(timeout)
    try:
        sock.connect(address.socket)
    except OSError:
        sock.close()
        raise
    return sock


def ask(address: Address, op: str, timeout: float = 5.0, **fields: Any) -> dict[str, Any]:
    """Send a one-shot request (``status``, ``stop``) and return the reply.

    Raises :class:`OSError` when no service answers.
    """
    with connect(address, timeout) as sock:
        send(sock, {"op": op, **fields})
        try:
            doc = LineReader(sock).line()
        except ValueError as exc:
            raise OSError(f"bad reply from the decision service: {exc}") from exc
    if doc is None:
        raise OSError("the decision service closed the connection without a reply")
    return doc
