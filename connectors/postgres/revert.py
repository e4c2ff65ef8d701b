"""Undoing one call on PostgreSQL: rows by primary key and column, sequences by value.

The reverter is the SQL one (:class:`~preimage.connectors.sql.revert.RowsReverter`)
over COPY text: a table's synthesized rows blob is live's COPY lines with the
written rows replaced, removed or added.  :func:`revert_rows` writes exactly the
named rows inside the restore's transaction — ``UPDATE`` of the rows that exist,
``INSERT … OVERRIDING SYSTEM VALUE`` of the ones that do not, ``DELETE`` of the
ones to remove (a keyless row: one of the equal rows, by ``ctid``) — with the
table's user triggers off while it runs, as every restore does.  A table is never
truncated or reloaded to revert a few rows.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from preimage.connectors.postgres.ddl import q, qn, trigger_enable_statement
from preimage.connectors.sql.revert import RowsReverter
from preimage.interface.blobs import BlobStore
from preimage.snapshot_schemas.postgres import PgTable, iter_copy_rows
from preimage.snapshot_schemas.sql import TableRow, row_key

Cursor = Any

__all__ = ["PgReverter", "revert_rows", "row_prefix"]


def _copy_line(values: Iterable[str | None]) -> str:
    return "\t".join("\\N" if v is None else v for v in values) + "\n"


def copy_lines(rows: Iterable[TableRow], columns: list[str]) -> Iterator[bytes]:
    """Rows (values in COPY text form) as COPY text lines."""
    for row in rows:
        yield _copy_line(row.values.get(c) for c in columns).encode()


def row_prefix(table: PgTable) -> str:
    """How the natural keys of ``table``'s rows begin."""
    return f"kind=row|table={table.qualified}|row="


class PgReverter(RowsReverter):
    """PostgreSQL: rows by primary key and column; sequences, tables and every other
    object as whole items (a sequence by its value: moved since the call, it is a
    conflict, since setting it back could hand out ids twice)."""

    def table_name(self, table: Any) -> str:
        return str(table.qualified)

    def with_rows(self, table: Any, rows: list[TableRow], blobs: Any) -> Any:
        digest = blobs.put_chunks(copy_lines(rows, table.copy_columns)) if rows else None
        return table.model_copy(update={"rows_digest": digest, "row_count": len(rows),
                                        "row_system_digest": None})


def wanted_rows(table: PgTable, keys: frozenset[str], blobs: BlobStore) -> tuple[
    list[dict[str, str | None]], list[str]
]:
    """The rows of ``table``'s (synthesized) blob named by ``keys``, in blob order, and the
    named keys that are not there (rows to delete)."""
    prefix = row_prefix(table)
    named = {k for k in keys if k.startswith(prefix)}
    found: list[dict[str, str | None]] = []
    present: set[str] = set()
    if table.rows_digest and named:
        seen: Counter[str] = Counter()
        for values in iter_copy_rows(blobs.chunks(table.rows_digest, path=table.qualified),
                                     table.copy_columns):
            k = prefix + row_key(values, table.row_key, seen)
            if k in named:
                found.append(values)
                present.add(k)
    return found, sorted(named - present)


def revert_rows(cur: Cursor, table: PgTable, keys: frozenset[str], blobs: BlobStore) -> str:
    """Write exactly the rows of ``table`` that ``keys`` name; say what was done."""
    rows, gone = wanted_rows(table, keys, blobs)
    name = qn(table.namespace, table.name)
    cols = ", ".join(q(c) for c in table.copy_columns)
    cur.execute("SELECT tgname, tgenabled FROM pg_catalog.pg_trigger WHERE tgrelid = "
                "%s::regclass AND NOT tgisinternal", (name,))
    triggers = [(r["tgname"], r["tgenabled"]) for r in cur.fetchall()]
    if triggers:
        cur.execute(f"ALTER TABLE {name} DISABLE TRIGGER USER")
    deleted = updated = inserted = 0
    cur.execute("CREATE TEMP TABLE _preimage_undo ON COMMIT DROP AS "
                f"SELECT {cols} FROM ONLY {name} WITH NO DATA")
    if table.row_key:
        match = " AND ".join(f"t.{q(k)} = r.{q(k)}" for k in table.row_key)
        keycols = ", ".join(q(k) for k in table.row_key)
        if gone:
            cur.execute("CREATE TEMP TABLE _preimage_gone ON COMMIT DROP AS "
                        f"SELECT {keycols} FROM ONLY {name} WITH NO DATA")
            with cur.copy(f"COPY pg_temp._preimage_gone ({keycols}) FROM STDIN") as copy:
                for k in gone:
                    copy.write(_copy_line(json.loads(k[len(row_prefix(table)):])).encode())
            cur.execute(f"DELETE FROM ONLY {name} AS t USING pg_temp._preimage_gone AS r "
                        f"WHERE {match}")
            deleted = cur.rowcount
            cur.execute("DROP TABLE pg_temp._preimage_gone")
        _copy_rows(cur, rows, table)
        always = {c.name for c in table.columns if c.identity == "a"}
        settable = [c for c in table.copy_columns if c not in table.row_key and c not in always]
        if settable and rows:
            assign = ", ".join(f"{q(c)} = r.{q(c)}" for c in settable)
            cur.execute(f"UPDATE ONLY {name} AS t SET {assign} FROM pg_temp._preimage_undo AS r "
                        f"WHERE {match}")
            updated = cur.rowcount
        if rows:
            rcols = ", ".join(f"r.{q(c)}" for c in table.copy_columns)
            cur.execute(f"INSERT INTO {name} ({cols}) OVERRIDING SYSTEM VALUE SELECT {rcols} "
                        f"FROM pg_temp._preimage_undo AS r WHERE NOT EXISTS "
                        f"(SELECT 1 FROM ONLY {name} AS t WHERE {match})")
            inserted = cur.rowcount
    else:
        for k in gone:  # one of the equal rows, by ctid
            whole = json.loads(k[len(row_prefix(table)):].rpartition("#")[0])
            cur.execute("TRUNCATE pg_temp._preimage_undo")
            with cur.copy(f"COPY pg_temp._preimage_undo ({cols}) FROM STDIN") as copy:
                copy.write(_copy_line(whole.get(c) for c in table.copy_columns).encode())
            same = " AND ".join(f"t.{q(c)} IS NOT DISTINCT FROM r.{q(c)}"
                                for c in table.copy_columns)
            cur.execute(f"DELETE FROM ONLY {name} WHERE ctid = (SELECT t.ctid FROM ONLY {name} "
                        f"AS t, pg_temp._preimage_undo AS r WHERE {same} LIMIT 1)")
            deleted += cur.rowcount
        cur.execute("TRUNCATE pg_temp._preimage_undo")
        _copy_rows(cur, rows, table)
        if rows:
            cur.execute(f"INSERT INTO {name} ({cols}) OVERRIDING SYSTEM VALUE SELECT {cols} "
                        "FROM pg_temp._preimage_undo")
            inserted = cur.rowcount
    cur.execute("DROP TABLE pg_temp._preimage_undo")
    for trg, enabled in triggers:
        cur.execute(trigger_enable_statement(name, trg, enabled).encode())
    return f"{deleted} deleted, {updated} reverted, {inserted} inserted"


def _copy_rows(cur: Cursor, rows: list[dict[str, str | None]], table: PgTable) -> None:
    if not rows:
        return
    cols = ", ".join(q(c) for c in table.copy_columns)
    with cur.copy(f"COPY pg_temp._preimage_undo ({cols}) FROM STDIN") as copy:
        for values in rows:
            copy.write(_copy_line(values.get(c) for c in table.copy_columns).encode())
