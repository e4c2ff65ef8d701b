"""SQLite: a database file in the sandbox, seeded with a SQL script.

``setup.sqlite`` is ``{path, sql}`` (or a list of them); the first path is
``{db}``.  MCP calls (``write_query``, ``execute_sql``, ``query`` — as the
SQLite MCP servers name them) run their ``query``/``sql`` argument on
``{db}`` with the standard library driver, as those servers do.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any, ClassVar

from preimage.bench.systems.base import CallOutcome, Sandbox, System
from preimage.interface.errors import UsageError

SQL_TOOLS = ("write_query", "execute_sql", "query", "execute", "read_query", "run_sql")


def sql_argument(server: str, tool: str, arguments: dict[str, Any]) -> str:
    """The SQL text of a database MCP tool call (``query`` or ``sql``)."""
    sql = arguments.get("query") or arguments.get("sql")
    if not isinstance(sql, str):
        raise UsageError(f"MCP {server}/{tool}: no 'query' or 'sql' argument")
    return sql


def execute_script(path: str, sql: str) -> None:
    """Run ``sql`` (several statements) on the SQLite file ``path`` and commit."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(sql)
        db.commit()


class SqliteSystem(System):
    """A SQLite database file next to the agent's workspace."""

    name: ClassVar[str] = "sqlite"
    schemes: ClassVar[tuple[str, ...]] = ("file", "sqlite")

    def seed_system(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """Create each database of ``setup.sqlite`` from its script."""
        raw = setup.get("sqlite")
        if raw is None:
            raise UsageError("a sqlite scenario needs setup.sqlite: {path, sql}")
        dbs = raw if isinstance(raw, list) else [raw]
        for i, spec in enumerate(dbs):
            if not isinstance(spec, dict) or "path" not in spec:
                raise UsageError("setup.sqlite entries need a path (and sql)")
            execute_script(spec["path"], spec.get("sql", ""))
            if i == 0:
                sandbox.variables["db"] = spec["path"]

    def run_mcp(
        self, server: str, tool: str, arguments: dict[str, Any], sandbox: Sandbox
    ) -> CallOutcome:
        """Execute the SQL of a SQLite MCP tool call on ``{db}``."""
        if tool not in SQL_TOOLS:
            return super().run_mcp(server, tool, arguments, sandbox)
        sql = sql_argument(server, tool, arguments)
        try:
            execute_script(arguments.get("db_path") or sandbox.variables["db"], sql)
        except sqlite3.Error as exc:
            return CallOutcome(1, str(exc))
        return CallOutcome(0)

    def mcp_servers(self, sandbox: Sandbox) -> dict[str, dict[str, Any]]:
        """The SQLite MCP server stands behind ``sqlite:///{db}``."""
        return {"sqlite": {"kind": "sqlite", "target": f"sqlite:///{sandbox.variables['db']}"}}
