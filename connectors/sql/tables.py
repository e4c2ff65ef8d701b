"""Live tables through SQLAlchemy or the driver alone: their reflected definitions, and
captured rows written back into them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from preimage.connectors.sql import mysql, mysql_direct, mysql_rows
from preimage.connectors.sql.rows import batches, decode_rows
from preimage.interface.blobs import BlobStore
from preimage.snapshot_schemas.sql import SqlTable


def insert_rows(conn: Any, table: SqlTable, blobs: BlobStore, *,
                in_transaction: bool = False) -> int:
    """Insert the captured rows of ``table`` (MySQL/MariaDB: with LOAD DATA LOCAL where the
    server takes it, in one transaction, its own unless ``in_transaction``; else in
    batches); return how many."""
    if table.rows_digest is None:
        return 0
    if table.rows_format == "tuples":
        loaded = mysql_rows.load_lines(conn, table.name, table.copy_columns,
                                       blobs.chunks(table.rows_digest, path=table.name),
                                       table.row_count, in_transaction=in_transaction)
        if loaded is not None:
            return loaded
        return mysql_rows.write_lines(conn, table.name, table.copy_columns,
                                      blobs.chunks(table.rows_digest, path=table.name))

    live = reflect(conn, table.name)
    count = 0
    for batch in batches(decode_rows(blobs.chunks(table.rows_digest, path=table.name))):
        conn.execute(live.insert(), batch)
        count += len(batch)
    return count


def inspector(conn: Any) -> Any:
    """The connection's inspector: the driver-only one of :mod:`.mysql_direct`, else
    SQLAlchemy's (for MySQL/MariaDB with the names it reads corrected: :class:`_Unescaped`)."""
    direct = getattr(conn, "inspector", None)
    if isinstance(direct, mysql_direct.Inspector):
        return direct
    from sqlalchemy import inspect

    return _Unescaped(conn, inspect(conn)) if mysql.is_mysql(conn) else inspect(conn)


def reflect(conn: Any, name: str) -> Any:
    """SQLAlchemy's ``Table`` for the live table ``name`` (MySQL/MariaDB: its columns under
    their own names, see :class:`_Unescaped`)."""
    from sqlalchemy import MetaData, Table

    if not mysql.is_mysql(conn):
        return Table(name, MetaData(), autoload_with=conn, resolve_fks=False)
    with _quiet_parser():
        return Table(name, MetaData(), autoload_with=conn, resolve_fks=False,
                     listeners=[("column_reflect", _unescape_column)])


@contextlib.contextmanager
def _quiet_parser() -> Iterator[None]:
    """SQLAlchemy's MySQL parser warns of a ``SHOW CREATE TABLE`` line it cannot read (a
    foreign key whose names hold a backtick): the table's DDL is kept whole as the server
    prints it, and :class:`_Unescaped` reads foreign keys from ``information_schema``."""
    import warnings

    from sqlalchemy.exc import SAWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Unknown schema content", SAWarning)
        yield


def _unescape_column(_inspector: Any, _table: Any, column: dict[str, Any]) -> None:
    column["name"] = _unescaped(column["name"])


def _unescaped(name: Any) -> Any:
    return name.replace("``", "`") if isinstance(name, str) else name


class _Unescaped:
    """SQLAlchemy's MySQL inspector with names as the server spells them.  Its parser of
    ``SHOW CREATE TABLE`` keeps a name's doubled backticks doubled (a column `` `a``b` ``
    comes back as ``a``b``, and a query by that name finds no column), and skips a
    foreign key whose names hold one; :mod:`.mysql_direct` reads both right.  So names
    are corrected here, and foreign keys read from ``information_schema``."""

    _NAMES = ("name", "constrained_columns", "column_names")

    def __init__(self, conn: Any, inspector: Any) -> None:
        self._conn = conn
        self._inspector = inspector

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inspector, attr)

    def _fixed(self, found: dict[str, Any]) -> dict[str, Any]:
        return {k: ([_unescaped(n) for n in v] if isinstance(v, list) else _unescaped(v))
                if k in self._NAMES else v for k, v in found.items()}

    def _read(self, method: str, table: str) -> Any:
        with _quiet_parser():
            return getattr(self._inspector, method)(table)

    def get_columns(self, table: str) -> list[dict[str, Any]]:
        return [self._fixed(c) for c in self._read("get_columns", table)]

    def get_pk_constraint(self, table: str) -> dict[str, Any]:
        return self._fixed(self._read("get_pk_constraint", table))

    def get_unique_constraints(self, table: str) -> list[dict[str, Any]]:
        return [self._fixed(u) for u in self._read("get_unique_constraints", table)]

    def get_indexes(self, table: str) -> list[dict[str, Any]]:
        return [self._fixed(i) for i in self._read("get_indexes", table)]

    def get_check_constraints(self, table: str) -> list[dict[str, Any]]:
        return list(self._read("get_check_constraints", table))

    def get_foreign_keys(self, table: str) -> list[dict[str, Any]]:
        keys: dict[str, dict[str, Any]] = {}
        for name, column, referred, referred_column in self._conn.exec_driver_sql(
                _FOREIGN_KEYS, (table,)):
            key = keys.setdefault(str(name), {
                "name": str(name), "constrained_columns": [], "referred_table": str(referred),
                "referred_columns": []})
            key["constrained_columns"].append(str(column))
            key["referred_columns"].append(str(referred_column))
        return list(keys.values())


# A table's foreign keys, one row per column, in order.
_FOREIGN_KEYS = (
    "SELECT CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME "
    "FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = DATABASE() "
    "AND TABLE_NAME = %s AND REFERENCED_TABLE_NAME IS NOT NULL "
    "ORDER BY CONSTRAINT_NAME, ORDINAL_POSITION")
