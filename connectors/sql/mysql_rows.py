"""MySQL/MariaDB rows as SQL value tuples, built by the server and replayed in batches.

The server renders each row as one line, ``(v1,v2,…)``, every value
``QUOTE(CAST(col AS BINARY))`` (``NULL`` for null, else a quoted string of
the column's exact bytes — character set untouched, binary kept, ``''`` and
``NULL`` distinct) with newlines written ``\\n``; the client only reads one
binary column per row and writes the lines to the blob as they come, so no
value is converted or parsed in Python.  A restore joins the lines into
multi-row ``INSERT`` statements (``REPLACE``/``INSERT IGNORE`` for a row scope)
sent with the connection's client character set set to ``binary``, so each
value goes into its column as the same bytes — what ``mysqldump`` and the
``mariadb`` client do, without per-row work here either.  Both sides run with
``time_zone = '+00:00'`` so ``TIMESTAMP`` values are read and written alike.

Columns of types whose text form does not go back byte for byte as a string
(``BIT``, spatial types, MySQL's native ``JSON``) keep a table on the generic
JSON-lines path; generated columns are left out (the server computes them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Literal

from preimage.connectors.sql.mysql import quote as _q

# Types whose values do not round-trip as quoted binary strings.
_SLOW_TYPES = frozenset({
    "bit", "json", "geometry", "point", "linestring", "polygon", "multipoint",
    "multilinestring", "multipolygon", "geometrycollection",
})
FETCH = 5000
STATEMENT_BYTES = 1 << 20


def tuple_columns(conn: Any, table: str) -> list[str] | None:
    """The stored (not generated) columns of ``table`` when every one of them can travel as
    a quoted binary string; ``None`` when the table needs the generic path (or the driver
    is not one whose unbuffered cursor this module knows: PyMySQL, mysqlclient)."""
    if _driver(conn) not in ("pymysql", "MySQLdb"):
        return None
    rows = conn.exec_driver_sql(
        "SELECT COLUMN_NAME, DATA_TYPE, EXTRA FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
        (table,),
    ).all()
    if not rows or any(str(t).lower() in _SLOW_TYPES for _, t, _ in rows):
        return None
    return [str(n) for n, _, extra in rows if "GENERATED" not in str(extra or "").upper()]


def _driver(conn: Any) -> str:
    return type(conn.connection.dbapi_connection).__module__.split(".")[0]


def select_sql(table: str, columns: list[str], where: str | None = None) -> str:
    """The query whose one binary column is each row as a ``(v1,v2,…)`` line."""
    values = ", ".join(f"REPLACE(QUOTE(CAST({_q(c)} AS BINARY)), 0x0A, 0x5C6E)" for c in columns)
    sql = f"SELECT CONCAT('(', CONCAT_WS(',', {values}), ')') FROM {_q(table)}"
    return sql + (f" WHERE ({where})" if where else "")


def read_lines(conn: Any, sql: str) -> Iterator[bytes]:
    """The rows of ``sql`` (one line each), in chunks, from an unbuffered cursor on the
    connection's own transaction."""
    dbapi = conn.connection.dbapi_connection
    cursors = __import__(f"{_driver(conn)}.cursors", fromlist=["SSCursor"])
    conn.exec_driver_sql("SET SESSION time_zone = '+00:00'")
    cur = dbapi.cursor(cursors.SSCursor)
    try:
        cur.execute(sql)
        while rows := cur.fetchmany(FETCH):
            yield b"\n".join(bytes(r[0]) for r in rows) + b"\n"
    finally:
        cur.close()


def write_lines(conn: Any, table: str, columns: list[str], chunks: Iterable[bytes], *,
                on_duplicate: Literal["error", "update", "keep"] = "error",
                key: list[str] | None = None) -> int:
    """Send the captured lines back as multi-row ``INSERT`` statements; return the row
    count.  A row whose key is taken: an error, or (``update``) the live row gets the
    captured values in place, or (``keep``) the live row is kept."""
    dbapi = conn.connection.dbapi_connection
    saved = conn.exec_driver_sql(
        "SELECT @@character_set_client, @@collation_connection, @@time_zone, @@sql_mode").one()
    head = f"INSERT INTO {_q(table)} ({', '.join(_q(c) for c in columns)}) VALUES ".encode()
    tail = b""
    if on_duplicate == "update":
        changed = [c for c in columns if c not in (key or [])] or columns[:1]
        tail = (" ON DUPLICATE KEY UPDATE " + ", ".join(
            f"{_q(c)} = VALUES({_q(c)})" for c in changed)).encode()
    elif on_duplicate == "keep":
        tail = f" ON DUPLICATE KEY UPDATE {_q(columns[0])} = {_q(columns[0])}".encode()
    count = 0
    cur = dbapi.cursor()
    # Values are the columns' own bytes; NO_AUTO_VALUE_ON_ZERO keeps a 0 id a 0 (mysqldump's
    # mode); no NO_BACKSLASH_ESCAPES, which the \\n escapes need.
    cur.execute("SET SESSION character_set_client = binary, character_set_connection = binary, "
                "time_zone = '+00:00', sql_mode = 'NO_AUTO_VALUE_ON_ZERO'")
    try:
        batch: list[bytes] = []
        size = 0
        rest = b""
        for chunk in chunks:
            lines = (rest + bytes(chunk)).split(b"\n")
            rest = lines.pop()
            for line in lines:
                batch.append(line)
                size += len(line) + 1
                if size >= STATEMENT_BYTES:
                    cur.execute(head + b",".join(batch) + tail)
                    count += len(batch)
                    batch, size = [], 0
        if rest:
            batch.append(rest)
        if batch:
            cur.execute(head + b",".join(batch) + tail)
            count += len(batch)
    finally:
        cur.execute("SET SESSION character_set_client = %s, collation_connection = %s, "
                    "time_zone = %s, sql_mode = %s", tuple(str(x) for x in saved))
        cur.close()
    return count
