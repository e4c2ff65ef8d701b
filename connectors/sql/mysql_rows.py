"""MySQL/MariaDB rows as SQL value tuples, built by the server, loaded back with LOAD DATA.

The server renders each row as one line, ``(v1,v2,…)``, every value
``QUOTE(CAST(col AS BINARY))`` (``NULL`` for null, else a quoted string of
the column's exact bytes — character set untouched, binary kept, ``''`` and
``NULL`` distinct) with newlines written ``\\n`` (numbers, dates and times, which
hold none of what ``QUOTE`` escapes, are put between quotes by ``CONCAT``: the same
bytes, less work for the server); the client only reads one
binary column per row and writes the lines to the blob as they come, so no
value is converted or parsed in Python.  A restore of a whole table hands the
same lines to ``LOAD DATA LOCAL INFILE`` (:func:`load_lines`: the escapes
``QUOTE`` writes are the ones LOAD DATA reads) through a named pipe; where the
server or client library refuses LOCAL files, and for a row scope (``ON
DUPLICATE KEY UPDATE``), it joins them into multi-row ``INSERT`` statements
(:func:`write_lines`) sent with the connection's client character set set to
``binary``.  Either way each value goes into its column as the same bytes,
without per-row work here.  Both sides run with
``time_zone = '+00:00'`` so ``TIMESTAMP`` values are read and written alike.

Columns of types whose text form does not go back byte for byte as a string
(``BIT``, spatial types, MySQL's native ``JSON``) keep a table on the generic
JSON-lines path; generated columns are left out (the server computes them).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal, NamedTuple

from preimage.connectors.sql.mysql import quote as _q

# Types whose values do not round-trip as quoted binary strings.
_SLOW_TYPES = frozenset({
    "bit", "json", "geometry", "point", "linestring", "polygon", "multipoint",
    "multilinestring", "multipolygon", "geometrycollection",
})
FETCH = 5000
STATEMENT_BYTES = 1 << 20


# Types whose values never hold a newline: their ``REPLACE`` would change nothing.
_NO_NEWLINE = frozenset({
    "tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "float", "double",
    "date", "datetime", "timestamp", "time", "year",
})

class Column(NamedTuple):
    """A column as ``information_schema.COLUMNS`` describes it."""

    name: str
    type: str  # DATA_TYPE
    extra: str  # EXTRA (``VIRTUAL GENERATED``, …)
    nullable: bool = True


def table_columns(conn: Any, table: str | None = None) -> dict[str, list[Column]]:
    """The columns of every table of the database (or of ``table`` only), in one query:
    name → columns in order."""
    sql = ("SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, EXTRA, IS_NULLABLE "
           "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()"
           + (" AND TABLE_NAME = %s" if table else "") + " ORDER BY TABLE_NAME, ORDINAL_POSITION")
    out: dict[str, list[Column]] = {}
    for name, column, typ, extra, nullable in (conn.exec_driver_sql(sql, (table,)) if table
                                               else conn.exec_driver_sql(sql)):
        out.setdefault(str(name), []).append(
            Column(str(column), str(typ), str(extra or ""), str(nullable) != "NO"))
    return out


def tuple_columns(conn: Any, table: str, known: list[Column] | None = None) -> list[str] | None:
    """The stored (not generated) columns of ``table`` when every one of them can travel as
    a quoted binary string; ``None`` when the table needs the generic path (or the driver
    is not one whose unbuffered cursor this module knows: PyMySQL, mysqlclient).
    ``known``: its columns as :func:`table_columns` read them (else they are read here)."""
    if _driver(conn) not in ("pymysql", "MySQLdb"):
        return None
    rows = known if known is not None else columns_of(conn, table)
    if not rows or any(c.type.lower() in _SLOW_TYPES for c in rows):
        return None
    return [c.name for c in rows if "GENERATED" not in c.extra.upper()]


def plain_columns(known: list[Column]) -> dict[str, bool]:
    """The columns of ``known`` whose values hold no newline (read without ``REPLACE``),
    each with whether it may be NULL."""
    return {c.name: c.nullable for c in known if c.type.lower() in _NO_NEWLINE}


def columns_of(conn: Any, table: str) -> list[Column]:
    """The columns of ``table``, in order (:func:`table_columns` of it alone)."""
    return next(iter(table_columns(conn, table).values()), [])


def _driver(conn: Any) -> str:
    return type(conn.connection.dbapi_connection).__module__.split(".")[0]


def select_sql(table: str, columns: list[str], where: str | None = None,
               plain: Mapping[str, bool] | None = None) -> str:
    """The query whose one binary column is each row as a ``(v1,v2,…)`` line.  The
    ``plain`` columns (numbers, dates, times; name → whether it may be NULL) hold no
    newline, quote or backslash, so theirs is put between quotes as it is (the bytes
    ``QUOTE`` would give, with less work for the server).  A ``NOT NULL`` one is a bare
    part of the row's one flat ``CONCAT``, its quotes joined to the literals around it."""
    plain = plain or {}
    args: list[str] = []
    text = "("  # literal text since the last column expression
    for i, c in enumerate(columns):
        text += "," if i else ""
        if c in plain and not plain[c]:
            args += [_literal(text + "'"), _q(c)]
            text = "'"
            continue
        if text:
            args.append(_literal(text))
        text = ""
        args.append(f"IFNULL(CONCAT('''', {_q(c)}, ''''), 'NULL')" if c in plain
                    else f"REPLACE(QUOTE(CAST({_q(c)} AS BINARY)), 0x0A, 0x5C6E)")
    args.append(_literal(text + ")"))
    sql = f"SELECT CONCAT(_binary{', '.join(args)}) FROM {_q(table)}"
    return sql + (f" WHERE ({where})" if where else "")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def read_lines(conn: Any, sql: str) -> Iterator[bytes]:
    """The rows of ``sql`` (one line each), in chunks, from an unbuffered cursor on the
    connection's own transaction."""
    dbapi = conn.connection.dbapi_connection
    driver = _driver(conn)
    conn.exec_driver_sql("SET SESSION time_zone = '+00:00'")
    if driver == "MySQLdb":
        yield from _read_mysqldb(dbapi, sql)
        return
    cursors = __import__(f"{driver}.cursors", fromlist=["SSCursor"])
    cur = dbapi.cursor(cursors.SSCursor)
    try:
        cur.execute(sql)
        while rows := cur.fetchmany(FETCH):
            yield _joined([r[0] for r in rows])
    finally:
        cur.close()


def _read_mysqldb(dbapi: Any, sql: str) -> Iterator[bytes]:
    """mysqlclient: the rows straight from its result object (``mysql_use_result``), one
    ``bytes`` per row and no cursor in between: a third less CPU per row than
    ``SSCursor.fetchmany``."""
    dbapi.query(sql.encode())
    result = dbapi.use_result()
    try:
        while rows := result.fetch_row(FETCH):
            yield _joined([line for (line,) in rows])
    finally:
        result.discard()  # what is left unread (an error, or a generator closed early)


def _joined(lines: list[Any]) -> bytes:
    try:
        return b"\n".join(lines) + b"\n"
    except TypeError:  # a NULL line: QUOTE gives NULL for more than max_allowed_packet
        raise RowTooLongError() from None


class RowTooLongError(Exception):
    """The server rendered a row as NULL: its line is longer than it may send."""

    def __init__(self) -> None:
        super().__init__("a row's quoted text is longer than the server's max_allowed_packet "
                         "— raise max_allowed_packet (SET GLOBAL) and capture again")


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


# The tuple lines read as a file: ``('a',NULL,'b\'c')`` is a line that starts with ``(`` and
# ends with ``)`` and a newline, fields split by ``,``, quoted by ``'``, escaped by a
# backslash — the escapes ``QUOTE`` writes (and ``\n`` for newlines); ``NULL`` unquoted is
# NULL.
_LOAD = ("LOAD DATA LOCAL INFILE %s INTO TABLE {table} CHARACTER SET binary "
         "FIELDS TERMINATED BY ',' ENCLOSED BY '''' ESCAPED BY '\\\\' "
         "LINES STARTING BY '(' TERMINATED BY ')\\n' ({columns})")
# Server and client answers that mean LOAD DATA LOCAL is switched off.
_LOCAL_REFUSED = frozenset({1148, 2068, 3948, 4166})
_CLIENT_LOCAL_FILES = 128


def connect_args(driver: str) -> dict[str, Any]:
    """Driver options for a restore's connection.  PyMySQL: LOAD DATA LOCAL announced to
    the server, but a file is sent only while :func:`load_lines` runs its own statement.
    mysqlclient keeps the client library's default: MariaDB's Connector/C sends a file only
    in answer to a statement that starts with ``LOAD``; a library that sends none makes the
    rows go back as INSERT statements."""
    return {"local_infile": True} if driver == "pymysql" else {}


def load_lines(conn: Any, table: str, columns: list[str], chunks: Iterable[bytes],
               expected: int, *, in_transaction: bool = False) -> int | None:
    """Send the captured lines with ``LOAD DATA LOCAL INFILE`` (what makes mysqldump's
    ``--tab`` reloads fast: no SQL to parse per row), fed through a named pipe from the
    blob as it is read; return the row count, or ``None`` when the server or driver does
    not take LOAD DATA LOCAL (nothing was sent: use :func:`write_lines`).

    LOCAL turns duplicate-key errors into warnings (the row is skipped): a row count other
    than ``expected`` raises :class:`RowLoadError`, so no row is lost silently.  Values
    convert as the INSERT statements would convert them (an ``ENUM``'s error value ``''``
    warns in both and goes back as it was; mysqldump's comparison in the tests is the
    judge).  The
    load is one transaction (its own unless ``in_transaction``): rows of a blob that turns
    out damaged half-way, or that fail the checks, are rolled back, none kept."""
    dbapi = conn.connection.dbapi_connection
    driver = _driver(conn)
    if driver == "pymysql":
        if not dbapi.client_flag & _CLIENT_LOCAL_FILES:
            return None
    elif driver != "MySQLdb":
        return None
    sql = _LOAD.format(table=_q(table), columns=", ".join(_q(c) for c in columns))
    saved = conn.exec_driver_sql("SELECT @@time_zone, @@sql_mode").one()
    folder = tempfile.mkdtemp(prefix="preimage-load-")
    pipe = os.path.join(folder, "rows")
    os.mkfifo(pipe, 0o600)
    feeder = _Feeder(pipe, chunks)
    cur = dbapi.cursor()
    try:
        cur.execute("SET SESSION time_zone = '+00:00', sql_mode = 'NO_AUTO_VALUE_ON_ZERO'")
        if not in_transaction:
            cur.execute("START TRANSACTION")
        try:
            count = _load(cur, dbapi, driver, sql, pipe, feeder, table, expected)
        except BaseException:
            if not in_transaction:
                cur.execute("ROLLBACK")
            raise
        if not in_transaction:
            cur.execute("COMMIT" if count is not None else "ROLLBACK")
        return count
    finally:
        cur.execute("SET SESSION time_zone = %s, sql_mode = %s", tuple(str(x) for x in saved))
        cur.close()
        os.unlink(pipe)
        os.rmdir(folder)


def _load(cur: Any, dbapi: Any, driver: str, sql: str, pipe: str, feeder: _Feeder, table: str,
          expected: int) -> int | None:
    feeder.start()
    if driver == "pymysql":
        dbapi._local_infile = True  # honoured for this statement only
    try:
        cur.execute(sql, (pipe,))
    except Exception as exc:
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
        if code in _LOCAL_REFUSED and not feeder.sent:
            return None
        raise
    finally:
        if driver == "pymysql":
            dbapi._local_infile = False
        feeder.finish()
    if feeder.error is not None:
        raise feeder.error
    count = int(cur.rowcount)
    if count != expected:
        cur.execute("SHOW WARNINGS LIMIT 3")
        raise RowLoadError(table, count, expected, [str(w[2]) for w in cur.fetchall()])
    return count


class RowLoadError(Exception):
    """LOAD DATA took another number of rows than the capture holds."""

    def __init__(self, table: str, count: int, expected: int, warnings: list[str]) -> None:
        detail = f": {'; '.join(warnings)}" if warnings else ""
        super().__init__(f"{table}: {count} of {expected} captured rows loaded{detail}")


class _Feeder:
    """Writes the chunks into a named pipe from a thread while the driver reads the pipe as
    the LOAD DATA LOCAL file; :meth:`finish` lets go of a writer nobody reads."""

    def __init__(self, path: str, chunks: Iterable[bytes]) -> None:
        self.path = path
        self.chunks = chunks
        self.sent = False
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="preimage-load-feeder",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            with open(self.path, "wb") as out:
                self.sent = True
                last = b"\n"
                for chunk in self.chunks:
                    if self._stop.is_set():
                        return
                    if chunk:
                        out.write(chunk)
                        last = bytes(chunk[-1:])
                if last != b"\n":  # the last line needs its terminator too
                    out.write(b"\n")
        except BrokenPipeError:
            return  # the reader stopped; its own error says why
        except BaseException as exc:  # handed to the loading thread
            self.error = exc

    def finish(self) -> None:
        """Wait for the writer; if the statement never opened the pipe, open it here so
        the writer's ``open`` returns, and drain what it writes."""
        fd = -1
        self._stop.set()
        if not self.sent:
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                fd = -1
        try:
            while self._thread.is_alive():
                if fd >= 0:
                    try:
                        os.read(fd, 1 << 16)
                    except BlockingIOError:
                        pass
                self._thread.join(timeout=0.01)
        finally:
            if fd >= 0:
                os.close(fd)
