"""MySQL and MariaDB: the objects around the tables, and what a capture leaves out.

Everything is kept as the server prints it (``SHOW CREATE …``), so replaying
it gives back the same definitions, ``DEFINER`` and character sets included:
the database (default character set and collation), views, triggers,
procedures, functions and events.  Tables keep ``SHOW CREATE TABLE``, which
carries ``AUTO_INCREMENT``, engine, charsets, collations and foreign keys.

The completeness audit lists every object of the database from
``information_schema`` that the capture did not take (MariaDB sequences,
system-versioned history, …) as uncaptured.

Both ``mysql+…`` and ``mariadb+…`` URLs come here (SQLAlchemy names the
MariaDB dialect ``mariadb``).
"""

from __future__ import annotations

from typing import Any

from preimage.snapshot_schemas import Uncaptured
from preimage.snapshot_schemas.sql import SqlObject, SqlTable

MYSQL_DIALECTS = ("mysql", "mariadb")


def pick_driver(url: str) -> str:
    """``url`` with a driver named when it names none (``mysql://``, ``mariadb://``): the C
    driver mysqlclient when it is installed (``preimage[mysql-c]``: rows are read several
    times faster), else PyMySQL.  A URL that names a driver keeps it."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in MYSQL_DIALECTS:
        return url
    import importlib.util

    driver = "mysqldb" if importlib.util.find_spec("MySQLdb") is not None else "pymysql"
    return f"{scheme}+{driver}://{rest}"


def is_mysql(conn: Any) -> bool:
    """Whether the connection speaks to MySQL or MariaDB."""
    return bool(conn.dialect.name in MYSQL_DIALECTS)


def quote(name: str) -> str:
    """``name`` as a MySQL identifier."""
    return "`" + name.replace("`", "``") + "`"


_q = quote


def _settings(row: Any, *, client: int, mode: int | None = None) -> dict[str, str]:
    """The session settings an object was created under (SHOW CREATE prints them; the
    server keeps them with the object, and mysqldump prints them back)."""
    out = {"character_set_client": str(row[client]), "collation_connection": str(row[client + 1])}
    if mode is not None:
        out["sql_mode"] = str(row[mode])
    return out


def replay(conn: Any, obj: SqlObject) -> None:
    """Create ``obj`` under the session settings it was created with, then reset them."""
    saved = conn.exec_driver_sql(
        "SELECT @@sql_mode, @@character_set_client, @@collation_connection, @@time_zone").one()
    try:
        for name, value in sorted(obj.settings.items()):
            conn.exec_driver_sql(f"SET SESSION {name} = %s", (value,))
        conn.exec_driver_sql(obj.ddl)
    finally:
        for name, value in zip(("sql_mode", "character_set_client", "collation_connection",
                                "time_zone"), saved, strict=True):
            conn.exec_driver_sql(f"SET SESSION {name} = %s", (value,))


def database_name(conn: Any) -> str:
    """The current database."""
    return str(conn.exec_driver_sql("SELECT DATABASE()").scalar())


def read_objects(conn: Any, tables: list[str] | None) -> list[SqlObject]:
    """The database (whole-database targets), views, routines, events, and the triggers of
    ``tables`` (``None``: every table), in an order that can be replayed."""
    db = database_name(conn)
    out: list[SqlObject] = []
    if tables is None:
        ddl = conn.exec_driver_sql(f"SHOW CREATE DATABASE {_q(db)}").one()[1]
        out.append(SqlObject(kind="database", name=db, table="", ddl=ddl))
        for (name,) in conn.exec_driver_sql(
            "SELECT TABLE_NAME FROM information_schema.VIEWS WHERE TABLE_SCHEMA = DATABASE() "
            "ORDER BY TABLE_NAME"
        ):
            row = conn.exec_driver_sql(f"SHOW CREATE VIEW {_q(name)}").one()
            out.append(SqlObject(kind="view", name=name, table="", ddl=row[1],
                                 settings=_settings(row, client=2)))
        for name, typ in conn.exec_driver_sql(
            "SELECT ROUTINE_NAME, ROUTINE_TYPE FROM information_schema.ROUTINES "
            "WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE IN ('PROCEDURE', 'FUNCTION') "
            "ORDER BY ROUTINE_TYPE, ROUTINE_NAME"
        ):
            row = conn.exec_driver_sql(f"SHOW CREATE {typ} {_q(name)}").one()
            out.append(SqlObject(kind=typ.lower(), name=name, table="", ddl=row[2],
                                 settings=_settings(row, mode=1, client=3)))
        for (name,) in conn.exec_driver_sql(
            "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = DATABASE() "
            "ORDER BY EVENT_NAME"
        ):
            row = conn.exec_driver_sql(f"SHOW CREATE EVENT {_q(name)}").one()
            out.append(SqlObject(kind="event", name=name, table="", ddl=row[3],
                                 settings=_settings(row, mode=1, client=4) | {
                                     "time_zone": row[2]}))
    for name, table in conn.exec_driver_sql(
        "SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS "
        "WHERE TRIGGER_SCHEMA = DATABASE() ORDER BY EVENT_OBJECT_TABLE, ACTION_ORDER"
    ):
        if tables is not None and table not in tables:
            continue
        row = conn.exec_driver_sql(f"SHOW CREATE TRIGGER {_q(name)}").one()
        out.append(SqlObject(kind="trigger", name=name, table=table, ddl=row[2],
                             settings=_settings(row, mode=1, client=3)))
    return out


def audit(conn: Any, items: list[Any], tables: list[str] | None) -> list[Uncaptured]:
    """Objects of the database (or of ``tables``) the capture did not take."""
    have = {(i.kind, i.name) for i in items if isinstance(i, SqlTable | SqlObject)}
    out: list[Uncaptured] = []
    for name, typ, versioned in conn.exec_driver_sql(
        "SELECT TABLE_NAME, TABLE_TYPE, TABLE_TYPE = 'SYSTEM VERSIONED' FROM "
        "information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME"
    ):
        if tables is not None and name not in tables:
            continue
        kind = {"BASE TABLE": "table", "SYSTEM VERSIONED": "table", "VIEW": "view"}.get(typ)
        if kind is None:
            out.append(Uncaptured(name=name, kind=typ.lower(),
                                  reason=f"{typ.lower()} objects are not captured"))
        elif (kind, name) not in have:
            out.append(Uncaptured(name=name, kind=kind, reason=f"the {kind} was not read"))
        if versioned:
            out.append(Uncaptured(name=name, kind="row history", reason=(
                "the history rows of a system-versioned table are not captured")))
    if tables is None:
        for name, typ in conn.exec_driver_sql(
            "SELECT ROUTINE_NAME, ROUTINE_TYPE FROM information_schema.ROUTINES "
            "WHERE ROUTINE_SCHEMA = DATABASE()"
        ):
            if (typ.lower(), name) not in have:
                out.append(Uncaptured(name=name, kind=typ.lower(),
                                      reason=f"{typ.lower()} objects are not captured"))
    return out
