"""A big table's rows read by psql sessions in the capture's snapshot: the same bytes as the
in-process reader, even for awkward values, session settings and changes made meanwhile."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from preimage.connectors.postgres import catalog
from preimage.connectors.postgres.capture import prepare_session
from preimage.connectors.postgres.connection import connect
from preimage.connectors.postgres.psql_copy import MIN_BYTES, PsqlCopyError, open_session
from preimage.connectors.postgres.rows import copy_out, copy_out_psql
from preimage.interface.target import Target
from preimage.snapshot_schemas.postgres import iter_row_positions
from preimage.store.blobs import LocalBlobStore

pytestmark = pytest.mark.postgres

AWKWARD = """
CREATE TABLE public.mixed (
    id int PRIMARY KEY, t text, b bytea, n numeric, f float8, j jsonb, ts timestamptz,
    d date, iv interval, m money, r regclass, a text[], p point, u uuid);
INSERT INTO public.mixed
SELECT g, CASE g % 5 WHEN 0 THEN NULL WHEN 1 THEN E'tab\\there\\nnew\\\\line' WHEN 2 THEN 'é ✓ 𝄞'
              WHEN 3 THEN '(1,2)' ELSE repeat('x', g % 300) END,
       decode(md5(g::text), 'hex'), g / 7.0, g / 3.0, jsonb_build_object('k', g, 's', 'a\tb'),
       timestamptz '2024-03-10 01:30:00+00' + g * interval '37 minutes', date '2000-01-01' + g,
       g * interval '1 day 3 hours 4.5 seconds', g / 100.0, 'public.mixed'::regclass,
       ARRAY['a b', NULL, 'c"d'], point(g, -g), md5(g::text)::uuid
FROM generate_series(1, 60000) g;
DELETE FROM public.mixed WHERE id % 11 = 0;
UPDATE public.mixed SET n = -n WHERE id % 13 = 0;
"""


def _read_both(db: Any, tmp_path: Path, *, change: str | None = None,
               settings: tuple[str, ...] = ()) -> list[Any]:
    target = Target.parse(db.uri("tables=public.mixed"))
    conn = connect(target, db.name)
    blobs = LocalBlobStore(tmp_path / "blobs")
    with conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        cur = conn.cursor(row_factory=dict_row)
        prepare_session(cur)
        for setting in settings:  # this session's own, not the database's defaults
            cur.execute(f"SET LOCAL {setting}")
        oids, _ = catalog.named_tables(cur, ["public.mixed"])
        (table,) = catalog.read_tables(cur, oids)
        session = open_session(cur)
        assert session is not None, "psql was not found or refused the connection"
        password = target.resolve_password()
        assert password and password not in " ".join(session._args(["SELECT 1"]))
        if change:
            db.sql(change)  # committed by another session after the capture's snapshot
        external = copy_out_psql(cur, table, blobs, session)
        internal = copy_out(cur, table, blobs, None)
    assert external.row_system_digest != internal.row_system_digest  # binary, and text
    positions = _positions(blobs, internal)
    assert _positions(blobs, external) == positions
    assert _positions(blobs, external, size=7) == positions  # records cut at every place
    return [external, internal]


def _positions(blobs: LocalBlobStore, table: Any, size: int = 0) -> list[dict[str, Any]]:
    """The table's ctid/xmin record as the meter reads it (from chunks of ``size`` bytes)."""
    chunks = blobs.chunks(table.row_system_digest)
    if size:
        data = b"".join(chunks)
        chunks = iter([data[i:i + size] for i in range(0, len(data), size)])
    return list(iter_row_positions(chunks))


def test_psql_reader_matches_in_process_reader(db: Any, tmp_path: Path) -> None:
    """Rows read by psql are byte-identical to the in-process COPY's, and the ctid/xmin
    records (binary from psql, text in process) hold the same positions, under non-default date, time zone, interval, float, bytea and money settings."""
    db.sql(AWKWARD)
    external, internal = _read_both(db, tmp_path, settings=(
        "DateStyle = 'SQL, DMY'", "TimeZone = 'America/St_Johns'",
        "IntervalStyle = 'sql_standard'", "extra_float_digits = 0", "bytea_output = 'escape'"))
    assert external.row_count == internal.row_count == 60000 - 60000 // 11
    assert external.rows_digest == internal.rows_digest


def test_psql_reader_sees_the_capture_snapshot(db: Any, tmp_path: Path) -> None:
    """Rows changed, added and deleted by another session after the capture began are not
    in what psql reads: it reads the capture transaction's snapshot."""
    db.sql(AWKWARD)
    external, internal = _read_both(db, tmp_path, change="""
        UPDATE public.mixed SET t = 'changed' WHERE id < 100;
        DELETE FROM public.mixed WHERE id BETWEEN 500 AND 900;
        INSERT INTO public.mixed (id) SELECT g FROM generate_series(100001, 100100) g""")
    assert external.row_count == internal.row_count == 60000 - 60000 // 11
    assert external.rows_digest == internal.rows_digest


def test_big_table_round_trips_through_cli(db: Any, cli: Any, pg_dump: Any, check: Any) -> None:
    """A table big enough for the psql reader drops and comes back with an identical pg_dump
    (rows in their storage order) and full score."""
    db.sql(AWKWARD)
    size = int(db.sql("SELECT pg_relation_size('public.mixed')").strip())
    assert size >= MIN_BYTES
    before = pg_dump(db)
    backup = cli.capture(db.uri("tables=public.mixed"))
    db.sql("DROP TABLE public.mixed")
    cli.restore(backup)
    check.same_dump(pg_dump(db), before)
    check.full_fidelity(cli, backup)


@contextmanager
def _capturing_mixed(conn: Any) -> Iterator[tuple[Any, Any, Any]]:
    """A capture's own transaction over ``public.mixed``, as the connector opens it:
    (cursor, table, psql session)."""
    with conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        cur = conn.cursor(row_factory=dict_row)
        prepare_session(cur)
        oids, _ = catalog.named_tables(cur, ["public.mixed"])
        (table,) = catalog.read_tables(cur, oids)
        session = open_session(cur)
        assert session is not None
        yield cur, table, session


def test_a_queued_lock_sends_the_read_back_in_process(db: Any, tmp_path: Path) -> None:
    """An ALTER waiting for the capture's lock makes psql's NOWAIT lock fail (no deadlock:
    psql would queue behind the ALTER, which waits for the capture, which waits for psql);
    the rows are then read in process, the same bytes."""
    db.sql(AWKWARD)
    target = Target.parse(db.uri("tables=public.mixed"))
    blobs = LocalBlobStore(tmp_path / "blobs")
    conn = connect(target, db.name)
    other = connect(target, db.name)

    def alter() -> None:  # waits for the capture's lock, then lets go at once
        other.execute("LOCK TABLE public.mixed IN ACCESS EXCLUSIVE MODE")
        other.rollback()

    waiter = threading.Thread(target=alter)
    try:
        with _capturing_mixed(conn) as (cur, table, session):
            cur.execute("LOCK TABLE ONLY public.mixed IN ACCESS SHARE MODE")
            waiter.start()
            for _ in range(100_000):  # until the lock request is queued behind the capture's
                cur.execute("SELECT count(*) AS n FROM pg_catalog.pg_locks "
                            "WHERE relation = %s AND NOT granted", (table.oid,))
                if cur.fetchone()["n"]:
                    break
            else:
                pytest.fail("the ACCESS EXCLUSIVE lock request never queued")
            with pytest.raises(PsqlCopyError, match="lock"):
                copy_out_psql(cur, table, blobs, session)
            fallback = copy_out(cur, table, blobs, None, session)
            internal = copy_out(cur, table, blobs, None)
    finally:
        waiter.join()
        other.close()
    assert fallback.row_count == internal.row_count == 60000 - 60000 // 11
    assert (fallback.rows_digest, fallback.row_system_digest) == (
        internal.rows_digest, internal.row_system_digest)


def test_a_psql_that_cannot_run_leaves_the_read_in_process(db: Any, tmp_path: Path) -> None:
    """A psql program that cannot be started does not fail the capture: the rows are read
    in process."""
    db.sql(AWKWARD)
    conn = connect(Target.parse(db.uri("tables=public.mixed")), db.name)
    blobs = LocalBlobStore(tmp_path / "blobs")
    with _capturing_mixed(conn) as (cur, table, session):
        broken = dataclasses.replace(session, program=str(tmp_path / "no-such-psql"))
        read = copy_out(cur, table, blobs, None, broken)
        internal = copy_out(cur, table, blobs, None)
    assert read.row_count == 60000 - 60000 // 11
    assert (read.rows_digest, read.row_system_digest) == (
        internal.rows_digest, internal.row_system_digest)
