"""Rows of many tables read by a second session while the capture's session reads the rest of
the catalog: the same bytes as the capture's own session reads, in its snapshot, and no
deadlock against a waiting ALTER."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from preimage.connectors.postgres import catalog, rows_beside
from preimage.connectors.postgres.capture import prepare_session
from preimage.connectors.postgres.connection import connect
from preimage.connectors.postgres.rows import copy_out
from preimage.connectors.postgres.rows_beside import read_rows_beside
from preimage.interface.target import Target
from preimage.store.blobs import LocalBlobStore

pytestmark = pytest.mark.postgres

TABLES = """
CREATE SCHEMA app;
CREATE TABLE app.mixed (id int PRIMARY KEY, t text, b bytea, f float8, ts timestamptz,
                        iv interval, m money);
INSERT INTO app.mixed
SELECT g, CASE g % 3 WHEN 0 THEN NULL WHEN 1 THEN E'tab\\there\\nnew\\\\line' ELSE 'é ✓' END,
       decode(md5(g::text), 'hex'), g / 3.0,
       timestamptz '2024-03-10 01:30:00+00' + g * interval '37 minutes',
       g * interval '1 day 3 hours 4.5 seconds', g / 100.0
FROM generate_series(1, 3000) g;
DELETE FROM app.mixed WHERE id % 11 = 0;
CREATE TABLE app.plain (id int, v text);
INSERT INTO app.plain SELECT g, repeat('v', g % 50) FROM generate_series(1, 2000) g;
CREATE TABLE app.parted (id int, k int) PARTITION BY RANGE (k);
CREATE TABLE app.parted_low PARTITION OF app.parted FOR VALUES FROM (0) TO (50);
CREATE TABLE app.parted_high PARTITION OF app.parted FOR VALUES FROM (50) TO (100);
INSERT INTO app.parted SELECT g, g % 100 FROM generate_series(1, 4000) g;
CREATE TABLE app.empty (id int);
"""


def _tables(cur: Any) -> list[Any]:
    oids = catalog.tables_of_schemas(cur, ["app"])
    return catalog.read_tables(cur, oids)


@pytest.fixture
def read_beside(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tables the second session read, as it reads them."""
    names: list[str] = []
    second = rows_beside._read_second

    def spy(conn: Any, tables: list[Any], read: Any) -> dict[int, Any]:
        done = second(conn, tables, read)
        names.extend(tables[i].qualified for i in done)
        return done

    monkeypatch.setattr(rows_beside, "_read_second", spy)
    return names


def _digests(tables: list[Any]) -> list[tuple[str, int | None, str | None, str | None]]:
    return [(t.qualified, t.row_count, t.rows_digest, t.row_system_digest) for t in tables]


def test_second_session_reads_what_the_capture_session_reads(
        db: Any, tmp_path: Path, read_beside: list[str]) -> None:
    """Rows read beside the catalog equal the capture session's own reading — under
    non-default session settings, with rows changed by another session after the capture
    began — and the catalog work done meanwhile comes back with them."""
    db.sql(TABLES)
    target = Target.parse(db.uri("schema=app"))
    blobs = LocalBlobStore(tmp_path / "blobs")
    conn = connect(target, db.name)
    with conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        cur = conn.cursor(row_factory=dict_row)
        prepare_session(cur)
        for setting in ("DateStyle = 'SQL, DMY'", "TimeZone = 'America/St_Johns'",
                        "IntervalStyle = 'sql_standard'", "extra_float_digits = 0",
                        "bytea_output = 'escape'", "lc_monetary = 'C'"):
            cur.execute(f"SET LOCAL {setting}")
        tables = _tables(cur)
        db.sql("UPDATE app.mixed SET t = 'changed' WHERE id < 100; "
               "DELETE FROM app.plain WHERE id > 1000; INSERT INTO app.parted VALUES (0, 1)")

        def rest() -> int:
            cur.execute("SELECT count(*) AS n FROM pg_catalog.pg_class")
            return int(cur.fetchone()["n"])

        beside, classes = read_rows_beside(cur, tables, blobs, set(), None, rest)
        own = [copy_out(cur, t, blobs, None) for t in tables]
    assert classes > 0
    assert sorted(read_beside) == ["app.empty", "app.mixed", "app.parted_high",
                                   "app.parted_low", "app.plain"]
    assert _digests(beside) == _digests(own)
    counts = {t.qualified: t.row_count for t in beside}
    assert counts["app.plain"] == 2000 and counts["app.parted_low"] == 2000


def test_a_queued_alter_sends_the_rows_back_to_the_capture_session(
        db: Any, tmp_path: Path, read_beside: list[str]) -> None:
    """An ALTER waiting behind the capture's locks makes the second session's NOWAIT lock
    fail (waiting would deadlock: it would queue behind the ALTER, which waits for the
    capture, which waits for it); those rows are read by the capture's own session, the same
    bytes, and the ALTER gets its lock once the capture ends."""
    db.sql(TABLES)
    target = Target.parse(db.uri("schema=app"))
    blobs = LocalBlobStore(tmp_path / "blobs")
    conn = connect(target, db.name)
    other = connect(target, db.name)
    granted = threading.Event()

    def alter() -> None:  # waits for the capture's lock, then lets go at once
        other.execute("LOCK TABLE app.mixed IN ACCESS EXCLUSIVE MODE")
        granted.set()
        other.rollback()

    waiter = threading.Thread(target=alter)
    try:
        with conn:
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            conn.read_only = True
            cur = conn.cursor(row_factory=dict_row)
            prepare_session(cur)
            tables = _tables(cur)
            cur.execute("LOCK TABLE ONLY app.mixed IN ACCESS SHARE MODE")
            waiter.start()
            for _ in range(100_000):  # until the lock request is queued behind the capture's
                cur.execute("SELECT count(*) AS n FROM pg_catalog.pg_locks l JOIN "
                            "pg_catalog.pg_class c ON c.oid = l.relation "
                            "WHERE c.relname = 'mixed' AND NOT l.granted")
                if cur.fetchone()["n"]:
                    break
            else:
                pytest.fail("the ACCESS EXCLUSIVE lock request never queued")
            beside, _ = read_rows_beside(cur, tables, blobs, set(), None, lambda: None)
            own = [copy_out(cur, t, blobs, None) for t in tables]
            assert not granted.is_set()
    finally:
        waiter.join()
        other.close()
    assert granted.is_set()
    assert "app.mixed" not in read_beside
    assert _digests(beside) == _digests(own)
