"""Each real agent harness, driven by a scripted model, with preimage installed as a user would.

The harness binaries come from the npm registry at pinned versions (fixtures/harnesses.py);
the model is a stdlib server on loopback that answers the first request with one tool
call and the next with "done".  The harness runs the tool itself, in a sandbox home and
project; preimage's hook was put there by ``preimage install``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from harnesses import BIN, Sandbox, backups, preimage
from model_server import ModelServer, Script

pytestmark = [pytest.mark.harness, pytest.mark.slow]

Make = Callable[..., tuple[Sandbox, ModelServer]]
HARNESSES = ["claude-code", "codex", "gemini", "opencode"]


def shell(harness: str, command: str) -> Script:
    """The harness's own shell tool call for ``command``.

    Codex refuses ``rm -f``-style commands by its own rules (after the hook ran), so
    Codex is asked for ``rm -r`` instead.
    """
    if harness == "codex":
        command = command.replace("rm -rf", "rm -r")
    name, args = {
        "claude-code": ("Bash", {"command": command}),
        "codex": ("exec_command", {"cmd": command}),
        "gemini": ("run_shell_command", {"command": command}),
        "opencode": ("bash", {"command": command, "description": "scripted"}),
    }[harness]
    return Script(name, args)


def edit(harness: str, path: Path, old: str, new: str) -> Script:
    """The harness's own file-editing tool call, replacing ``path``'s text ``old`` by ``new``."""
    if harness == "codex":
        patch = (f"*** Begin Patch\n*** Update File: {path.name}\n@@\n-{old.rstrip()}\n"
                 f"+{new.rstrip()}\n*** End Patch\n")
        return Script("apply_patch", {}, freeform_input=patch)
    name, key = {"claude-code": ("Write", "file_path"), "gemini": ("write_file", "file_path"),
                 "opencode": ("write", "filePath")}[harness]
    return Script(name, {key: str(path), "content": new})


def setup(make: Make, harness: str, script: Script, opencode_home: Path,
          **install: str) -> tuple[Sandbox, ModelServer, dict[str, str]]:
    """A sandbox with a project holding build/ and notes.txt, and preimage installed."""
    box, server = make(harness, script, opencode_home if harness == "opencode" else None)
    (box.project / "build").mkdir()
    (box.project / "build" / "app.o").write_bytes(b"\x7fELF object code")
    (box.project / "notes.txt").write_text("hello\n")
    env = box.env()
    args = [f"--{k.replace('_', '-')}={v}" for k, v in install.items()]
    preimage("install", harness, *args, env=env, cwd=box.project)
    return box, server, env


def the_backup(env: dict[str, str]) -> dict[str, Any]:
    """The one backup the run took."""
    found = backups(env)
    assert len(found) == 1, [b["tool_call"] for b in found]
    return found[0]


def seen_by_model(server: ModelServer) -> str:
    """Everything the harness sent the model after the tool ran."""
    return json.dumps([r["body"] for r in server.requests[1:]])


@pytest.mark.parametrize("harness", HARNESSES)
def test_shell_delete_is_backed_up_and_restored(harness: str, sandbox: Make,
                                                opencode_home: Path) -> None:
    """`rm -rf build` run by the harness leaves a backup naming the call; restore brings build back."""
    box, server, env = setup(sandbox, harness, shell(harness, "rm -rf build"), opencode_home)
    run = box.run()
    assert run.returncode == 0, run.stderr[-3000:]
    assert server.tool_results, f"the harness never ran the tool: {run.stdout[-2000:]}"
    assert not (box.project / "build").exists()
    backup = the_backup(env)
    call = backup["tool_call"]
    assert call["harness"] == harness and call["tool"] == "Bash"
    assert "build" in call["input"]["command"] and "rm -r" in call["input"]["command"]
    assert backup["id"] in seen_by_model(server)  # the model was told the backup ID
    preimage("restore", backup["id"], env=env)
    assert (box.project / "build" / "app.o").read_bytes() == b"\x7fELF object code"


@pytest.mark.parametrize("harness", HARNESSES)
def test_file_edit_is_backed_up_and_restored(harness: str, sandbox: Make,
                                             opencode_home: Path) -> None:
    """The harness's own file-editing tool is backed up before it writes; restore undoes it."""
    box, server, _ = setup(sandbox, harness, Script("noop", {}), opencode_home)
    server.script = edit(harness, box.project / "notes.txt", "hello\n", "overwritten\n")
    env = box.env()
    run = box.run()
    assert run.returncode == 0, run.stderr[-3000:]
    assert (box.project / "notes.txt").read_text() == "overwritten\n", server.tool_results
    backup = the_backup(env)
    assert backup["tool_call"]["harness"] == harness
    assert "notes.txt" in json.dumps(backup["tool_call"]["input"])
    preimage("restore", backup["id"], env=env)
    assert (box.project / "notes.txt").read_text() == "hello\n"


@pytest.mark.parametrize("harness", HARNESSES)
def test_read_only_call_takes_no_backup(harness: str, sandbox: Make, opencode_home: Path) -> None:
    """`ls` runs through the hook and leaves no backup at all."""
    box, server, env = setup(sandbox, harness, shell(harness, "ls -la"), opencode_home)
    run = box.run()
    assert run.returncode == 0, run.stderr[-3000:]
    assert "notes.txt" in " ".join(server.tool_results)
    assert backups(env) == []
    log = Path(env["PREIMAGE_LOG"]).read_text()
    assert '"event": "decision"' in log and '"action": "pass"' in log  # the hook did run


@pytest.mark.parametrize("harness", HARNESSES)
def test_failed_backup_is_visible_never_silent(harness: str, sandbox: Make, opencode_home: Path,
                                               tmp_path: Path) -> None:
    """With an unwritable store the model is told the call is NOT backed up."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the store's parent directory should be")
    box, server, _ = setup(sandbox, harness, shell(harness, "rm -rf build"), opencode_home)
    box.extra_env["PREIMAGE_HOME"] = str(blocker / "store")
    run = box.run()
    assert run.returncode == 0, run.stderr[-3000:]
    assert "NOT back" in seen_by_model(server)


@pytest.mark.parametrize("harness", HARNESSES)
def test_failed_backup_with_deny_blocks_the_call(harness: str, sandbox: Make,
                                                 opencode_home: Path, tmp_path: Path) -> None:
    """`install --on-failure deny`: an unwritable store stops the call; the model hears why."""
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    box, server, _ = setup(sandbox, harness, shell(harness, "rm -rf build"), opencode_home,
                           on_failure="deny")
    box.extra_env["PREIMAGE_HOME"] = str(blocker / "store")
    run = box.run()
    assert run.returncode == 0, run.stderr[-3000:]
    assert (box.project / "build" / "app.o").exists()
    assert "NOT backed up" in " ".join(server.tool_results)


# Codex 0.171 offers MCP tools to gpt-5.5 only behind tool_search, which a one-step scripted
# model cannot use; Codex's MCP calls are covered by the MCP proxy (test_mcp_proxy.py).
@pytest.mark.parametrize("harness", ["claude-code", "gemini", "opencode"])
def test_mcp_delete_is_backed_up_and_restored(harness: str, sandbox: Make, opencode_home: Path,
                                              home: Path) -> None:
    """An MCP `write_query` DELETE through the harness is backed up; restore brings the rows back."""
    box, server, env = setup(sandbox, harness, Script("noop", {}), opencode_home)
    db = box.project / "shop.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
        con.executemany("INSERT INTO orders (item) VALUES (?)", [("apple",), ("pear",)])
    con.close()
    box.add_mcp_server("sqlite", [str(Path(BIN) / "mcp-server-sqlite"), "--db-path", str(db)])
    config = Path(env["PREIMAGE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text(
        f"mcp:\n  sqlite:\n    kind: sqlite\n    target: sqlite:///{db}\n")
    tool = {"claude-code": "mcp__sqlite__write_query", "codex": "mcp__sqlite__write_query",
            "gemini": "mcp_sqlite_write_query", "opencode": "sqlite_write_query"}[harness]
    server.script = Script(tool, {"query": "DELETE FROM orders"})
    run = box.run()
    assert run.returncode == 0, run.stderr[-3000:]
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM orders").fetchone() == (0,), server.tool_results
    con.close()
    backup = the_backup(env)
    assert backup["tool_call"]["tool"] == "mcp__sqlite__write_query"
    preimage("restore", backup["id"], env=env)
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT item FROM orders ORDER BY id").fetchall() == [("apple",),
                                                                                 ("pear",)]
    con.close()
