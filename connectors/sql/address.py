"""SQL target URIs of the SQLAlchemy connector, read and built here.

::

    sqlite:////abs/file.db[?tables=t1,t2]
    mysql+pymysql://user@host:3306/db[?tables=t1,t2 | ?table=t&where=<predicate>]
    mariadb+pymysql://user@host:3306/db[…]

SQLAlchemy's own spelling (``sqlite:////abs`` has four slashes); no query
means every table.  :func:`scope_tables` reads the scope; every other query
parameter is the driver's (``charset=utf8mb4``) and is passed on by
:func:`~preimage.connectors.sql.connector.engine_url`.  A row scope is read
as its whole table: this connector captures tables, so it keeps more than the
rows the predicate selects rather than fewer (PostgreSQL reads row scopes).
PostgreSQL URIs, which add ``?schema=``, are built and read by
:mod:`preimage.connectors.postgres.scope` with the same table scope.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote

from preimage.interface.errors import InvalidTargetError
from preimage.interface.target import Target
from preimage.interface.uri import netloc, query, quote_path

#: Query parameters that are this grammar's, never the driver's.
SCOPE_PARAMS = frozenset({"tables", "table", "where"})


def scope_tables(target: Target) -> list[str]:
    """The tables ``target`` names (empty: every table); raise :class:`InvalidTargetError`
    for a scope that contradicts itself."""
    tables, table, where = target.param("tables"), target.param("table"), target.param("where")
    if tables is not None and table is not None:
        raise InvalidTargetError(target.redacted, "give tables= or table=, not both")
    if where is not None and table is None:
        raise InvalidTargetError(target.redacted, "'where' needs 'table=<table>'")
    if table is not None:
        if not table.strip():
            raise InvalidTargetError(target.redacted, "'table' is empty")
        return [table.strip()]
    names = [n.strip() for n in (tables or "").split(",") if n.strip()]
    if tables is not None and not names:
        raise InvalidTargetError(target.redacted, "'tables' is empty")
    return names


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
