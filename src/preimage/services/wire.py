"""Where the decision service listens and the frames it speaks (standard library only).

One service runs per user *and* per set of settings: the socket's name is a
hash of the uid, the protocol version, this installation, and every
environment variable that changes what a decision or a capture does
(:data:`SETTING_PREFIXES`, :data:`SETTING_NAMES`).  A hook client therefore
only ever talks to a service whose own environment holds the same settings
as the client's, so ``PREIMAGE_HOME``, ``PREIMAGE_MODE``, ``KUBECONFIG`` or
``PGHOST`` cannot leak from one user's session into another's decisions.
What varies per call (the working directory, ``CLAUDE_PROJECT_DIR``, the
variables a command line expands) travels with each request instead.

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

# Environment variables that change a decision or a capture: store, config and
# log locations, mode and policy, the model and its provider, and the settings
# of the tools connectors drive (kubectl, libpq, git, mysql, TLS).
SETTING_PREFIXES = (
    "PREIMAGE_", "XDG_", "LC_", "LITELLM_", "KUBE", "PG", "MYSQL", "GIT_", "AWS_",
    "OPENAI_", "ANTHROPIC_", "AZURE_", "GEMINI_", "GOOGLE_", "MISTRAL_", "OLLAMA_",
)
SETTING_NAMES = (
    "HOME", "USER", "LOGNAME", "PATH", "LANG", "TZ", "TMPDIR", "NETRC", "PYTHONPATH",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY",
    "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
)
# Variables that never change a decision even though their prefix says setting: what a
# harness sets per session or per call (they travel with each request), so a new session
# finds the service the last one started.
_NOT_SETTINGS = frozenset({"PREIMAGE_SERVICE", "GEMINI_SESSION_ID", "GEMINI_PROJECT_DIR",
                           "GEMINI_CWD", "GEMINI_PLANS_DIR"})


class RuntimeDirError(OSError):
    """The runtime directory is missing, foreign or open to other users."""


def settings(env: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The part of ``env`` a service must share with its clients."""
    return {k: v for k, v in env.items()
            if (k.startswith(SETTING_PREFIXES) or k in SETTING_NAMES) and k not in _NOT_SETTINGS}


def installation() -> str:
    """This interpreter and this copy of preimage (a new install gets a new service)."""
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    try:
        stamp = os.stat(os.path.join(here, "__init__.py")).st_mtime_ns
    except OSError:
        stamp = 0
    return f"{os.path.realpath(sys.executable)}|{here}|{stamp}"  # python, python3: one service


def service_key(env: dict[str, str] | os._Environ[str] | None = None) -> str:
    """16 hex digits naming the service for this uid, installation and settings."""
    doc = json.dumps([os.getuid(), PROTOCOL, installation(),
                      sorted(settings(os.environ if env is None else env).items())])
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
        return cls(service_key(env), runtime_dir(env), kind)

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


def home_gone(env: dict[str, str] | os._Environ[str] | None = None) -> str | None:
    """Why a resident process serving ``env``'s settings should leave: its ``HOME`` or
    the folder its ``PREIMAGE_HOME`` is in was deleted (nobody can reach it with those
    settings again, so waiting out the idle time only holds memory).  ``None`` otherwise."""
    env = os.environ if env is None else env
    home = env.get("HOME")
    if home and not os.path.isdir(home):
        return f"its HOME {home} is gone"
    store = env.get("PREIMAGE_HOME")
    if store and not os.path.isdir(os.path.dirname(os.path.abspath(store))):
        return f"the folder of its PREIMAGE_HOME {store} is gone"
    return None


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
    """Run ``python ARGS`` detached from this process (its own session, no terminal, the
    current environment), unless ``marker`` was touched less than ``backoff`` seconds
    ago — by a client that started it moments before; True when started."""
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
            [sys.executable, *args], cwd="/", env=dict(os.environ),
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
