"""SQL target URIs of the SQLAlchemy connector, built here.

::

    sqlite:////abs/file.db[?tables=t1,t2]
    mysql+pymysql://user@host:3306/db[?tables=t1,t2 | ?table=t&where=<predicate>]
    mariadb+pymysql://user@host:3306/db[…]

SQLAlchemy's own spelling (``sqlite:////abs`` has four slashes); no query
means every table.  :func:`~preimage.connectors.sql.connector.engine_url`
reads them.  PostgreSQL URIs, which add ``?schema=``, are built and read by
:mod:`preimage.connectors.postgres.scope` with the same table scope.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote

from preimage._uri import netloc, query, quote_path


def table_scope(
    tables: Iterable[str] = (), table: str | None = None, where: str | None = None
) -> list[tuple[str, str]]:
    """The query parameters of a table set (``tables=``) or a row scope (``table=&where=``)."""
    if table:
        return [("table", table), ("where", where or "")]
    names = sorted(set(tables))
    return [("tables", ",".join(names))] if names else []


def database_uri(
    scheme: str,
    *,
    user: str | None = None,
    host: str | None = None,
    port: int | str | None = None,
    database: str | None = None,
    tables: Iterable[str] = (),
    table: str | None = None,
    where: str | None = None,
) -> str:
    """A server database URI (``mysql+pymysql``, ``mariadb+…``) at whole-database,
    table-set or row scope; a Unix-socket directory host travels as ``?host=``."""
    params: list[tuple[str, str]] = [("host", host)] if host and host.startswith("/") else []
    params += table_scope(tables, table, where)
    path = "/" + quote(database, safe="") if database else "/"
    return f"{scheme}://{netloc(user, host, port)}{path}{query(params)}"


def sqlite_uri(
    path: str, *, tables: Iterable[str] = (), table: str | None = None, where: str | None = None
) -> str:
    """``sqlite:////abs/file.db`` with an optional table set or row scope."""
    return "sqlite:///" + quote_path(path) + query(table_scope(tables, table, where))
