"""Whole tables' rows read by a second session while the capture's own session reads the catalog.

A capture of many tables (a whole database, a schema) spends about as long reading the
catalog, one query after another, as reading the rows, one ``COPY`` after another; each
waits for the server in turn.  So, once the tables are known, the rest of the catalog is
read by the capture's session in a thread, while this thread reads the rows through a
second connection inside the capture transaction's snapshot (``pg_export_snapshot()``,
then ``SET TRANSACTION SNAPSHOT`` in a ``REPEATABLE READ, READ ONLY`` transaction — as
``pg_dump -j`` reads tables) and stores them (the blob store is used from this thread only).
The bytes are the ones the capture's own session would read: the second session gets the
settings that shape ``COPY`` text and the order of a scan
(:func:`~preimage.connectors.postgres.psql_copy.copy_settings`), and
:func:`~preimage.connectors.postgres.rows.copy_out` reads each table the same way.

Locks, as ``pg_dump`` takes them: the capture's session takes ``ACCESS SHARE`` on every
table first (one statement), so none can be altered or dropped until the capture ends; the
second session takes its own with ``NOWAIT`` before each table.  Waiting there could
deadlock against a waiting ``ALTER`` that the capture's session holds back, which the
server could not see (the capture's session waits for this thread, not for a lock); so a
table whose lock is not granted at once, and every table after any failure of the second
session, is read by the capture's own session once its thread is done.  No second session
is opened on a standby (no snapshot to export), when it cannot connect, or for fewer than
:data:`MIN_TABLES` tables (a connection costs more than it saves).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from preimage.connectors.postgres.ddl import lit, qn
from preimage.connectors.postgres.psql_copy import PsqlSession, copy_settings
from preimage.connectors.postgres.rows import copy_out
from preimage.interface.blobs import BlobStore
from preimage.snapshot_schemas.postgres import PgTable

Cursor = Any
T = TypeVar("T")

MIN_TABLES = 3  # tables with rows to read; fewer are read by the capture's session alone


def _has_rows(table: PgTable) -> bool:
    return bool(table.copy_columns) and table.relkind != "p"


def read_rows_beside(cur: Cursor, tables: list[PgTable], blobs: BlobStore, big: set[int],
                     psql: PsqlSession | None, catalog: Callable[[], T]) -> tuple[list[PgTable], T]:
    """The whole ``tables`` with their rows, and what ``catalog()`` (the rest of the catalog,
    read on ``cur``) returned; the two at once when a second session can be opened (see the
    module), else one after the other.  ``big``: tables read by ``psql`` (:mod:`.psql_copy`).
    """
    def read(c: Cursor, table: PgTable) -> PgTable:
        return copy_out(c, table, blobs, None, psql if table.oid in big else None)

    second = _open(cur, tables) if sum(map(_has_rows, tables)) >= MIN_TABLES else None
    if second is None:
        return [read(cur, t) for t in tables], catalog()
    result: list[T] = []
    failure: list[BaseException] = []

    def run_catalog() -> None:
        try:
            result.append(catalog())
        except BaseException as exc:  # raised again in this thread below
            failure.append(exc)

    thread = threading.Thread(target=run_catalog, name="preimage-catalog", daemon=True)
    thread.start()
    done: dict[int, PgTable] = {}
    try:
        done = _read_second(second, tables, read)
    finally:
        thread.join()
        second.close()
    if failure:
        raise failure[0]
    # what the second session did not read, the capture's own session reads now
    return [done[i] if i in done else read(cur, t) for i, t in enumerate(tables)], result[0]


def _open(cur: Cursor, tables: list[PgTable]) -> Any:
    """The second session, in the capture's snapshot with its settings; ``None`` on a
    standby or when it cannot be opened."""
    import psycopg

    cur.execute("SELECT pg_catalog.pg_is_in_recovery() AS standby")
    if cur.fetchone()["standby"]:
        return None
    names = ", ".join(qn(t.namespace, t.name) for t in tables if _has_rows(t))
    cur.execute(f"LOCK TABLE ONLY {names} IN ACCESS SHARE MODE".encode())
    settings = copy_settings(cur)
    cur.execute("SELECT pg_catalog.pg_export_snapshot() AS snapshot")
    snapshot = cur.fetchone()["snapshot"]
    info = cur.connection.info
    try:
        conn = psycopg.connect(info.dsn, password=info.password or None, autocommit=True)
    except psycopg.Error:
        return None
    try:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        conn.execute(f"SET TRANSACTION SNAPSHOT {lit(snapshot)}".encode())
        for statement in settings:
            conn.execute(statement.encode())
    except psycopg.Error:
        conn.close()
        return None
    return conn


def _read_second(conn: Any, tables: list[PgTable],
                 read: Callable[[Cursor, PgTable], PgTable]) -> dict[int, PgTable]:
    """The tables the second session read (by position), up to its first failure."""
    import psycopg
    from psycopg.rows import dict_row

    done: dict[int, PgTable] = {}
    cur = conn.cursor(row_factory=dict_row)
    try:
        for i, table in enumerate(tables):
            if not _has_rows(table):
                continue
            name = qn(table.namespace, table.name)
            cur.execute(f"LOCK TABLE ONLY {name} IN ACCESS SHARE MODE NOWAIT".encode())
            done[i] = read(cur, table)
    except psycopg.Error:
        pass  # the rest are read by the capture's own session
    return done
