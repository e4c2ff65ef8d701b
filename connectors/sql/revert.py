"""Undoing one call on a SQL database: rows by primary key and column.

Rows are the items an undo reverts one by one (a table without a primary key:
by their whole value and occurrence); a row both the call and a later writer
changed is merged column by column.  A table's row count and row digest are
derived from its rows (*soft*).  Tables, objects and counters are whole items.

The synthesized snapshot keeps each table whose rows are written with a rows
blob of its own — live's rows, the written ones replaced, removed or added —
and the restore, limited to exact row keys, updates, inserts and deletes
exactly those rows (never a whole table).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

from preimage.restoration.revert import Reverter, apply_writes, splice
from preimage.snapshot_schemas import Item, Snapshot
from preimage.snapshot_schemas.sql import TableRow

__all__ = ["RowsReverter", "SqlReverter", "row_writes_by_table"]

_SOFT_TABLE = frozenset({"row_count", "rows_digest", "row_system_digest"})


def row_writes_by_table(writes: dict[str, Item | None], rows_of: dict[str, list[TableRow]]
                        ) -> dict[str, dict[str, TableRow | None]]:
    """Row writes grouped by table name (``None``: remove the row)."""
    out: dict[str, dict[str, TableRow | None]] = {}
    for key, item in writes.items():
        if not key.startswith("kind=row|"):
            continue
        table = _table_of(key, item, rows_of)
        out.setdefault(table, {})[key] = item if isinstance(item, TableRow) else None
    return out


def _table_of(key: str, item: Item | None, rows_of: dict[str, list[TableRow]]) -> str:
    if isinstance(item, TableRow):
        return item.table
    for table, rows in rows_of.items():
        if any(r.natural_key() == key for r in rows):
            return table
    return key.split("|table=", 1)[1].split("|row=", 1)[0]


class RowsReverter(Reverter):
    """Rows by primary key and column; tables, objects and counters as whole items.

    Subclasses say how a table's rows are read and written (:meth:`table_rows`,
    :meth:`with_rows`)."""

    write_soft_only: ClassVar[bool] = False

    def soft(self, item: Item, path: str) -> bool:
        return item.kind == "table" and path in _SOFT_TABLE

    def table_rows(self, snap: Snapshot, blobs: Any) -> dict[str, list[TableRow]]:
        """Every table's rows by table name, in storage order."""
        out: dict[str, list[TableRow]] = {}
        for item in snap.scoring_items(blobs):
            if isinstance(item, TableRow):
                out.setdefault(item.table, []).append(item)
        return out

    def with_rows(self, table: Any, rows: list[TableRow], blobs: Any) -> Any:
        """``table`` holding exactly ``rows`` (a new rows blob)."""
        raise NotImplementedError

    def table_name(self, table: Any) -> str:
        return str(table.name)

    def synthesize(self, live: Snapshot, base: Snapshot, writes: dict[str, Item | None],
                   blobs: Any) -> Snapshot:
        plain = {k: v for k, v in writes.items() if not k.startswith("kind=row|")}
        items = splice(live.items, base.items, plain)
        live_rows = self.table_rows(live, blobs)
        by_table = row_writes_by_table(writes, {**self.table_rows(base, blobs), **live_rows})
        if by_table:
            new_items = []
            for item in items:
                name = self.table_name(item) if item.kind == "table" else None
                if name in by_table and getattr(item, "exists", True):
                    rows = list(live_rows.get(name, []))  # type: ignore[arg-type]
                    if item is not next((i for i in live.items
                                         if i.natural_key() == item.natural_key()), None):
                        rows = self.table_rows(base, blobs).get(name, [])  # type: ignore[arg-type]
                    item = self.with_rows(item, apply_writes(rows, by_table[name]), blobs)  # type: ignore[index]
                new_items.append(item)
            items = new_items
        return live.model_copy(update={"items": items})


def json_lines(rows: Iterable[TableRow]) -> Iterator[bytes]:
    """Rows as the SQL connector's JSON lines (values as captured)."""
    for row in rows:
        yield (json.dumps(row.values, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


class SqlReverter(RowsReverter):
    """SQLite, MySQL/MariaDB and other SQLAlchemy databases."""

    def with_rows(self, table: Any, rows: list[TableRow], blobs: Any) -> Any:
        if getattr(table, "rows_format", "json") == "tuples":  # MySQL: the server's tuples
            from preimage.snapshot_schemas.sql import tuple_line

            lines = (tuple_line(r.values, table.copy_columns) for r in rows)
            digest = blobs.put_chunks(lines) if rows else None
            return table.model_copy(update={"rows_digest": digest, "row_count": len(rows)})
        digest = blobs.put_chunks(json_lines(rows)) if rows else None
        return table.model_copy(update={"rows_digest": digest, "row_count": len(rows)})


def keyed(rows: Iterable[dict[str, Any]], key_columns: list[str],
          row_key: Callable[[dict[str, Any], list[str], Counter[str]], str]
          ) -> dict[str, dict[str, Any]]:
    """Rows by their natural row key (as scoring spells it)."""
    seen: Counter[str] = Counter()
    return {row_key(r, key_columns, seen): r for r in rows}
