"""Building the target URIs the layer hands to connectors.

One function per scheme, so that the URI grammar each connector reads is
written down once:

* ``file:///abs/path`` — a file or tree; ``git:///repo``; ``pip:///venv-or-python``;
* ``postgresql://user@host:port/db`` with ``?tables=s.t1,s.t2``, ``?schema=s``
  or a row scope ``?table=s.t&where=<predicate>``; no query means the whole
  database; a Unix-socket directory travels as ``?host=/run/postgresql``;
* ``sqlite:////abs/file.db`` (SQLAlchemy's spelling) and ``mysql+pymysql://…``
  with the same ``tables``/``table``+``where`` parameters;
* ``k8s://CONTEXT/NAMESPACE[/RESOURCE[/NAME]][?selector=…]``; cluster-scoped
  resources sit under the pseudo-namespace ``_`` and "every namespace"
  is ``_all`` (neither can be a namespace name: those are DNS labels);
* ``imap://user@host:port/FOLDER[?uids=1,2]`` (``imaps`` for TLS);
* ``browser://PROFILE_DIR?origin=…`` and ``web+ADAPTER://host:port/path``;
* ``crontab:///USER``.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

K8S_CLUSTER = "_"
K8S_ALL_NAMESPACES = "_all"


def _quote_path(path: str) -> str:
    # Only what would end or confuse the path part of a URI is escaped.
    return quote(path, safe="/!$&'()*+,;=:@-._~ ")


def file_uri(path: str) -> str:
    """``file:///abs/path``."""
    return "file://" + _quote_path(path)


def git_uri(repo: str) -> str:
    """``git:///abs/repo``."""
    return "git://" + _quote_path(repo)


def pip_uri(env: str) -> str:
    """``pip:///abs/venv`` or ``pip:///usr/bin/python3``."""
    return "pip://" + _quote_path(env)


def crontab_uri(user: str) -> str:
    """``crontab:///user``."""
    return "crontab:///" + quote(user, safe="")


def _netloc(user: str | None, host: str | None, port: int | str | None) -> str:
    netloc = ""
    if user:
        netloc = quote(user, safe="") + "@"
    if host and not host.startswith("/"):
        netloc += f"[{host}]" if ":" in host else host
    if port not in (None, "") and host and not host.startswith("/"):
        netloc += f":{port}"
    return netloc


def _query(params: Iterable[tuple[str, str]]) -> str:
    items = [(k, v) for k, v in params if v not in (None, "")]
    if not items:
        return ""
    return "?" + urlencode(items, quote_via=quote, safe=",./*:")


def sql_uri(
    scheme: str,
    *,
    user: str | None = None,
    host: str | None = None,
    port: int | str | None = None,
    database: str | None = None,
    tables: Iterable[str] = (),
    schema: str | None = None,
    table: str | None = None,
    where: str | None = None,
) -> str:
    """A server database URI (``postgresql``, ``mysql+pymysql``) at whole-db, schema,
    table-set or row scope."""
    params: list[tuple[str, str]] = []
    if host and host.startswith("/"):
        params.append(("host", host))
    tables = sorted(set(tables))
    if table:
        params += [("table", table), ("where", where or "")]
    elif tables:
        params.append(("tables", ",".join(tables)))
    elif schema:
        params.append(("schema", schema))
    path = "/" + quote(database, safe="") if database else "/"
    return f"{scheme}://{_netloc(user, host, port)}{path}{_query(params)}"


def sqlite_uri(
    path: str, *, tables: Iterable[str] = (), table: str | None = None, where: str | None = None
) -> str:
    """``sqlite:////abs/file.db`` with an optional table set or row scope."""
    params: list[tuple[str, str]] = []
    tables = sorted(set(tables))
    if table:
        params += [("table", table), ("where", where or "")]
    elif tables:
        params.append(("tables", ",".join(tables)))
    return "sqlite:///" + _quote_path(path) + _query(params)


def k8s_uri(
    context: str,
    namespace: str | None,
    resource: str | None = None,
    name: str | None = None,
    *,
    selector: str | None = None,
) -> str:
    """``k8s://ctx/ns[/resource[/name]]``; ``namespace=None`` means cluster-scoped."""
    ns = namespace if namespace is not None else K8S_CLUSTER
    path = "/" + quote(ns, safe="")
    if resource:
        path += "/" + quote(resource, safe=".")
        if name:
            path += "/" + quote(name, safe=".:")
    query = _query([("selector", selector or "")])
    return f"k8s://{quote(context, safe='-._~')}{path}{query}"


def imap_uri(
    base: str, folder: str | None = None, *, uids: Iterable[int | str] = (),
    recursive: bool = False, message_ids: Iterable[str] = (),
) -> str:
    """``imap://user@host:port/FOLDER[?uids=…|?recursive=1]`` built on an account URI ``base``."""
    parts = urlsplit(base)
    path = "/" + quote(folder, safe="/&+,") if folder else "/"
    uid_list = [str(u) for u in uids]
    query = _query([("uids", ",".join(uid_list)), ("recursive", "1" if recursive else ""),
                    *[("id", m) for m in message_ids]])
    return f"{parts.scheme}://{parts.netloc}{path}{query}"


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
    query = _query([*parse_qsl(own), *params])
    return f"web+{adapter}://{parts.netloc}{quote(path, safe='/:@!$&()*+,;=-._~%')}{query}"


def page_location(adapter: str, page_url: str) -> tuple[bool, str | None]:
    """Ask site adapter ``adapter`` where the records of ``page_url`` live.

    ``(True, location)`` when the adapter is known (``location`` ``None``: the
    page names no record it reads); ``(False, None)`` when no adapter of that
    name is installed.
    """
    from urllib.parse import parse_qs

    from preimage._errors import NoSuchConnectorError

    try:
        from preimage.connectors.web.registry import get_site_adapter

        found = get_site_adapter(adapter)
    except (NoSuchConnectorError, ImportError):
        return False, None
    parts = urlsplit(page_url)
    return True, found.location_of(parts.path or "/", parse_qs(parts.query))


def browser_uri(profile: str, origin: str | None) -> str:
    """``browser:///abs/profile?origin=…``."""
    return "browser://" + _quote_path(profile) + _query([("origin", origin or "")])


def origin_of(url: str) -> str | None:
    """``scheme://host:port`` of an http(s) URL, else ``None``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"
