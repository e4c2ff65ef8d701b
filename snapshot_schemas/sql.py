"""Snapshot schema of the SQLAlchemy connector (v3): SQLite, MySQL/MariaDB, any dialect.

One :class:`SqlTable` per table (absent tables included when the target names
them), its rows in a blob, and for SQLite the exact DDL of every object from
``sqlite_master``.  What is kept, by class:

* content  — columns (name, type), row values (one :class:`TableRow` per row when
  scored), view definitions;
* metadata — nullability, defaults, autoincrement, primary/foreign/unique/check
  constraints, indexes, triggers, the exact DDL, ``sqlite_sequence`` counters
  (the next AUTOINCREMENT id), ``PRAGMA user_version`` and ``application_id``;
* server   — SQLite's ``rowid`` of a table without a declared key is not kept at all
  (rows are matched by value), so nothing here is server-class.

Version 3 keeps MySQL/MariaDB rows as the SQL value tuples the server renders
(``rows_format="tuples"``, one per line) and adds the row scope (``scope="rows"``,
the table's ``row_filter``).  Version 2 adds MySQL/MariaDB objects kept verbatim
from ``SHOW CREATE …`` (views, triggers, procedures, functions, events and the
database itself with its character set and collation); rows are kept in storage
order (a plain scan: InnoDB's clustered order, SQLite's rowid order).  Older
documents load unchanged.  Version 4 adds ``oracle``: MySQL/MariaDB's own dump of the
schema beside the capture (:mod:`preimage.snapshot_schemas.oracle`), and MySQL/MariaDB
grants per user on the database and its objects (:class:`SqlGrant`).
"""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
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
from preimage.snapshot_schemas.oracle import SchemaOracle


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
    rows_digest: str | None = content(None, description="sha256 of the rows blob",
                                     derived=True)
    rows_format: Literal["json", "tuples"] = metadata(
        "json", description="JSON lines, or (MySQL) one SQL value tuple per line")
    copy_columns: list[str] = content(
        default_factory=list, description="columns of a tuples blob, in order")
    row_filter: str | None = content(None, description="row scope: the normalised predicate")


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


class SqlGrant(Item):
    """MySQL/MariaDB: one grantee's privileges on the database or one of its objects."""

    kind: Literal["grant"] = key("grant")
    grantee: str = key(description="'user'@'host', as the server names it")
    on: str = key(description="database | table T | column T.C | procedure P | function F")
    privileges: list[str] = metadata(
        default_factory=list, unordered=True,
        description="privilege types (GRANT OPTION when it may pass them on)")

    def label(self) -> str:
        """``grant 'app'@'%' on table orders``."""
        return f"grant {self.grantee} on {self.on}"


SqlItem = Annotated[SqlTable | SqlObject | SqlCounter | SqlGrant, Field(discriminator="kind")]


@register_snapshot_type
class SqlSnapshot(Snapshot):
    """Tables (and for SQLite, every schema object) of one database."""

    schema_name: ClassVar[str] = "sql"
    schema_version: int = 4
    connector: str = "sqlalchemy"
    dialect: str
    database_exists: bool = True
    scope: Literal["database", "tables", "rows"] = "database"
    items: list[SqlItem] = Field(default_factory=list)
    oracle: SchemaOracle | None = Field(
        None, description="MySQL/MariaDB: the dump tool's --no-data output, normalized "
        "(None: SQLite, a row scope, or an older capture)",
    )

    def scoring_items(self, blobs: Any | None = None) -> Iterator[Item]:
        """The tables and objects, then every row of every table (read from ``blobs``)."""
        yield from self.items
        if blobs is None:
            return
        for table in self.items:
            if not isinstance(table, SqlTable) or table.rows_digest is None:
                continue
            seen: Counter[str] = Counter()
            if table.rows_format == "tuples":
                for values in iter_tuple_rows(blobs.chunks(table.rows_digest),
                                              table.copy_columns):
                    yield TableRow(table=table.name, values=values,
                                   row=row_key(values, table.primary_key, seen))
                continue
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


@register_migration("sql", 3)
def _v3_to_v4(document: dict[str, Any]) -> dict[str, Any]:
    """v4 adds the schema oracle's record (MySQL/MariaDB), ``None`` for older captures."""
    return {**document, "schema_version": 4}


@register_migration("sql", 2)
def _v2_to_v3(document: dict[str, Any]) -> dict[str, Any]:
    """v3 adds MySQL's tuple-lines rows and the row scope, with defaults."""
    return {**document, "schema_version": 3}


@register_migration("sql", 1)
def _v1_to_v2(document: dict[str, Any]) -> dict[str, Any]:
    """v2 only widens the object kinds."""
    return {**document, "schema_version": 2}


_VALUE = re.compile(rb"NULL|'((?:[^'\\]|\\.)*)'", re.S)
_ESCAPES = {b"0": b"\x00", b"Z": b"\x1a", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b"}


def _unescape(raw: bytes) -> bytes:
    return re.sub(rb"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), raw, flags=re.S)


def _text(value: bytes) -> Any:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"$bytes": base64.b64encode(value).decode()}


def iter_tuple_rows(chunks: Iterable[bytes], columns: list[str]) -> Iterator[dict[str, Any]]:
    """Rows of a tuple-lines blob as ``{column: text, {"$bytes": …} or None}`` (scoring)."""
    rest = b""
    for chunk in chunks:
        lines = (rest + bytes(chunk)).split(b"\n")
        rest = lines.pop()
        for line in lines:
            yield _row(line, columns)
    if rest:
        yield _row(rest, columns)


def tuple_raw(value: Any) -> bytes | None:
    """A tuple row's value (text, ``{"$bytes": …}`` or ``None``) as the column's bytes."""
    if value is None:
        return None
    if isinstance(value, dict):
        return base64.b64decode(value["$bytes"])
    return str(value).encode("utf-8")


_QUOTED = {b"\\": b"\\\\", b"'": b"\\'", b"\x00": b"\\0", b"\x1a": b"\\Z", b"\n": b"\\n"}


def tuple_line(values: dict[str, Any], columns: list[str]) -> bytes:
    """One line of a tuple-lines blob, as the server's ``QUOTE`` (with newlines as ``\\n``)
    renders it: the inverse of the rows :func:`iter_tuple_rows` yields."""
    parts = []
    for column in columns:
        raw = tuple_raw(values.get(column))
        parts.append(b"NULL" if raw is None else b"'" + re.sub(
            rb"[\\'\x00\x1a\n]", lambda m: _QUOTED[m.group(0)], raw) + b"'")
    return b"(" + b",".join(parts) + b")\n"


def _row(line: bytes, columns: list[str]) -> dict[str, Any]:
    values = [None if m.group(0) == b"NULL" else _text(_unescape(m.group(1)))
              for m in _VALUE.finditer(line[1:-1])]
    return dict(zip(columns, values, strict=False))
