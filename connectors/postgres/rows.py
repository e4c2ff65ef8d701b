"""Table rows: streamed out with ``COPY … TO STDOUT`` into a blob, and back in.

Rows are read in primary-key order (or, without a key, in the order of their
text), so an unchanged table always yields the same blob and the same digest.
Nothing holds more than one COPY chunk in memory.  Generated columns are left
out (the server computes them again); identity values are written as they
were (``COPY`` and ``OVERRIDING SYSTEM VALUE`` accept them).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from preimage._blobs import BlobStore
from preimage.connectors.postgres.ddl import q, qn
from preimage.snapshot_schemas.postgres import PgTable

Cursor = Any

_TEMP = q("_preimage_rows")


def _select(table: PgTable, where: str | None, *, system: bool = False) -> str:
    cols = ", ".join(q(c) for c in table.copy_columns)
    if system:
        cols += ", ctid, xmin"
    if table.row_key:
        order = ", ".join(q(c) for c in table.row_key)
    else:
        order = ", ".join(f"{q(c)}::text" for c in table.copy_columns)
    filt = f" WHERE ({where})" if where else ""
    return (
        f"SELECT {cols} FROM ONLY {qn(table.namespace, table.name)}{filt} ORDER BY {order}"
    )


def _user_search_path(cur: Cursor) -> None:
    # A row predicate is written as the user would write it: unqualified names resolve
    # through the role's usual search_path, not the empty one definitions are read with.
    cur.execute("SELECT pg_catalog.set_config('search_path', "
                "(SELECT coalesce(current_setting('preimage.user_search_path', true), "
                "'\"$user\", public')), true)")


@dataclass
class _Counter:
    rows: int = 0

    def through(self, chunks: Iterable[Any]) -> Iterator[bytes]:
        for chunk in chunks:
            data = bytes(chunk)
            self.rows += data.count(b"\n")
            yield data


class _SplitSystem:
    """Splits each COPY line's trailing ``ctid`` and ``xmin`` off into a side file, so the
    rows blob holds only user data (and stays the same across captures)."""

    def __init__(self, side: IO[bytes]) -> None:
        self.side = side
        self.rows = 0
        self._rest = b""

    def through(self, chunks: Iterable[Any]) -> Iterator[bytes]:
        for chunk in chunks:
            data = self._rest + bytes(chunk)
            body, newline, self._rest = data.rpartition(b"\n")
            if not newline:
                continue
            user: list[bytes] = []
            system: list[bytes] = []
            for line in body.split(b"\n"):
                values, ctid, xmin = line.rsplit(b"\t", 2)
                user.append(values)
                system.append(ctid + b"\t" + xmin)
            self.rows += len(user)
            self.side.write(b"\n".join(system) + b"\n")
            yield b"\n".join(user) + b"\n"


def copy_out(cur: Cursor, table: PgTable, blobs: BlobStore, where: str | None) -> PgTable:
    """Stream the table's rows (those matching ``where``) into a blob; return the item with
    ``rows_digest`` and ``row_count`` set.

    Each row's ``ctid`` and ``xmin`` (server-class) go to a second blob, line for line,
    read in the same pass.
    """
    if not table.copy_columns:
        return table
    if where:
        _user_search_path(cur)
    system = table.relkind == "r"
    with tempfile.TemporaryFile() as side:
        if system:
            splitter = _SplitSystem(side)
            with cur.copy(f"COPY ({_select(table, where, system=True)}) TO STDOUT") as copy:
                digest = blobs.put_chunks(splitter.through(copy))
            rows = splitter.rows
            side.seek(0)
            system_digest: str | None = blobs.put_file(side)  # type: ignore[arg-type]
        else:
            counter = _Counter()
            with cur.copy(f"COPY ({_select(table, where)}) TO STDOUT") as copy:
                digest = blobs.put_chunks(counter.through(copy))
            rows, system_digest = counter.rows, None
    if where:
        cur.execute("SELECT pg_catalog.set_config('search_path', '', true)")
    return table.model_copy(update={
        "rows_digest": digest, "row_count": rows, "row_system_digest": system_digest,
    })


def live_digest(cur: Cursor, table: PgTable, where: str | None) -> tuple[str, int]:
    """Digest and count of the live rows, computed the way a capture would (nothing stored)."""
    hasher = hashlib.sha256()
    counter = _Counter()
    if where:
        _user_search_path(cur)
    with cur.copy(f"COPY ({_select(table, where)}) TO STDOUT") as copy:
        for data in counter.through(copy):
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
