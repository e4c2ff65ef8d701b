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

from preimage._errors import InvalidTargetError
from preimage._target import Target
from preimage._uri import netloc, query
from preimage.connectors.sql.address import table_scope

if TYPE_CHECKING:  # the schema is not needed to read or build a URI
    from preimage.snapshot_schemas.postgres import Scope

# Functions that change server state or reach outside the database; refused in predicates.
_FORBIDDEN_FUNCTIONS = (
    "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile",
    "set_config", "pg_advisory", "pg_try_advisory", "pg_sleep", "pg_read_file",
    "pg_read_binary_file", "pg_ls_", "pg_stat_file", "lo_", "dblink", "pg_file_",
    "pg_logical_emit", "pg_replication", "pg_create_", "pg_drop_", "pg_switch_wal",
    "pg_promote", "pg_notify", "nextval", "setval", "query_to_xml", "query_to_json",
    "txid_", "pg_backup", "pg_import", "currval",
)


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


def check_predicate(text: str, uri: str = "") -> str:
    """Parse ``text`` as one boolean SQL expression; return it re-rendered by sqlglot.

    Raise :class:`InvalidTargetError` for anything else (several statements,
    ``;``, DDL/DML, ``SELECT … INTO``, server-side functions).
    """
    import sqlglot
    from sqlglot import exp

    def refuse(reason: str) -> InvalidTargetError:
        return InvalidTargetError(uri or text, f"row predicate refused: {reason}")

    if not text.strip():
        raise refuse("it is empty")
    from sqlglot.tokens import TokenType  # type: ignore[attr-defined]

    try:
        tokens = sqlglot.Dialect.get_or_raise("postgres").tokenize(text)
        if any(t.token_type == TokenType.SEMICOLON for t in tokens):
            raise refuse("';' is not allowed — give one boolean expression")
        statements = sqlglot.parse(text, read="postgres")
    except sqlglot.errors.SqlglotError as exc:
        raise refuse(f"it does not parse as SQL ({exc})") from exc
    if len(statements) != 1 or statements[0] is None:
        raise refuse("give exactly one expression")
    tree = statements[0]
    banned = (
        exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.Alter, exp.Command,
        exp.Merge, exp.Into, exp.Set, exp.Transaction, exp.Commit, exp.Rollback, exp.Copy,
        exp.Grant, exp.TruncateTable, exp.Use,
    )
    if isinstance(tree, exp.Query):
        raise refuse("a query is not a predicate — write the WHERE condition only")
    allowed_roots = (exp.Predicate, exp.Connector, exp.Not, exp.Paren, exp.Boolean,
                     exp.Column, exp.Func, exp.Cast, exp.Case, exp.Exists)
    if not isinstance(tree, allowed_roots):
        raise refuse(f"{type(tree).__name__} is not a boolean expression")
    for node in tree.walk():
        if isinstance(node, banned):
            raise refuse(f"{type(node).__name__.upper()} is not allowed in a predicate")
        if isinstance(node, exp.Select) and node.args.get("into"):
            raise refuse("SELECT … INTO is not allowed")
        if isinstance(node, exp.Func):
            name = (node.sql_name() if not isinstance(node, exp.Anonymous) else node.name).lower()
            if any(name.startswith(bad) for bad in _FORBIDDEN_FUNCTIONS):
                raise refuse(f"function {name}() acts on the server")
    return tree.sql(dialect="postgres", comments=False)
