"""Snapshot schema of the SQLAlchemy connector (v2): SQLite, MySQL/MariaDB, any dialect.

One :class:`SqlTable` per table (absent tables included when the target names
them), its rows in a blob as JSON lines, and for SQLite the exact DDL of every
object from ``sqlite_master``.  What is kept, by class:

* content  — columns (name, type), row values (one :class:`TableRow` per row when
  scored), view definitions;
* metadata — nullability, defaults, autoincrement, primary/foreign/unique/check
  constraints, indexes, triggers, the exact DDL, ``sqlite_sequence`` counters
  (the next AUTOINCREMENT id), ``PRAGMA user_version`` and ``application_id``;
Version 2 adds MySQL/MariaDB objects kept verbatim from ``SHOW CREATE …``
(views, triggers, procedures, functions, events and the database itself with
its character set and collation); rows are kept in storage order (a plain
scan: InnoDB's clustered order, SQLite's rowid order).  v1 documents load
unchanged.

* server   — SQLite's ``rowid`` of a table without a declared key is not kept at all
  (rows are matched by value), so nothing here is server-class.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from preimage.snapshot_schemas._base import (
    Item,
    Record,
    Snapshot,
    content,
    key,
    metadata,
    register_migration,
    register_snapshot_type,
)


class TableRow(Item):
    """One row of a table, as scored (never stored in the snapshot itself).

    ``row`` is the primary-key values as JSON, or — for a table without a
    primary key — the whole row's JSON plus its occurrence number, so that
    duplicate rows count separately.
    """

    kind: str = key("row")
    table: str = key()
    row: str = key()
    values: dict[str, Any] = content()


def row_key(values: dict[str, Any], key_columns: list[str], seen: Counter[str]) -> str:
    """The natural key of a row: its primary key, else its values and occurrence."""
    if key_columns:
        return json.dumps([values.get(c) for c in key_columns], default=str)
    whole = json.dumps(values, sort_keys=True, default=str)
    seen[whole] += 1
    return f"{whole}#{seen[whole]}"


class SqlColumn(Record):
    """A column as SQLAlchemy reflects it."""

    name: str = content()
    type: str = content()
    nullable: bool = metadata(True)
    default: str | None = metadata(None)
    autoincrement: bool = metadata(False)


class SqlTable(Item):
    """A table: definition, constraints, and a digest of its rows."""

    kind: Literal["table"] = key("table")
    name: str = key()
    exists: bool = content(True)
    columns: list[SqlColumn] = content(default_factory=list)
    primary_key: list[str] = metadata(default_factory=list)
    foreign_keys: list[str] = metadata(default_factory=list, unordered=True)
    unique_constraints: list[str] = metadata(default_factory=list, unordered=True)
    check_constraints: list[str] = metadata(default_factory=list, unordered=True)
    indexes: list[str] = metadata(default_factory=list, unordered=True)
    ddl: str | None = metadata(None, description="CREATE TABLE as the database keeps it (SQLite)")
    row_count: int = content(0, derived=True)
    rows_digest: str | None = content(
        None, description="sha256 of the rows as JSON lines", derived=True
    )


class SqlObject(Item):
    """Another schema object kept verbatim: an index, view or trigger (SQLite); a view,
    trigger, procedure, function or event (MySQL/MariaDB, ``SHOW CREATE …``); the
    database itself (MySQL/MariaDB, ``SHOW CREATE DATABASE``)."""

    kind: Literal["index", "view", "trigger", "procedure", "function", "event", "database"] = key()
    name: str = key()
    table: str = metadata()
    ddl: str = content()
    settings: dict[str, str] = metadata(
        default_factory=dict,
        description="MySQL: sql_mode, character_set_client, collation_connection (and an "
        "event's time_zone) it was created under",
    )


class SqlCounter(Item):
    """An autoincrement counter (``sqlite_sequence``) or a database pragma."""

    kind: Literal["counter", "pragma"] = key()
    name: str = key()
    value: int = metadata()


SqlItem = Annotated[SqlTable | SqlObject | SqlCounter, Field(discriminator="kind")]


@register_snapshot_type
class SqlSnapshot(Snapshot):
    """Tables (and for SQLite, every schema object) of one database."""

    schema_name: ClassVar[str] = "sql"
    schema_version: int = 2
    connector: str = "sqlalchemy"
    dialect: str
    database_exists: bool = True
    scope: Literal["database", "tables"] = "database"
    items: list[SqlItem] = Field(default_factory=list)

    def scoring_items(self, blobs: Any | None = None) -> Iterator[Item]:
        """The tables and objects, then every row of every table (read from ``blobs``)."""
        yield from self.items
        if blobs is None:
            return
        for table in self.items:
            if not isinstance(table, SqlTable) or table.rows_digest is None:
                continue
            seen: Counter[str] = Counter()
            buffer = b""
            for chunk in blobs.chunks(table.rows_digest):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    values = json.loads(line)
                    yield TableRow(
                        table=table.name,
                        row=row_key(values, table.primary_key, seen),
                        values=values,
                    )


@register_migration("sql", 1)
def _v1_to_v2(document: dict[str, Any]) -> dict[str, Any]:
    """v2 only widens the object kinds."""
    return {**document, "schema_version": 2}
