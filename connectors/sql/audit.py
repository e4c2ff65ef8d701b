"""The completeness audit for SQLite: what ``sqlite_master`` holds that a capture left out.

The capture reads tables, indexes, views and triggers; anything else in the
schema table — a virtual table (FTS, R*Tree) and its shadow tables, whose
content lives in modules the connector does not model — is recorded as
uncaptured, as are tables and objects that were not read.  SQLite's own
``sqlite_*`` entries are the engine's.
"""

from __future__ import annotations

from typing import Any

from preimage.snapshot_schemas import Uncaptured
from preimage.snapshot_schemas.sql import SqlObject, SqlTable


def sqlite_audit(conn: Any, items: list[Any], tables: list[str] | None) -> list[Uncaptured]:
    """Entries of ``sqlite_master`` (for ``tables``, or all) that ``items`` do not hold."""
    have = {(i.kind, i.name) for i in items if isinstance(i, SqlTable | SqlObject)}
    out: list[Uncaptured] = []
    for typ, name, tbl, sql in conn.exec_driver_sql(
        "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master "
        "WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid"
    ):
        if tables is not None and tbl not in tables:
            continue
        if sql.upper().startswith("CREATE VIRTUAL TABLE"):
            out.append(Uncaptured(name=name, kind="virtual table", reason=(
                "virtual tables (and their shadow tables) are not captured")))
        elif typ == "index" and not sql:
            continue  # an automatic index of a UNIQUE/PRIMARY KEY constraint: part of the table
        elif (typ, name) not in have:
            out.append(Uncaptured(name=name, kind=typ, reason=f"the {typ} was not read"))
    return out
