"""What a ``postgresql://`` target addresses (read by :func:`parse_scope`, built by
:func:`postgres_uri`), and the row-scope predicate check.

* ``postgresql://user@host:port/db`` — the whole database (so ``DROP DATABASE``
  can be undone);
* ``?schema=s1,s2`` — every object of those schemas;
* ``?tables=s.t1,s.t2`` — those tables (unqualified names are in ``public``),
  their partitions and inheritance children, the sequences, types and
  functions they use, and the views that depend on them;
* ``?table=s.t&where=<predicate>`` — a before-image of the rows a statement
  will touch;
* ``?host=/run/postgresql`` — a Unix-socket directory instead of a TCP host.

The predicate is parsed with sqlglot and must be one boolean expression: no
``;`` outside a string literal, no second statement, no DDL/DML, no ``SELECT … INTO``, no functions that
act on the server (``pg_terminate_backend``, ``set_config``, ``lo_*``,
``dblink*``, file access, …).  What runs is sqlglot's re-rendering of the parsed
expression, never the text as given, inside a ``READ ONLY`` transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote

from preimage.connectors.sql.address import table_scope
from preimage.connectors.sql.predicate import check_predicate
from preimage.interface.errors import InvalidTargetError
from preimage.interface.target import Target
from preimage.interface.uri import netloc, query

if TYPE_CHECKING:  # the schema is not needed to read or build a URI
    from preimage.snapshot_schemas.postgres import Scope


@dataclass(frozen=True)
class PgScope:
    """The parsed scope of a target."""

    database: str
    scope: Scope
    names: list[str] = field(default_factory=list)
    where: str | None = None


def split_name(name: str) -> tuple[str, str]:
    """``schema.table`` → (schema, table); unqualified names are in ``public``."""
    schema, dot, table = name.strip().rpartition(".")
    if not dot:
        schema = "public"
    if not table or not schema or "\x00" in name:
        raise ValueError(name)
    return schema.strip('"'), table.strip('"')


def parse_scope(target: Target) -> PgScope:
    """Read database and scope from ``target``; raise :class:`InvalidTargetError`."""
    database = target.path.lstrip("/")
    if not database or "/" in database:
        raise InvalidTargetError(
            target.redacted, "name one database in the path: postgresql://user@host:5432/dbname"
        )
    given = [p for p in ("tables", "schema", "table") if target.param(p) is not None]
    if len(given) > 1:
        raise InvalidTargetError(target.redacted, f"give only one of {', '.join(given)}")
    where = target.param("where")
    if where is not None and target.param("table") is None:
        raise InvalidTargetError(target.redacted, "'where' needs 'table=schema.table'")
    try:
        if target.param("tables") is not None:
            names = [".".join(split_name(n)) for n in (target.param("tables") or "").split(",")
                     if n.strip()]
            if not names:
                raise InvalidTargetError(target.redacted, "'tables' is empty")
            return PgScope(database, "tables", sorted(set(names)))
        if target.param("schema") is not None:
            schemas = sorted({s.strip() for s in (target.param("schema") or "").split(",")
                              if s.strip()})
            if not schemas:
                raise InvalidTargetError(target.redacted, "'schema' is empty")
            return PgScope(database, "schema", schemas)
        if target.param("table") is not None:
            name = ".".join(split_name(target.param("table") or ""))
            if where is None:
                return PgScope(database, "tables", [name])
            return PgScope(database, "rows", [name], check_predicate(where, target.redacted))
    except ValueError as exc:
        raise InvalidTargetError(target.redacted, f"bad table name {exc}") from exc
    return PgScope(database, "database")


def postgres_uri(
    *,
    user: str | None = None,
    host: str | None = None,
    port: int | str | None = None,
    database: str | None = None,
    tables: Iterable[str] = (),
    schema: str | None = None,
    table: str | None = None,
    where: str | None = None,
    scheme: str = "postgresql",
) -> str:
    """A ``postgresql://`` URI at whole-database, schema, table-set or row scope (the
    grammar :func:`parse_scope` reads)."""
    params: list[tuple[str, str]] = [("host", host)] if host and host.startswith("/") else []
    scope = table_scope(tables, table, where)
    params += scope if scope or not schema else [("schema", schema)]
    path = "/" + quote(database, safe="") if database else "/"
    return f"{scheme}://{netloc(user, host, port)}{path}{query(params)}"


__all__ = ["PgScope", "check_predicate", "parse_scope", "postgres_uri", "split_name"]
