"""Target URIs: the address of a piece of external state.

The scheme selects the connector.  Passwords never travel in stored URIs: a
password given in a URI is kept in memory for the current process only, and
:attr:`Target.redacted` is what gets stored and printed.  A target read back
from the catalog resolves its password from the environment
(``PREIMAGE_<SCHEME>_PASSWORD``, then a scheme's own variable such as
``PGPASSWORD``) or from ``~/.netrc``.
"""

from __future__ import annotations

import netrc
import os
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qs, quote, unquote, urlsplit, urlunsplit

from preimage.interface.errors import InvalidTargetError
from preimage.interface.redact import is_secret_name, redact

__all__ = ["Target", "redact"]

_SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*$")
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2}).{0,2}")

# Well-known per-client password variables, consulted after PREIMAGE_<SCHEME>_PASSWORD.
_CLIENT_PASSWORD_VARS = {
    "postgresql": "PGPASSWORD",
    "postgres": "PGPASSWORD",
    "mysql": "MYSQL_PWD",
    "mariadb": "MYSQL_PWD",
    "imap": "IMAP_PASSWORD",
    "imaps": "IMAP_PASSWORD",
}


# Passwords seen in URIs by this process, by redacted URI: a capture followed by
# a restore in one Python process needs no environment variable.
_PASSWORDS: dict[str, str] = {}
# Passwords this process was given for an account (scheme, user, host, port) by the
# definition of what uses it (an MCP server's env, arguments or config file): every
# target on that account finds it, in this process only.
_ACCOUNT_PASSWORDS: dict[tuple[str, str | None, str | None, int | None], str] = {}


def remember_password(scheme: str, username: str | None, host: str | None, port: int | None,
                      password: str) -> None:
    """Let every target on this account use ``password`` in this process (never stored)."""
    _ACCOUNT_PASSWORDS[(scheme.split("+", 1)[0].lower(), username, host, port)] = password


@dataclass(frozen=True)
class Target:
    """A parsed target URI.

    ``password`` is present only when the URI handed to this process carried
    one; it is excluded from equality, repr and :attr:`redacted`.
    """

    uri: str
    scheme: str
    username: str | None
    host: str | None
    port: int | None
    path: str
    query: dict[str, list[str]]
    password: str | None = field(default=None, repr=False, compare=False)

    @classmethod
    def parse(cls, uri: str) -> Target:
        """Parse ``uri``; raise :class:`InvalidTargetError` when it is malformed."""
        if not isinstance(uri, str) or not uri.strip():
            raise InvalidTargetError(str(uri), "empty URI — give e.g. file:///path/to/dir")
        uri = uri.strip()
        bad = next((c for c in uri if ord(c) < 0x20 or ord(c) == 0x7F), None)
        if bad is not None:
            raise InvalidTargetError(
                uri, f"contains the control character {bad!r} — percent-encode it (%{ord(bad):02X})"
                if bad != "\x00" else "contains a NUL byte"
            )
        if "://" not in uri and ":" not in uri.split("/", 1)[0]:
            raise InvalidTargetError(
                uri, "no scheme — write file:///abs/path, postgresql://user@host/db, …"
            )
        try:
            parts = urlsplit(uri)
            port = parts.port
        except ValueError as exc:
            raise InvalidTargetError(uri, str(exc)) from exc
        scheme = parts.scheme.lower()
        if not scheme or not _SCHEME_RE.match(scheme):
            raise InvalidTargetError(uri, f"bad scheme {parts.scheme!r}")
        stray = _STRAY_PERCENT.search(parts.path)
        if stray is not None:   # unquote would keep it as it is: a path nobody meant
            raise InvalidTargetError(
                uri, f"{stray[0]!r} in its path is not a percent-escape — write a % as %25")
        path = unquote(parts.path, errors="surrogateescape")
        if "\x00" in path:
            raise InvalidTargetError(uri, "its path contains a NUL byte (%00)")
        password = unquote(parts.password) if parts.password is not None else None
        redacted_netloc = _netloc(parts.username, parts.hostname, port)
        kept, secret = _split_query(parts.query)
        if password is None:
            password = next((secret[k] for k in ("password", "passwd", "pwd") if k in secret), None)
        parts = parts._replace(query=kept)
        if uri[len(parts.scheme) + 1 :].startswith("//"):
            # built by hand: urlunsplit turns an empty authority with a path that
            # starts with "//" (sqlite:////abs/db) into a host, and drops an empty
            # authority for schemes it does not know (pip:///venv → pip:/venv)
            clean = f"{scheme}://{redacted_netloc}{parts.path}"
            if parts.query:
                clean += f"?{parts.query}"
            if parts.fragment:
                clean += f"#{parts.fragment}"
        else:
            clean = urlunsplit((scheme, redacted_netloc, parts.path, parts.query, parts.fragment))
        if password is not None:
            _PASSWORDS[clean] = password
        return cls(
            uri=clean,
            scheme=scheme,
            username=unquote(parts.username) if parts.username else None,
            host=parts.hostname,
            port=port,
            path=path,
            query=parse_qs(urlsplit(uri).query, keep_blank_values=True),
            password=password,
        )

    @property
    def redacted(self) -> str:
        """The URI without any password: safe to store and print."""
        return self.uri

    def param(self, name: str, default: str | None = None) -> str | None:
        """The last value of query parameter ``name``."""
        values = self.query.get(name)
        return values[-1] if values else default

    def resolve_password(self) -> str | None:
        """The password: from the URI, the environment, or ``~/.netrc`` (in that order)."""
        if self.password is not None:
            return self.password
        if self.uri in _PASSWORDS:
            return _PASSWORDS[self.uri]
        base = self.scheme.split("+", 1)[0]
        account = (base.lower(), self.username, self.host, self.port)
        if account in _ACCOUNT_PASSWORDS:
            return _ACCOUNT_PASSWORDS[account]
        env_name = f"PREIMAGE_{re.sub(r'[^A-Z0-9]', '_', base.upper())}_PASSWORD"
        for var in (env_name, _CLIENT_PASSWORD_VARS.get(base)):
            if var and os.environ.get(var):
                return os.environ[var]
        if self.host:
            try:
                auth = netrc.netrc().authenticators(self.host)
            except (FileNotFoundError, netrc.NetrcParseError, OSError):
                auth = None
            if auth and (self.username is None or auth[0] == self.username):
                return auth[2]
        return None

    def __str__(self) -> str:
        return self.redacted


def _split_query(query: str) -> tuple[str, dict[str, str]]:
    """The query string without secret parameters (``password``, ``token``, …), and
    those parameters: they stay in memory for this process, never in a stored URI."""
    if not query:
        return query, {}
    kept: list[str] = []
    secret: dict[str, str] = {}
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if is_secret_name(unquote(name)):
            secret[unquote(name).lower()] = unquote(value)
        else:
            kept.append(pair)
    return "&".join(kept), secret


def _netloc(username: str | None, host: str | None, port: int | None) -> str:
    netloc = ""
    if username:
        netloc = quote(unquote(username), safe="") + "@"
    if host:
        netloc += f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return netloc
