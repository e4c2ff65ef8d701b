"""MCP server definitions read from each harness's own settings, and what the layer makes of them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig
from preimage.layer.deciding.backup_layer import BackupLayer
from preimage.layer.mcp_servers import discover


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A home, a project inside nothing, and an environment naming only the home."""
    home, project = tmp_path / "home", tmp_path / "work" / "project"
    project.mkdir(parents=True)
    return home, project, {"HOME": str(home)}


def test_each_harness_file_is_read_into_one_shape(dirs: tuple[Path, Path, dict[str, str]]) -> None:
    """Claude Code, Codex, Gemini CLI and OpenCode definitions all read as command/args/env/url."""
    home, project, env = dirs
    env["PG_URL"] = "postgresql://app@127.0.0.1:5432/shop"
    write(project / ".mcp.json", json.dumps({"mcpServers": {
        "claude-db": {"command": "npx", "args": ["-y", "pg-mcp", "${PG_URL}"]}}}))
    write(home / ".codex" / "config.toml",
          '[mcp_servers.codex-db]\ncommand = "mcp-server-sqlite"\n'
          'args = ["--db-path", "shop.db"]\nenv = { MODE = "rw" }\n')
    write(home / ".gemini" / "settings.json", json.dumps({"mcpServers": {
        "gem-web": {"httpUrl": "http://127.0.0.1:9000/mcp"}}}))
    write(project / "opencode.jsonc", '{\n  // servers\n  "mcp": {"oc-db": {"type": "local",'
          ' "command": ["pg-mcp", "{env:PG_URL}"], "environment": {"A": "1"},},\n'
          '  "off": {"type": "local", "command": ["x"], "enabled": false}}}')
    found = discover(str(project), str(home), env=env)
    assert found["claude-db"]["args"] == ["-y", "pg-mcp", env["PG_URL"]]
    assert found["codex-db"]["command"] == "mcp-server-sqlite"
    assert found["codex-db"]["env"] == {"MODE": "rw"}
    assert found["gem-web"]["url"] == "http://127.0.0.1:9000/mcp"
    assert found["oc-db"]["command"] == "pg-mcp" and found["oc-db"]["args"] == [env["PG_URL"]]
    assert found["oc-db"]["harness"] == "opencode" and "off" not in found


def test_the_calling_harness_wins_and_an_unknown_caller_gets_no_guess(
        dirs: tuple[Path, Path, dict[str, str]]) -> None:
    """Two harnesses naming `db` differently: the caller's own definition, or none at all."""
    home, project, env = dirs
    write(project / ".mcp.json", json.dumps({"mcpServers": {
        "db": {"command": "mcp-server-sqlite", "args": ["--db-path", "a.db"]}}}))
    write(project / ".gemini" / "settings.json", json.dumps({"mcpServers": {
        "db": {"command": "mcp-server-sqlite", "args": ["--db-path", "b.db"]}}}))
    assert discover(str(project), str(home), harness="gemini", env=env)["db"]["args"][1] == "b.db"
    assert discover(str(project), str(home), harness="claude-code",
                    env=env)["db"]["args"][1] == "a.db"
    assert "db" not in discover(str(project), str(home), env=env)


def test_project_files_above_the_workspace_count(dirs: tuple[Path, Path, dict[str, str]]) -> None:
    """A `.codex/config.toml` in a folder above the call's directory is read (nearest wins)."""
    home, project, env = dirs
    write(project.parent / ".codex" / "config.toml",
          '[mcp_servers.db]\ncommand = "far"\n[mcp_servers.other]\ncommand = "x"\n')
    write(project / ".codex" / "config.toml", '[mcp_servers.db]\ncommand = "near"\n')
    found = discover(str(project / "sub"), str(home), harness="codex", env=env)
    assert found["db"]["command"] == "near" and found["other"]["command"] == "x"


def test_unreadable_files_are_skipped(dirs: tuple[Path, Path, dict[str, str]]) -> None:
    """Broken TOML or JSON in one file does not hide the others or raise."""
    home, project, env = dirs
    write(home / ".codex" / "config.toml", "[mcp_servers.db\n")
    write(home / ".gemini" / "settings.json", "{ nope")
    write(project / ".mcp.json", json.dumps({"mcpServers": {"ok": {"command": "x"}}}))
    assert list(discover(str(project), str(home), env=env)) == ["ok"]


def test_qwen_code_settings_are_read_in_its_order(dirs: tuple[Path, Path, dict[str, str]],
                                                  tmp_path: Path) -> None:
    """Qwen Code's system defaults, then `$QWEN_HOME`'s settings (not `~/.qwen`'s), the
    project's `.qwen/settings.json`, and the system settings, which win."""
    home, project, env = dirs
    defaults, system = tmp_path / "etc" / "system-defaults.json", tmp_path / "etc" / "settings.json"
    env |= {"QWEN_HOME": str(tmp_path / "qhome"), "QWEN_CODE_SYSTEM_SETTINGS_PATH": str(system),
            "DB": "from-env.db"}

    def server(command: str) -> dict[str, object]:
        return {"command": command, "args": ["--db-path", "${DB}"]}

    write(defaults, json.dumps({"mcpServers": {"a": server("defaults"), "b": server("defaults"),
                                               "c": server("defaults")}}))
    write(home / ".qwen" / "settings.json", json.dumps({"mcpServers": {"a": server("dot-qwen")}}))
    write(tmp_path / "qhome" / "settings.json", json.dumps({"mcpServers": {
        "b": server("user"), "c": server("user")}}))
    write(project / ".qwen" / "settings.json", "{\n // comment\n"
          + json.dumps({"mcpServers": {"c": server("project")}})[1:])
    write(system, json.dumps({"mcpServers": {"d": server("system")}}))
    found = discover(str(project), str(home), harness="qwen", env=env)
    assert {n: found[n]["command"] for n in "abcd"} == {
        "a": "defaults", "b": "user", "c": "project", "d": "system"}
    assert found["c"]["args"] == ["--db-path", "from-env.db"] and found["c"]["harness"] == "qwen"
    write(system, json.dumps({"mcpServers": {"c": server("system")}}))
    assert discover(str(project), str(home), harness="qwen", env=env)["c"]["command"] == "system"


def test_gemini_cli_home_and_system_settings_are_read(dirs: tuple[Path, Path, dict[str, str]],
                                                     tmp_path: Path) -> None:
    """Gemini CLI's user settings under `$GEMINI_CLI_HOME` (not `~`), and its system
    settings over the project's."""
    home, project, env = dirs
    system = tmp_path / "etc" / "settings.json"
    env |= {"GEMINI_CLI_HOME": str(tmp_path / "ghome"),
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(system)}
    write(home / ".gemini" / "settings.json", json.dumps({"mcpServers": {"a": {"command": "~"}}}))
    write(tmp_path / "ghome" / ".gemini" / "settings.json", json.dumps({"mcpServers": {
        "a": {"command": "gemini-home"}, "b": {"command": "gemini-home"}}}))
    write(project / ".gemini" / "settings.json", json.dumps({"mcpServers": {
        "b": {"command": "project"}}}))
    write(system, json.dumps({"mcpServers": {"b": {"command": "system"}}}))
    found = discover(str(project), str(home), harness="gemini", env=env)
    assert (found["a"]["command"], found["b"]["command"]) == ("gemini-home", "system")


def test_qwen_code_tool_names_are_mapped_back_to_the_server(
        dirs: tuple[Path, Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A server whose name Qwen Code had to change in its tools (`shop.db` →
    `mcp__shop_db__write_query_0911wmf`, the suffix its hash of the whole name) is the
    server of its settings again, with the tool's own name."""
    from preimage.layer.harnesses import get_harness

    home, project, _env = dirs
    monkeypatch.setenv("HOME", str(home))
    write(project / ".qwen" / "settings.json", json.dumps({"mcpServers": {
        "shop.db": {"command": "mcp-server-sqlite"}, "plain": {"command": "x"}}}))
    qwen = get_harness("qwen")

    def tool(name: str) -> str:
        return qwen.call({"tool_name": name, "tool_input": {}, "cwd": str(project),
                          "session_id": "s", "hook_event_name": "PreToolUse"}).tool

    assert tool("mcp__shop_db__write_query_0911wmf") == "mcp__shop.db__write_query"
    assert tool("mcp__shop_db__write_query_zzzzzzz") == "mcp__shop.db__write_query_zzzzzzz"
    assert tool("mcp__plain__read_query") == "mcp__plain__read_query"
    assert tool("mcp__other__x") == "mcp__other__x"


@pytest.mark.parametrize("harness", ["codex", "gemini", "qwen", "opencode"])
def test_layer_finds_the_database_from_the_harness_own_settings(
        harness: str, dirs: tuple[Path, Path, dict[str, str]], home: Path) -> None:
    """A DELETE through an MCP server named only in the harness's settings backs up its rows."""
    user_home, project, env = dirs
    db = project / "shop.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
        con.execute("INSERT INTO orders (item) VALUES ('apple')")
    con.close()
    argv = ["mcp-server-sqlite", "--db-path", str(db)]
    if harness == "codex":
        write(user_home / ".codex" / "config.toml",
              f"[mcp_servers.shop]\ncommand = {json.dumps(argv[0])}\n"
              f"args = {json.dumps(argv[1:])}\n")
    elif harness in ("gemini", "qwen"):
        write(project / f".{harness}" / "settings.json", json.dumps({"mcpServers": {"shop": {
            "command": argv[0], "args": argv[1:]}}}))
    else:
        write(project / "opencode.json", json.dumps({"mcp": {"shop": {
            "type": "local", "command": argv}}}))
    call = ToolCall("mcp__shop__write_query", {"query": "DELETE FROM orders"}, str(project),
                    harness=harness)
    layer = BackupLayer(config=LayerConfig(), env={**env, "PREIMAGE_HOME": str(home)})
    plan = layer.plan(call)
    # `shop` says nothing of SQLite: the kind and the file both come from the launch line.
    assert [t.uri for t in plan.targets] == [f"sqlite:///{db}?tables=orders"], plan.notes
