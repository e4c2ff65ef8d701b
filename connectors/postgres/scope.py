"""What a ``postgresql://`` target addresses, and the row-scope predicate check.

* ``postgresql://user@host:port/db`` — the whole database (so ``DROP DATABASE``
  can be undone);
* ``?schema=s1,s2`` — every object of those schemas;
* ``?tables=s.t1,s.t2`` — those tables (unqualified names are in ``public``),
  their partitions and inheritance children, the sequences, types and
  functions they use, and the views that depend on them;
* ``?table=s.t&where=<predicate>`` — a before-image of the rows a statement
  will touch.

The predicate is parsed with sqlglot and must be one boolean expression: no
``;`` outside a string literal, no second statement, no DDL/DML, no ``SELECT … INTO``, no functions that
act on the server (``pg_terminate_backend``, ``set_config``, ``lo_*``,
``dblink*``, file access, …).  What runs is sqlglot's re-rendering of the parsed
expression, never the text as given, inside a ``READ ONLY`` transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from preimage._errors import InvalidTargetError
from preimage._target import Target
from preimage.connectors.sql.predicate import check_predicate
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


__all__ = ["PgScope", "check_predicate", "parse_scope", "split_name"]
