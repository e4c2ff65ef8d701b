"""postgres-mcp 0.3.0, from the registry (fixtures/mcp_packages.py), against the session's
PostgreSQL, through `preimage mcp-proxy` and through the Claude Code hook
(fixtures/mcp_clients.py), configured as its documentation says: `DATABASE_URI` in the
server's env.  The processes that back up hold no credential of their own."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp_clients import (
    PREIMAGE,
    ClaudeHook,
    backup_id,
    clean_env,
    context_of,
    note_of,
    restore,
    run_session,
)
from mcp_packages import PINNED, executable

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

assert PINNED["postgres-mcp"][2] == "0.3.0"   # the version these tests pin


def shop(pg: Any, name: str) -> None:
    pg.psql(f"CREATE DATABASE {name}")
    pg.psql("CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL, qty int);"
            "INSERT INTO orders (item, qty) VALUES ('apple', 1), ('pear', 2), ('fig', 3);",
            db=name)


def dump(pg: Any, name: str) -> str:
    """pg_dump's own text of the database (the oracle), less the lines about the dump
    itself (versions, and the \\restrict key pg_dump draws at random on each run)."""
    text = subprocess.run([pg.tool("pg_dump"), "--no-sync", "-d", name], capture_output=True,
                          text=True, env=pg.env(), check=True).stdout
    noise = ("-- Dumped from database version", "-- Dumped by pg_dump version",
             "\\restrict ", "\\unrestrict ")
    return "\n".join(line for line in text.splitlines() if not line.startswith(noise))


def test_postgres_mcp_through_proxy(pg_server: Any, tmp_path: Path) -> None:
    """Behind the proxy, DATABASE_URI in its env only: explain_query with analyze (which
    deletes) and DROP TABLE are backed up and restore pg_dump-identical; list_schemas takes
    no backup."""
    pg = pg_server
    shop(pg, "mcpproxyshop")
    env = {**clean_env(tmp_path), "DATABASE_URI": pg.uri("mcpproxyshop", password=True)}
    original = dump(pg, "mcpproxyshop")
    results = run_session(
        [PREIMAGE, "mcp-proxy", "--name", "db", "--", str(executable("postgres-mcp"))],
        env, tmp_path,
        [("explain_query", {"sql": "DELETE FROM orders WHERE qty > 1", "analyze": True}),
         ("execute_sql", {"sql": "DROP TABLE orders"}),
         ("list_schemas", {})])
    explain, drop, listing = (r for r, _ in results)
    assert "preimage backup" in note_of(explain), note_of(explain)
    assert pg.psql("SELECT to_regclass('orders')", db="mcpproxyshop").strip() == ""
    assert "preimage backup" not in note_of(listing)
    restore(env, backup_id(note_of(drop)), PGPASSWORD=pg.password)
    assert pg.psql("SELECT count(*) FROM orders", db="mcpproxyshop").strip() == "1"
    restore(env, backup_id(note_of(explain)), PGPASSWORD=pg.password)
    assert dump(pg, "mcpproxyshop") == original


def test_postgres_mcp_through_claude_hook(pg_server: Any, tmp_path: Path) -> None:
    """Defined in .mcp.json (DATABASE_URI in its env): the hook reads the server's database
    from that definition, backs up explain_query's analyze and a TRUNCATE … RESTART
    IDENTITY, not a plain explain, and each backup restores pg_dump-identical."""
    pg = pg_server
    shop(pg, "mcphookshop")
    project = tmp_path / "project"
    project.mkdir()
    uri = pg.uri("mcphookshop", password=True)
    server = [str(executable("postgres-mcp"))]
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"shop": {
        "command": server[0], "args": [], "env": {"DATABASE_URI": uri}}}}))
    env = clean_env(tmp_path)
    hook = ClaudeHook("shop", project, env)
    original = dump(pg, "mcphookshop")
    (_, analyzed), (_, plain) = run_session(
        server, {**env, "DATABASE_URI": uri}, project,
        [("explain_query", {"sql": "DELETE FROM orders", "analyze": True}),
         ("explain_query", {"sql": "SELECT * FROM orders"})], hook=hook)
    assert pg.psql("SELECT count(*) FROM orders", db="mcphookshop").strip() == "0"
    assert "preimage backup" not in context_of(plain)
    restore(env, backup_id(context_of(analyzed)), PGPASSWORD=pg.password)
    assert dump(pg, "mcphookshop") == original
    (_, truncated), = run_session(server, {**env, "DATABASE_URI": uri}, project,
                                  [("execute_sql", {"sql": "TRUNCATE orders RESTART IDENTITY"})],
                                  hook=hook)
    restore(env, backup_id(context_of(truncated)), PGPASSWORD=pg.password)
    assert dump(pg, "mcphookshop") == original


def test_postgres_mcp_argument_form_and_restricted_mode(pg_server: Any, tmp_path: Path) -> None:
    """The database URL as the server's argument is read too; under `--access-mode
    restricted` the server runs every statement read-only and rolled back, so a DELETE
    changes nothing and takes no backup."""
    pg = pg_server
    shop(pg, "mcpargshop")
    env = clean_env(tmp_path)
    uri = pg.uri("mcpargshop", password=True)
    original = dump(pg, "mcpargshop")
    (deleted, _), = run_session(
        [PREIMAGE, "mcp-proxy", "--name", "db", "--", str(executable("postgres-mcp")), uri],
        env, tmp_path, [("execute_sql", {"sql": "DELETE FROM orders WHERE item = 'fig'"})])
    assert pg.psql("SELECT count(*) FROM orders", db="mcpargshop").strip() == "2"
    restore(env, backup_id(note_of(deleted)), PGPASSWORD=pg.password)
    assert dump(pg, "mcpargshop") == original
    (refused, _), = run_session(
        [PREIMAGE, "mcp-proxy", "--name", "db", "--", str(executable("postgres-mcp")),
         "--access-mode", "restricted", uri],
        env, tmp_path, [("execute_sql", {"sql": "DELETE FROM orders"})])
    assert "preimage backup" not in note_of(refused)
    assert dump(pg, "mcpargshop") == original


@pytest.mark.harness
def test_postgres_mcp_in_claude_code(pg_server: Any, tmp_path: Path) -> None:
    """The real Claude Code, postgres-mcp in .mcp.json with DATABASE_URI in its env only:
    the model's `DROP TABLE` is backed up by the hook before the server runs it, the model
    is told the backup's ID, and `preimage restore` brings the database back
    pg_dump-identical."""
    from mcp_claude_code import claude_code_run

    pg = pg_server
    shop(pg, "mcpclaudeshop")
    original = dump(pg, "mcpclaudeshop")
    ran = claude_code_run(tmp_path, "shop", {
        "command": str(executable("postgres-mcp")), "args": [],
        "env": {"DATABASE_URI": pg.uri("mcpclaudeshop", password=True)}},
        [("execute_sql", {"sql": "DROP TABLE orders"})])
    assert pg.psql("SELECT to_regclass('orders')", db="mcpclaudeshop").strip() == "", \
        ran.route.tool_results
    backup = ran.backup_of("execute_sql")
    assert ran.told(backup)
    ran.restore(backup["id"], PGPASSWORD=pg.password)
    assert dump(pg, "mcpclaudeshop") == original
