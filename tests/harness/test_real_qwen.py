"""Qwen Code (a Gemini CLI fork with Claude Code's hook events), its real binary driven by the
scripted model, with preimage put there by ``preimage install --user`` as a user would.

Qwen Code ignores ``updatedInput`` from ``PreToolUse``, so its ``rm`` is not rewritten into
a trash move: the tree is copied before the call, and the backup ID reaches the model from
``PostToolUse``.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from harnesses import BIN, Sandbox, backups, preimage
from model_server import Call, ModelServer, Script

pytestmark = [pytest.mark.harness, pytest.mark.slow]


def _rows(db: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(db) as con:
        found = con.execute("SELECT id, item FROM orders ORDER BY id").fetchall()
    con.close()
    return found


def test_qwen_rm_rf_is_backed_up_restored_and_told(model: ModelServer, tmp_path: Path) -> None:
    """Qwen Code's `rm -rf build` is backed up before it runs, the model hears the backup ID,
    `preimage restore` brings the tree back byte for byte; a DELETE through MCP server
    `shop` — mcp-server-sqlite, named only in the project's `.qwen/settings.json` — is
    backed up as the table's rows and restored; its `write_file` over `notes.txt` (after
    the `read_file` it requires) and an `edit` of it are backed up and restored; uninstall removes only the
    hook."""
    calls = [Call("run_shell_command", {"command": "ls -la"}),
             Call("run_shell_command", {"command": "rm -rf build"}),
             Call("mcp__shop__write_query", {"query": "DELETE FROM orders"}),
             Call("read_file", {"file_path": "NOTES"}),   # it refuses a blind overwrite
             Call("write_file", {"file_path": "NOTES", "content": "agent\n"}),
             Call("edit", {"file_path": "NOTES", "old_string": "agent", "new_string": "edited"})]
    store = tmp_path / "preimage"
    notes = tmp_path / "project" / "notes.txt"
    for c in calls:
        c.arguments = {k: str(notes) if v == "NOTES" else v for k, v in c.arguments.items()}
    route = model.route(Script(calls))
    box = Sandbox("qwen", tmp_path, route.url, path_dirs=[BIN], extra_env={
        "PREIMAGE_HOME": str(store / "store"), "PREIMAGE_CONFIG_DIR": str(store / "config"),
        "PREIMAGE_LOG": str(store / "hook.log")})
    assert box.project == notes.parent
    notes.write_text("hello\n")
    build = box.project / "build"
    (build / "obj").mkdir(parents=True)
    (build / "obj" / "app.o").write_bytes(b"\x7fELF object code\x00\xff")
    (build / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(build / "run.sh", 0o750)
    db = box.project / "shop.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
        con.executemany("INSERT INTO orders (item) VALUES (?)", [("apple",), ("pear",)])
    con.close()
    box.add_mcp_server("shop", [str(Path(BIN) / "mcp-server-sqlite"), "--db-path", str(db)])
    env = box.env()
    settings = box.home / ".qwen" / "settings.json"
    before = json.loads(settings.read_text())
    preimage("install", "qwen", "--user", env=env, cwd=box.project)

    run = box.run(label="qwen-work")

    assert run.returncode == 0, run.stderr[-3000:]
    # the harness ran the `ls` (its output is not asserted: once in seven runs under load
    # Qwen Code reported this first command's output as "(empty)", exit code 0)
    assert "Command: ls -la" in route.tool_results[0] \
        and "Exit Code: 0" in route.tool_results[0], route.tool_results
    assert not build.exists()                               # and the `rm`
    assert _rows(db) == [], route.tool_results              # and the DELETE, through `shop`
    taken = [b for b in backups(env) if b.get("tool_call") and b["kind"] != "post-call"]
    (mcp,) = [b for b in taken if b["tool_call"]["tool"].startswith("mcp__")]
    assert mcp["targets"] == [f"sqlite:///{db}?tables=orders"], mcp
    assert mcp["id"] in route.seen_after_tools()
    preimage("restore", mcp["id"], env=env)
    assert _rows(db) == [(1, "apple"), (2, "pear")]
    assert notes.read_text() == "edited\n"                  # its write_file and edit ran
    (write,) = [b for b in taken if b["tool_call"]["tool"] == "Write"]   # its read_file none
    (edit,) = [b for b in taken if b["tool_call"]["tool"] == "Edit"]
    for made in (write, edit):
        assert f"file://{notes}" in made["targets"], made
        assert made["id"] in route.seen_after_tools()
    preimage("restore", edit["id"], env=env)
    assert notes.read_text() == "agent\n"
    preimage("restore", write["id"], env=env)
    assert notes.read_text() == "hello\n"
    (backup,) = [b for b in taken if b["id"] not in (mcp["id"], write["id"], edit["id"])]
    # (the `ls` took none)
    call = backup["tool_call"]
    assert call["harness"] == "qwen" and call["tool"] == "Bash"
    assert call["input"]["command"] == "rm -rf build"       # run as the model wrote it
    assert backup["id"] in route.seen_after_tools()         # the model was told
    preimage("restore", backup["id"], env=env)
    assert (build / "obj" / "app.o").read_bytes() == b"\x7fELF object code\x00\xff"
    assert (build / "run.sh").read_text() == "#!/bin/sh\necho run\n"
    assert (build / "run.sh").stat().st_mode & 0o777 == 0o750

    preimage("uninstall", "qwen", "--user", env=env, cwd=box.project)
    # Qwen Code rewrites its settings on start (it adds `$version`), so the file is not
    # byte-for-byte the one before install: only preimage's hooks are gone, the rest stays.
    after = json.loads(settings.read_text())
    assert "preimage" not in json.dumps(after)
    assert after["security"] == before["security"] and after["model"] == before["model"]
