"""MySQL/MariaDB privileges on the database and its objects, per user.

Users are server-wide, but what each may do *in this database* belongs to it: a
``GRANT SELECT ON shop.*``, ``GRANT UPDATE ON shop.orders``, ``GRANT SELECT (email) ON
shop.customers`` or ``GRANT EXECUTE ON PROCEDURE shop.purge`` is state an agent can
``REVOKE`` (and ``DROP DATABASE`` does not remove: the server keeps them).  One
:class:`~preimage.snapshot_schemas.sql.SqlGrant` per grantee and object holds its privileges
(``GRANT OPTION`` among them when it may pass them on), read from
``information_schema.SCHEMA_PRIVILEGES``, ``TABLE_PRIVILEGES``, ``COLUMN_PRIVILEGES`` and
``mysql.procs_priv``.  A table target reads the grants on its tables and their columns.

The server shows a user only its own grants unless it may read the ``mysql`` schema; a
capture that cannot see every user's grants records them as uncaptured
(:func:`audit_grants`).  A restore grants what is missing and revokes what was added
(``merge``: grants only), after the objects exist (:func:`grant_statements`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from preimage.connectors.sql.mysql import quote
from preimage.snapshot_schemas import Uncaptured
from preimage.snapshot_schemas.sql import SqlGrant

GRANT_OPTION = "GRANT OPTION"


def _rows(conn: Any, sql: str) -> list[tuple[Any, ...]]:
    return list(conn.exec_driver_sql(sql))


def read_grants(conn: Any, tables: list[str] | None) -> list[SqlGrant]:
    """Every grantee's privileges on the database (``tables``: on those tables only)."""
    got: dict[tuple[str, str], set[str]] = defaultdict(set)

    def add(grantee: str, on: str, privilege: str, grantable: str) -> None:
        got[(grantee, on)].add(privilege)
        if grantable == "YES":
            got[(grantee, on)].add(GRANT_OPTION)

    if tables is None:
        for grantee, privilege, grantable in _rows(conn, (
                "SELECT GRANTEE, PRIVILEGE_TYPE, IS_GRANTABLE FROM "
                "information_schema.SCHEMA_PRIVILEGES WHERE TABLE_SCHEMA = DATABASE()")):
            add(grantee, "database", privilege, grantable)
    for grantee, table, privilege, grantable in _rows(conn, (
            "SELECT GRANTEE, TABLE_NAME, PRIVILEGE_TYPE, IS_GRANTABLE FROM "
            "information_schema.TABLE_PRIVILEGES WHERE TABLE_SCHEMA = DATABASE()")):
        if tables is None or table in tables:
            add(grantee, f"table {table}", privilege, grantable)
    for grantee, table, column, privilege, grantable in _rows(conn, (
            "SELECT GRANTEE, TABLE_NAME, COLUMN_NAME, PRIVILEGE_TYPE, IS_GRANTABLE FROM "
            "information_schema.COLUMN_PRIVILEGES WHERE TABLE_SCHEMA = DATABASE()")):
        if tables is None or table in tables:
            add(grantee, f"column {table}.{column}", privilege, grantable)
    if tables is None and can_read_mysql(conn):
        for user, host, name, kind, privileges in _rows(conn, (
                "SELECT User, Host, Routine_name, Routine_type, Proc_priv FROM mysql.procs_priv "
                "WHERE Db = DATABASE()")):
            grantee = f"'{user}'@'{host}'"
            for privilege in str(privileges).split(","):
                if privilege:
                    got[(grantee, f"{str(kind).lower()} {name}")].add(
                        GRANT_OPTION if privilege == "Grant" else privilege.upper())
    return [SqlGrant(grantee=grantee, on=on, privileges=sorted(privs))
            for (grantee, on), privs in sorted(got.items()) if privs]


def can_read_mysql(conn: Any) -> bool:
    """Whether the session may read the ``mysql`` schema's privilege tables (and so sees
    every user's grants, not only its own)."""
    try:
        _rows(conn, "SELECT 1 FROM mysql.tables_priv LIMIT 0")
        _rows(conn, "SELECT 1 FROM mysql.procs_priv LIMIT 0")
    except Exception as exc:  # the driver's (or SQLAlchemy's) "access denied"
        cause = getattr(exc, "orig", None) or exc
        if type(cause).__module__.split(".")[0] not in ("pymysql", "MySQLdb"):
            raise
        return False
    return True


def audit_grants(conn: Any) -> list[Uncaptured]:
    """An uncaptured entry when other users' grants on the database cannot be read."""
    if can_read_mysql(conn):
        return []
    return [Uncaptured(name="other users' privileges", kind="grants", fidelity="metadata",
                       reason="the connecting user may not read the mysql schema, so only its "
                       "own grants were seen — capture as a user with SELECT on mysql.*")]


def _object(on: str, database: str) -> tuple[str, str]:
    """(``ON`` clause, column list) of a grant's object."""
    kind, _, name = on.partition(" ")
    if kind == "database":
        return f"{quote(database)}.*", ""
    if kind == "column":
        table, _, column = name.partition(".")
        return f"{quote(database)}.{quote(table)}", f" ({quote(column)})"
    prefix = "" if kind == "table" else f"{kind.upper()} "
    return f"{prefix}{quote(database)}.{quote(name)}", ""


def grant_statements(want: SqlGrant | None, have: SqlGrant | None, database: str, *,
                     merge: bool) -> list[str]:
    """GRANT and REVOKE statements that turn ``have`` into ``want`` (``merge``: GRANT only)."""
    some = want or have
    assert some is not None
    on, columns = _object(some.on, database)
    wanted = set(want.privileges) if want else set()
    held = set(have.privileges) if have else set()
    sql = []
    missing = sorted(wanted - held - {GRANT_OPTION})
    if missing or (GRANT_OPTION in wanted - held):
        privileges = missing or sorted(wanted - {GRANT_OPTION}) or ["USAGE"]
        listed = ", ".join(f"{p}{columns}" for p in privileges)
        option = " WITH GRANT OPTION" if GRANT_OPTION in wanted else ""
        sql.append(f"GRANT {listed} ON {on} TO {some.grantee}{option}")
    extra = sorted(held - wanted)
    if extra and not merge:
        listed = ", ".join(f"{p}{columns}" if p != GRANT_OPTION else p for p in extra)
        sql.append(f"REVOKE {listed} ON {on} FROM {some.grantee}")
    return sql
