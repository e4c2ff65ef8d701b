"""The pieces every connector's URI builder shares: path quoting, netloc, query.

Each connector owns its grammar — it parses *and* builds its own URIs, in its
own package (``preimage.connectors.<name>.address`` or the module that parses
them) — and builds them from these pieces so that quoting is the same
everywhere.  Standard library only: the backup layer builds URIs on the hot
path.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote, urlencode


def quote_path(path: str) -> str:
    """``path`` for the path part of a URI: only what would end or confuse it is escaped."""
    return quote(path, safe="/!$&'()*+,;=:@-._~ ")


def netloc(user: str | None, host: str | None, port: int | str | None) -> str:
    """``user@host:port`` (IPv6 hosts bracketed); a socket directory host is left out."""
    out = ""
    if user:
        out = quote(user, safe="") + "@"
    if host and not host.startswith("/"):
        out += f"[{host}]" if ":" in host else host
    if port not in (None, "") and host and not host.startswith("/"):
        out += f":{port}"
    return out


def query(params: Iterable[tuple[str, str]]) -> str:
    """``?k=v&…`` of the parameters with a value, or ``""``."""
    items = [(k, v) for k, v in params if v not in (None, "")]
    if not items:
        return ""
    return "?" + urlencode(items, quote_via=quote, safe=",./*:")
