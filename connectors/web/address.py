"""``web+<adapter>://`` target URIs: read by :func:`adapter_name` and the site adapter,
built by :func:`web_uri`.

::

    web+ADAPTER://host:port/LOCATION[?profile=/abs/profile-dir][&<adapter parameters>]

``ADAPTER`` names a site adapter (``isso``, ``trac``, or one registered by a
third party); ``LOCATION`` is where the adapter keeps the records (it says so
for a page with :meth:`~preimage.connectors.web.SiteAdapter.location_of`, see
:func:`page_location`); ``profile`` is the browser profile holding the login.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qs, parse_qsl, quote, urlsplit

from preimage.interface.errors import InvalidTargetError, NoSuchConnectorError
from preimage.interface.target import Target
from preimage.interface.uri import query


def adapter_name(target: Target) -> str:
    """``isso`` for ``web+isso://…``."""
    name = target.scheme.partition("+")[2]
    if not name:
        raise InvalidTargetError(target.redacted, "write web+<adapter>://host:port/path")
    return name


def web_uri(
    adapter: str, page_url: str, location: str | None = None,
    params: Iterable[tuple[str, str]] = (),
) -> str:
    """``web+ADAPTER://host:port/LOCATION?params`` for the app page at ``page_url``.

    ``location`` is where the adapter keeps the page's records (see
    :func:`page_location`); without it, the page's own path and query.
    """
    parts = urlsplit(page_url)
    if location is None:
        location = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    path, _, own = location.partition("?")
    q = query([*parse_qsl(own), *params])
    return f"web+{adapter}://{parts.netloc}{quote(path, safe='/:@!$&()*+,;=-._~%')}{q}"


def page_location(adapter: str, page_url: str) -> tuple[bool, str | None]:
    """Ask site adapter ``adapter`` where the records of ``page_url`` live.

    ``(True, location)`` when the adapter is known (``location`` ``None``: the
    page names no record it reads); ``(False, None)`` when no adapter of that
    name is installed.
    """
    try:
        from preimage.connectors.web.registry import get_site_adapter

        found = get_site_adapter(adapter)
    except (NoSuchConnectorError, ImportError):
        return False, None
    parts = urlsplit(page_url)
    return True, found.location_of(parts.path or "/", parse_qs(parts.query))
