"""``browser://`` target URIs: read by :func:`parse_target`, built by :func:`browser_uri`.

::

    browser:///abs/profile-dir?origin=http://127.0.0.1:8080[&origin=…]

The path is a Chromium profile directory; every ``origin`` (``http(s)://host[:port]``,
it may repeat) is captured: its cookies, localStorage, sessionStorage and IndexedDB.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from preimage.interface.errors import InvalidTargetError
from preimage.interface.target import Target
from preimage.interface.uri import query, quote_path


def parse_origin(raw: str, uri: str) -> str:
    """``scheme://host[:port]`` of ``raw``; raise :class:`InvalidTargetError` otherwise."""
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidTargetError(uri, f"origin {raw!r} must be http(s)://host[:port]")
    return f"{parts.scheme}://{parts.netloc.lower()}"


def parse_target(target: Target) -> tuple[Path, list[str]]:
    """The profile directory and the origins of a ``browser://`` target."""
    raw_path = (target.host or "") + target.path if target.host else target.path
    if not raw_path:
        raise InvalidTargetError(
            target.redacted, "no profile directory — write browser:///abs/profile?origin=URL"
        )
    origins = [parse_origin(o, target.redacted) for o in target.query.get("origin", [])]
    if not origins:
        raise InvalidTargetError(
            target.redacted, "no origin — add ?origin=http://host:port (it may repeat)"
        )
    return Path(raw_path).expanduser().resolve(), origins


def browser_uri(profile: str, origin: str | None) -> str:
    """``browser:///abs/profile?origin=…``."""
    return "browser://" + quote_path(profile) + query([("origin", origin or "")])


def origin_of(url: str) -> str | None:
    """``scheme://host:port`` of an http(s) URL, else ``None``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"
