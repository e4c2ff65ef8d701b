"""Table rows: streamed out with ``COPY … TO STDOUT`` into a blob, and back in.

Rows are read in storage order — one plain scan from the first page, as
``pg_dump`` reads them (the session turns synchronized scans and parallel
workers off) — and written back in that order, so a re-created table holds
its rows in the same physical order and ``pg_dump`` prints them the same.  A
row scope reads its rows in ``ctid`` order.  The bytes go from the server to
the blob store in COPY's chunks.  Each row's ``ctid`` and ``xmin``
(server-class) come as two more columns of the same ``COPY`` (a second scan
would cost the server as much again); the reader cuts them off each row into a
second blob, line for line with the rows.  A big table read by ``psql``
(:mod:`.psql_copy`) gets the record from a second session's scan instead, in
``COPY``'s binary form (:func:`~preimage.snapshot_schemas.postgres.iter_row_positions`
reads either form).
Generated columns are left out (the server computes them again); identity
values are written as they were (``COPY`` and ``OVERRIDING SYSTEM VALUE``
accept them).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from preimage.connectors.postgres.ddl import q, qn
from preimage.connectors.postgres.psql_copy import PsqlCopyError, PsqlSession
from preimage.connectors.sql.rows import put_while_reading
from preimage.interface.blobs import BlobStore
from preimage.snapshot_schemas.postgres import PgTable, binary_positions_count

Cursor = Any

_TEMP = q("_preimage_rows")
_SPOOL = 4 << 20  # the ctid/xmin record is held in memory up to this size, then in a temp file


def _select(table: PgTable, where: str | None, *, system: bool = False) -> str:
    cols = ", ".join(q(c) for c in table.copy_columns)
    if system:  # last, so each row's own columns are what is left of it
        cols += ", ctid, xmin"
    if where:
        return (f"SELECT {cols} FROM ONLY {qn(table.namespace, table.name)} WHERE ({where}) "
                "ORDER BY ctid")
    return f"SELECT {cols} FROM ONLY {qn(table.namespace, table.name)}"


def _user_search_path(cur: Cursor) -> None:
    # A row predicate is written as the user would write it: unqualified names resolve
    # through the role's usual search_path, not the empty one definitions are read with.
    cur.execute("SELECT pg_catalog.set_config('search_path', "
                "(SELECT coalesce(current_setting('preimage.user_search_path', true), "
                "'\"$user\", public')), true)")


def copy_out_chunks(cur: Cursor, sql: str, size: int = 1 << 20,
                    system: IO[bytes] | None = None) -> Iterator[bytes]:
    """The bytes of ``COPY (…) TO STDOUT``, in chunks of about ``size`` bytes.

    libpq hands COPY data over one row per call; psycopg's iteration pays a
    Python round trip (and a readiness wait) per row.  Here every row libpq has
    already received is taken in one tight loop and joined, and the socket is
    waited on only when nothing is buffered.

    With ``system``, the ``COPY``'s last two columns are ``ctid, xmin``: each row is
    yielded without them, and they (a line of COPY text per row, like the rows) are
    written to ``system`` as they come.
    """
    import select

    import psycopg

    with cur.copy(sql):
        pgconn = cur.connection.pgconn
        parts: list[bytes] = []
        phys: list[bytes] = []
        held = 0
        while True:
            nbytes, data = pgconn.get_copy_data(1)
            if nbytes > 0:
                row = bytes(data)
                if system is not None:
                    # ctid and xmin hold no tab; a tab inside a value is escaped by COPY
                    cut = row.rindex(b"\t", 0, row.rindex(b"\t"))
                    phys.append(row[cut + 1:])
                    row = row[:cut]
                parts.append(row)
                held += nbytes
                if held < size:
                    continue
            elif not parts:
                if nbytes < 0:
                    break
                select.select([pgconn.socket], [], [])  # nothing buffered: wait
                pgconn.consume_input()
                continue
            # a chunk is full, nothing more is buffered, or the COPY ended: hand it over
            if system is None:
                yield b"".join(parts)
            else:
                parts.append(b"")  # the rows lost their line ends with the cut
                system.write(b"".join(phys))
                yield b"\n".join(parts)
            parts, phys, held = [], [], 0
            if nbytes < 0:
                break
        # The COPY's own result ends it (or carries its error).
        while (result := pgconn.get_result()) is not None:
            if result.status != psycopg.pq.ExecStatus.COMMAND_OK:
                raise psycopg.errors.error_from_result(result, encoding=cur.connection.info.encoding)


@dataclass
class _Counter:
    rows: int = 0

    def through(self, chunks: Iterable[Any]) -> Iterator[bytes]:
        for chunk in chunks:
            data = bytes(chunk)
            self.rows += data.count(b"\n")
            yield data


def copy_out(cur: Cursor, table: PgTable, blobs: BlobStore, where: str | None,
             psql: PsqlSession | None = None) -> PgTable:
    """Stream the table's rows (those matching ``where``) into a blob; return the item with
    ``rows_digest``, ``row_count`` and (for ordinary tables) ``row_system_digest`` set.

    With ``psql`` (a whole table only), the rows are read by ``psql`` sessions in the
    capture's snapshot (:mod:`.psql_copy`); should one fail, they are read in process."""
    if not table.copy_columns or table.relkind == "p":
        return table  # a partitioned table holds no rows of its own
    if psql is not None and not where:
        try:
            return copy_out_psql(cur, table, blobs, psql)
        except PsqlCopyError:
            pass  # read in process below: the same bytes
    if where:
        _user_search_path(cur)
    counter = _Counter()
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL) as system:
        digest = put_while_reading(blobs, counter.through(copy_out_chunks(
            cur, f"COPY ({_select(table, where, system=True)}) TO STDOUT", system=system)))
        system.seek(0)
        system_digest = blobs.put_chunks(iter(lambda: system.read(1 << 20), b""))
    if where:
        cur.execute("SELECT pg_catalog.set_config('search_path', '', true)")
    return table.model_copy(update={
        "rows_digest": digest, "row_count": counter.rows, "row_system_digest": system_digest,
    })


def copy_out_psql(cur: Cursor, table: PgTable, blobs: BlobStore, psql: PsqlSession) -> PgTable:
    """:func:`copy_out` of the whole table by two ``psql`` sessions in the capture's snapshot
    (:mod:`.psql_copy`); raises :class:`PsqlCopyError` when one failed or their line counts
    differ (what was stored by then is left to ``prune``)."""
    name = qn(table.namespace, table.name)
    # The capture's own session takes the lock the in-process COPY would take here.
    cur.execute(f"LOCK TABLE ONLY {name} IN ACCESS SHARE MODE")
    counter = _Counter()
    with tempfile.TemporaryFile() as system:
        # The ctid/xmin record in binary: the server writes it in half the time of text.
        with psql.copy(name, f"COPY ({_select(table, None)}) TO STDOUT",
                       f"COPY (SELECT ctid, xmin FROM ONLY {name}) TO STDOUT (FORMAT binary)",
                       system) as chunks:
            digest = put_while_reading(blobs, counter.through(chunks))
        size = system.seek(0, 2)
        system.seek(max(size - 2, 0))
        tail = system.read(2)
        system.seek(0)
        positions = binary_positions_count(size, system.read(64), tail)
        if positions != counter.rows:  # two scans that should have matched did not: read again
            raise PsqlCopyError(f"{positions} ctid/xmin rows for {counter.rows} rows")
        system.seek(0)
        system_digest = blobs.put_chunks(iter(lambda: system.read(1 << 20), b""))
    return table.model_copy(update={
        "rows_digest": digest, "row_count": counter.rows, "row_system_digest": system_digest,
    })


def live_digest(cur: Cursor, table: PgTable, where: str | None) -> tuple[str, int]:
    """Digest and count of the live rows, computed the way a capture would (nothing stored)."""
    hasher = hashlib.sha256()
    counter = _Counter()
    if where:
        _user_search_path(cur)
    for data in counter.through(copy_out_chunks(cur, f"COPY ({_select(table, where)}) TO STDOUT")):
        hasher.update(data)
    if where:
        cur.execute("SELECT pg_catalog.set_config('search_path', '', true)")
    return hasher.hexdigest(), counter.rows


def copy_in(cur: Cursor, table: PgTable, blobs: BlobStore, into: str | None = None) -> None:
    """Load the captured rows into the table (or into ``into``) with ``COPY … FROM STDIN``.

    A blob that turns out corrupt raises at its end, inside the restore's
    transaction, so nothing of it stays.
    """
    if table.rows_digest is None:
        return
    name = into or qn(table.namespace, table.name)
    cols = ", ".join(q(c) for c in table.copy_columns)
    with cur.copy(f"COPY {name} ({cols}) FROM STDIN") as copy:
        for chunk in blobs.chunks(table.rows_digest, path=table.qualified):
            copy.write(chunk)


@dataclass
class SyncCounts:
    """What a row sync changed."""

    deleted: int = 0
    updated: int = 0
    inserted: int = 0

    @property
    def total(self) -> int:
        return self.deleted + self.updated + self.inserted


def sync_rows(
    cur: Cursor,
    table: PgTable,
    blobs: BlobStore,
    *,
    delete_extra: bool,
    update_changed: bool,
    identity_always: set[str],
) -> SyncCounts:
    """Make the live rows of an existing table match the captured ones.

    With a primary key: rows are matched by key; captured rows that are missing
    are inserted with their original key, changed rows are reverted (when
    ``update_changed``), and rows created since the capture are deleted (when
    ``delete_extra``).  Without a key, ``delete_extra`` replaces all rows;
    otherwise only rows whose whole value is missing are inserted.
    """
    counts = SyncCounts()
    name = qn(table.namespace, table.name)
    cols = ", ".join(q(c) for c in table.copy_columns)
    rcols = ", ".join(f"r.{q(c)}" for c in table.copy_columns)
    cur.execute(f"DROP TABLE IF EXISTS pg_temp.{_TEMP}")
    cur.execute(
        f"CREATE TEMP TABLE {_TEMP} ON COMMIT DROP AS SELECT {cols} FROM ONLY {name} WITH NO DATA"
    )
    copy_in(cur, table, blobs, into=f"pg_temp.{_TEMP}")
    if table.row_key:
        match = " AND ".join(f"t.{q(k)} = r.{q(k)}" for k in table.row_key)
        if delete_extra:
            cur.execute(
                f"DELETE FROM ONLY {name} AS t WHERE NOT EXISTS "
                f"(SELECT 1 FROM pg_temp.{_TEMP} AS r WHERE {match})"
            )
            counts.deleted = cur.rowcount
        settable = [c for c in table.copy_columns
                    if c not in table.row_key and c not in identity_always]
        if update_changed and settable:
            assign = ", ".join(f"{q(c)} = r.{q(c)}" for c in settable)
            live = ", ".join(f"t.{q(c)}::text" for c in settable)
            want = ", ".join(f"r.{q(c)}::text" for c in settable)
            cur.execute(
                f"UPDATE ONLY {name} AS t SET {assign} FROM pg_temp.{_TEMP} AS r "
                f"WHERE {match} AND ROW({live}, NULL) IS DISTINCT FROM ROW({want}, NULL)"
            )
            counts.updated = cur.rowcount
        cur.execute(
            f"INSERT INTO {name} ({cols}) OVERRIDING SYSTEM VALUE SELECT {rcols} "
            f"FROM pg_temp.{_TEMP} AS r WHERE NOT EXISTS (SELECT 1 FROM ONLY {name} AS t "
            f"WHERE {match})"
        )
        counts.inserted = cur.rowcount
    elif delete_extra:
        cur.execute(f"DELETE FROM ONLY {name}")
        counts.deleted = cur.rowcount
        cur.execute(
            f"INSERT INTO {name} ({cols}) OVERRIDING SYSTEM VALUE SELECT {rcols} "
            f"FROM pg_temp.{_TEMP} AS r"
        )
        counts.inserted = cur.rowcount
    else:
        live = ", ".join(f"t.{q(c)}::text" for c in table.copy_columns)
        want = ", ".join(f"r.{q(c)}::text" for c in table.copy_columns)
        cur.execute(
            f"INSERT INTO {name} ({cols}) OVERRIDING SYSTEM VALUE SELECT {rcols} "
            f"FROM pg_temp.{_TEMP} AS r WHERE NOT EXISTS (SELECT 1 FROM ONLY {name} AS t "
            f"WHERE ROW({live}, NULL) IS NOT DISTINCT FROM ROW({want}, NULL))"
        )
        counts.inserted = cur.rowcount
    cur.execute(f"DROP TABLE pg_temp.{_TEMP}")
    return counts


def truncate(cur: Cursor, name: str) -> str | None:
    """``TRUNCATE ONLY`` the table inside a savepoint; ``None`` when done, else why not
    (another table's foreign key references it — nothing was changed then)."""
    import psycopg

    cur.execute("SAVEPOINT _preimage_truncate")
    try:
        cur.execute(f"TRUNCATE ONLY {name}".encode())
    except psycopg.errors.FeatureNotSupported as exc:
        cur.execute("ROLLBACK TO SAVEPOINT _preimage_truncate")
        return str(exc).strip().splitlines()[0]
    cur.execute("RELEASE SAVEPOINT _preimage_truncate")
    return None


def rewrite_rows(cur: Cursor, table: PgTable, blobs: BlobStore) -> str | None:
    """Make the table hold exactly the captured rows, in their captured (storage) order:
    ``TRUNCATE`` then ``COPY``.  Returns why it could not (nothing changed then)."""
    why = truncate(cur, qn(table.namespace, table.name))
    if why is None:
        copy_in(cur, table, blobs)
    return why


def merge_rows_in_order(cur: Cursor, table: PgTable, blobs: BlobStore) -> str | None:
    """Row scope: put the captured rows back where they were in storage order.

    The live rows the capture does not hold keep their place; each captured row
    (matched by primary key — or, without one, by its whole value and occurrence —
    replacing the live one) goes back to its captured ``ctid``; the table is rewritten
    in that merged order.  Returns why it could not (no ``ctid`` record, or a foreign key
    forbids the truncate; nothing changed then).
    """
    if table.row_system_digest is None:
        return "the backup has no storage positions for its rows"
    name = qn(table.namespace, table.name)
    cols = ", ".join(q(c) for c in table.copy_columns)
    cur.execute(
        f"CREATE TEMP TABLE {_TEMP} ON COMMIT DROP AS SELECT {cols} FROM ONLY {name} WITH NO DATA")
    copy_in(cur, table, blobs, into=f"pg_temp.{_TEMP}")
    cur.execute("CREATE TEMP TABLE _preimage_pos (pos tid, x xid) ON COMMIT DROP")
    with cur.copy("COPY pg_temp._preimage_pos FROM STDIN") as copy:  # a row scope's: text
        for chunk in blobs.chunks(table.row_system_digest, path=table.qualified):
            copy.write(chunk)
    if table.row_key:
        ident = ""
        match = " AND ".join(f"c.{q(k)} = l.{q(k)}" for k in table.row_key)
    else:  # the whole row, and which of its equal copies
        ident = (f", ROW({cols})::text AS _txt, row_number() OVER "
                 f"(PARTITION BY ROW({cols})::text ORDER BY pos) AS _occ")
        match = "c._txt = l._txt AND c._occ = l._occ"
    cur.execute(
        f"""CREATE TEMP TABLE _preimage_merged ON COMMIT DROP AS
        WITH r AS (SELECT row_number() OVER (ORDER BY ctid) AS n, {cols} FROM pg_temp.{_TEMP}),
        p AS (SELECT row_number() OVER (ORDER BY ctid) AS n, pos FROM pg_temp._preimage_pos),
        cap AS (SELECT p.pos, {cols} FROM r JOIN p USING (n)),
        c AS (SELECT *{ident} FROM cap),
        l AS (SELECT *{ident} FROM (SELECT ctid AS pos, {cols} FROM ONLY {name}) x)
        SELECT pos, 0 AS src, {cols} FROM cap
        UNION ALL
        SELECT pos, 1, {cols} FROM l WHERE NOT EXISTS (SELECT 1 FROM c WHERE {match})""")
    why = truncate(cur, name)
    if why is None:
        cur.execute(f"INSERT INTO {name} ({cols}) OVERRIDING SYSTEM VALUE SELECT {cols} "
                    "FROM pg_temp._preimage_merged ORDER BY pos, src")
    for temp in (_TEMP, "_preimage_pos", "_preimage_merged"):
        cur.execute(f"DROP TABLE pg_temp.{temp}")
    return why
