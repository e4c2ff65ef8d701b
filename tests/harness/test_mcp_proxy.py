"""`preimage mcp-proxy` in front of real MCP servers (mcp-server-sqlite over stdio, the SDK's
FastMCP over streamable HTTP), driven by the MCP SDK's client."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, TypeVar

import pytest
from harnesses import BIN, backups, preimage
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_clients import run_apart

from preimage.layer.harnesses.mcp_proxy import http_client

pytestmark = pytest.mark.slow

T = TypeVar("T")


def shop(path: Path) -> Path:
    """A SQLite database with two orders."""
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
        con.executemany("INSERT INTO orders (item) VALUES (?)", [("apple",), ("pear",)])
    con.close()
    return path


def rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as con:
        got = con.execute("SELECT id, item FROM orders ORDER BY id").fetchall()
    con.close()
    return got


def call_through_proxy(db: Path, cwd: Path, calls: list[tuple[str, dict[str, Any]]],
                       *extra: str) -> list[Any]:
    """Start `preimage mcp-proxy -- mcp-server-sqlite`, make ``calls``, return the results."""
    params = StdioServerParameters(
        command=os.path.join(BIN, "preimage"),
        args=["mcp-proxy", "--name", "sqlite", *extra, "--",
              os.path.join(BIN, "mcp-server-sqlite"), "--db-path", str(db)],
        env=dict(os.environ), cwd=str(cwd))

    async def go() -> list[Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            assert "write_query" in names and "read_query" in names
            return [await session.call_tool(name, args) for name, args in calls]

    return run_apart(go)


def taken(env: dict[str, str]) -> list[dict[str, Any]]:
    """The backups taken before a call (the capture right after it, kind ``post-call``, is
    the other half of the same call, kept for undo)."""
    return [b for b in backups(env) if b["kind"] != "post-call"]


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def test_proxy_backs_up_before_forwarding_and_restore_brings_rows_back(
        home: Path, tmp_path: Path) -> None:
    """A DELETE through the proxy is backed up first, named in the result, and restorable."""
    db = shop(tmp_path / "shop.db")
    env = {**os.environ}
    (result,) = call_through_proxy(db, tmp_path, [("write_query",
                                                   {"query": "DELETE FROM orders"})])
    assert not result.isError, text(result)
    assert rows(db) == []
    (backup,) = taken(env)
    assert backup["tool_call"]["tool"] == "mcp__sqlite__write_query"
    assert backup["tool_call"]["harness"] == "mcp-proxy"
    assert backup["id"] in text(result)  # the model is told how to undo
    preimage("restore", backup["id"], env=env)
    assert rows(db) == [(1, "apple"), (2, "pear")]


def test_proxy_read_only_call_takes_no_backup(home: Path, tmp_path: Path) -> None:
    """A SELECT through the proxy is forwarded untouched and takes no backup."""
    db = shop(tmp_path / "shop.db")
    (result,) = call_through_proxy(db, tmp_path, [("read_query",
                                                   {"query": "SELECT * FROM orders"})])
    assert "apple" in text(result)
    assert backups({**os.environ}) == []


@pytest.mark.parametrize("options", [["--on-failure", "deny"], []], ids=["deny", "default"])
def test_proxy_refuses_when_backup_fails_and_told_to_deny(home: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          options: list[str]) -> None:
    """With an unwritable store, --on-failure deny — and the default, as `--help` says — the
    DELETE never reaches the server."""
    db = shop(tmp_path / "shop.db")
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    monkeypatch.setenv("PREIMAGE_HOME", str(blocker / "store"))
    (result,) = call_through_proxy(db, tmp_path, [("write_query",
                                                   {"query": "DELETE FROM orders"})],
                                   *options)
    assert result.isError and "NOT backed up" in text(result)
    assert rows(db) == [(1, "apple"), (2, "pear")]
    if not options:
        helptext = " ".join(preimage("mcp-proxy", "--help", env={**os.environ}).stdout.split())
        assert "(the default" in helptext and "refuse it" in helptext


def test_proxy_without_sdk_or_server_fails_in_one_line(home: Path, tmp_path: Path) -> None:
    """A server command that does not exist is one line on stderr, exit 2, no traceback."""
    proc = preimage("mcp-proxy", "--name", "x", "--", str(tmp_path / "no-such-server"),
                    check=False, env={**os.environ})
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.strip().count("\n") == 0


def _started(argv: list[str], stream: str, prefix: str, env: dict[str, str],
             cwd: Path) -> tuple[subprocess.Popen[str], str]:
    """Start ``argv`` and read lines of ``stream`` until one starts with ``prefix``: the URL."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=env, cwd=cwd)
    pipe = proc.stdout if stream == "stdout" else proc.stderr
    assert pipe is not None
    seen = []
    for line in pipe:
        seen.append(line)
        if line.startswith(prefix):
            return proc, line[len(prefix):].strip()
    proc.wait()
    raise AssertionError(f"{argv[0]} ended before serving: {''.join(seen)[-2000:]}")


def test_proxy_over_streamable_http_on_both_sides(home: Path, tmp_path: Path) -> None:
    """Upstream a streamable-HTTP MCP server (the SDK's FastMCP), downstream `--listen`: a
    DELETE is backed up before it is forwarded and restorable; a SELECT takes no backup; the
    note also reaches the result's structuredContent (which Claude Code shows alone)."""
    db = shop(tmp_path / "shop.db")
    config = Path(os.environ["PREIMAGE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    # A remote server's URL says nothing of its database: that is what config.yaml is for.
    (config / "config.yaml").write_text(f"mcp:\n  shop:\n    target: sqlite:///{db}\n")
    env = {**os.environ}
    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    upstream, up_url = _started([sys.executable, str(fixtures / "mcp_http_server.py"), str(db)],
                                "stdout", "http://", env, tmp_path)
    up_url = "http://" + up_url
    proxy = None
    try:
        proxy, url = _started([os.path.join(BIN, "preimage"), "mcp-proxy", "--name", "shop",
                               "--url", up_url, "--listen", "127.0.0.1:0"],
                              "stderr", "preimage mcp-proxy: serving ", env, tmp_path)

        async def go() -> list[Any]:
            async with http_client(url) as (read, write, _), \
                    ClientSession(read, write) as session:
                await session.initialize()
                names = [t.name for t in (await session.list_tools()).tools]
                assert names == ["read_query", "write_query"]
                return [await session.call_tool("read_query", {"query": "SELECT * FROM orders"}),
                        await session.call_tool("write_query", {"query": "DELETE FROM orders"})]

        selected, deleted = run_apart(go)
    finally:
        for p in (proxy, upstream):
            if p is not None:
                p.terminate()
                p.communicate(timeout=60)
    assert "apple" in text(selected) and not deleted.isError, text(deleted)
    assert rows(db) == []
    (backup,) = taken(env)
    assert backup["tool_call"]["tool"] == "mcp__shop__write_query"
    assert backup["id"] in text(deleted)
    assert deleted.structuredContent["affected_rows"] == 2
    assert backup["id"] in deleted.structuredContent["preimage"]
    preimage("restore", backup["id"], env=env)
    assert rows(db) == [(1, "apple"), (2, "pear")]
