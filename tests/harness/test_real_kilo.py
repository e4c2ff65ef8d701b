"""Kilo Code CLI (an OpenCode fork loading the same plugins), its real binary driven by the
scripted model, with preimage put there by ``preimage install kilo`` as a user would.

Four runs: **work** (a project install: `ls -la`, `rm -rf build`, an overwrite of `notes.txt`
with Kilo's `write` tool, an `edit` of `README.md`, a `DELETE` through MCP server `shop` — mcp-server-sqlite, named only
in Kilo's own kilo.json — then `uninstall`) **unrunnable** (the plugin cannot start
`preimage`: Kilo must not run the `rm`) and **sandboxed** (Kilo's sandbox on, where the store
is read-only: the `rm` is copied first, not moved, and the model is told why) and **patch**
(the model named `gpt-5-scripted`, so Kilo offers `apply_patch`: one patch that updates,
adds and deletes a file).
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from harnesses import BIN, Run, Sandbox, backups, preimage
from model_server import Call, ModelServer, Route, Script

pytestmark = [pytest.mark.harness, pytest.mark.slow]


def shell(command: str) -> Call:
    """Kilo's own shell tool call (OpenCode's `bash`, which asks for a description)."""
    return Call("bash", {"command": command, "description": "scripted"})


def tree(folder: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under ``folder``: kind, mode, bytes and mtime (of files) by relative path."""
    out: dict[str, tuple[Any, ...]] = {}
    for path in sorted(folder.rglob("*")):
        st = path.lstat()
        key = str(path.relative_to(folder))
        if path.is_file():
            out[key] = ("file", st.st_mode & 0o7777, path.read_bytes(), st.st_mtime_ns)
        else:
            out[key] = ("dir", st.st_mode & 0o7777)
    return out


@dataclass
class Ran:
    """A finished Kilo run, its sandbox, its model route and its own store."""

    box: Sandbox
    route: Route
    run: Run
    env: dict[str, str]
    build_before: dict[str, tuple[Any, ...]]
    project_before: set[str]

    def backups(self) -> list[dict[str, Any]]:
        """The backups taken before a tool call."""
        return [b for b in backups(self.env) if b.get("tool_call") and b["kind"] != "post-call"]

    def decisions(self) -> list[dict[str, Any]]:
        log = Path(self.env["PREIMAGE_LOG"])
        lines = log.read_text().splitlines() if log.exists() else []
        return [e for e in map(json.loads, lines) if e.get("event") == "decision"]


ROWS = [(1, "apple"), (2, "pear")]


def rows(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as con:
        got = con.execute("SELECT id, item FROM orders ORDER BY id").fetchall()
    con.close()
    return got


def start(model: ModelServer, root: Path, calls: list[Call],
          extra: dict[str, str] | None = None, mcp: bool = False,
          settings: dict[str, Any] | None = None, model_id: str | None = None) -> Ran:
    """A project with `build/` and `notes.txt` (with ``mcp``, `shop.db` and MCP server `shop`
    in kilo.json; ``settings`` merged into kilo.json; ``model_id`` the scripted model's
    name), `preimage install kilo` there, one Kilo run."""
    route = model.route(Script(calls))
    store = root / "preimage"
    box = Sandbox("kilo", root, route.url, path_dirs=[BIN], extra_env={
        "PREIMAGE_HOME": str(store / "store"), "PREIMAGE_CONFIG_DIR": str(store / "config"),
        "PREIMAGE_LOG": str(store / "hook.log"), **(extra or {})})
    build = box.project / "build"
    (build / "obj").mkdir(parents=True)
    (build / "obj" / "app.o").write_bytes(b"\x7fELF object code\x00\xff")
    (build / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(build / "run.sh", 0o750)
    (box.project / "notes.txt").write_text("hello\n")
    (box.project / "README.md").write_text("# shop\nversion 1\n")
    if mcp:
        with sqlite3.connect(box.project / "shop.db") as con:
            con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
            con.executemany("INSERT INTO orders (id, item) VALUES (?, ?)", ROWS)
        con.close()
        box.add_mcp_server("shop", [str(Path(BIN) / "mcp-server-sqlite"),
                                    "--db-path", str(box.project / "shop.db")])
    if model_id:  # Kilo offers its tools by the model's name (apply_patch to GPT models)
        config = box.project / "kilo.json"
        doc = json.loads(config.read_text())
        doc["model"] = f"scripted/{model_id}"
        doc["provider"]["scripted"]["models"][model_id] = {"name": model_id, "tool_call": True}
        config.write_text(json.dumps(doc))
    if settings:
        config = box.project / "kilo.json"
        doc = json.loads(config.read_text())
        for key, value in settings.items():
            doc[key] = {**doc[key], **value} if isinstance(doc.get(key), dict) else value
        config.write_text(json.dumps(doc))
    before = tree(build)
    listing = {p.name for p in box.project.iterdir()}
    env = box.env()
    preimage("install", "kilo", env=env, cwd=box.project)
    assert (box.project / ".kilo" / "plugin" / "preimage.js").exists()
    run = box.run(label=root.name)
    assert run.returncode == 0, run.stderr[-3000:]
    return Ran(box, route, run, env, before, listing)


@pytest.fixture(scope="module")
def work(model: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """`ls -la`, `rm -rf build`, an overwrite of notes.txt, an edit of README.md and an MCP
    `DELETE`, in a project with preimage's plugin."""
    root = tmp_path_factory.mktemp("kilo-work")
    notes = root / "project" / "notes.txt"
    return start(model, root, [
        shell("ls -la"), shell("rm -rf build"),
        Call("write", {"filePath": str(notes), "content": "overwritten\n"}),
        Call("edit", {"filePath": str(notes.with_name("README.md")), "oldString": "version 1",
                      "newString": "version 2"}),
        Call("shop_write_query", {"query": "DELETE FROM orders"})], mcp=True)


def test_kilo_read_only_call_takes_no_backup(work: Ran) -> None:
    """Kilo's `ls -la` reaches preimage's plugin, is decided read-only and takes no backup."""
    assert "build" in work.route.tool_results[0]           # Kilo ran it
    first = work.decisions()[0]
    assert first["harness"] == "kilo" and first["tool"] == "Bash"
    assert first["action"] == "pass" and first["backup_id"] is None and not first["error"]
    assert not any("ls -la" in json.dumps(b["tool_call"]["input"]) for b in work.backups())


def test_kilo_rm_goes_to_the_trash_is_told_and_restored_exactly(work: Ran) -> None:
    """Kilo runs the rewrite of `rm -rf build` (a move into the store's trash, no copy), the
    model hears the backup ID, and restore brings the tree back exactly (bytes, modes, mtimes)."""
    build = work.box.project / "build"
    assert not build.exists()
    (backup,) = [b for b in work.backups() if "build" in json.dumps(b["tool_call"]["input"])]
    (decision,) = [d for d in work.decisions() if d.get("backup_id") == backup["id"]]
    assert decision["action"] == "rewrite"
    assert " trash --home " + work.env["PREIMAGE_HOME"] + " " in \
        decision["updated_input"]["command"]
    assert backup["kind"] == "trash" and backup["stored_bytes"] == 0
    assert backup["trash"] == [{"target": build.as_uri(), "in_trash": True}]
    call = backup["tool_call"]
    assert call["harness"] == "kilo" and call["input"]["command"] == "rm -rf build"
    assert backup["id"] in work.route.seen_after_tools()  # appended to the tool's output
    preimage("restore", backup["id"], env=work.env)
    assert tree(build) == work.build_before


def test_kilo_file_write_is_backed_up_and_restored(work: Ran) -> None:
    """Kilo's `write` over notes.txt is backed up first, the model is told, restore undoes it."""
    notes = work.box.project / "notes.txt"
    assert notes.read_text() == "overwritten\n"
    (backup,) = [b for b in work.backups() if b["tool_call"]["tool"] == "Write"]
    assert backup["id"] in work.route.seen_after_tools()
    preimage("restore", backup["id"], env=work.env)
    assert notes.read_text() == "hello\n"


def test_kilo_edit_is_backed_up_and_restored(work: Ran) -> None:
    """Kilo's `edit` of README.md is backed up first, the model is told, restore undoes it."""
    readme = work.box.project / "README.md"
    assert readme.read_text() == "# shop\nversion 2\n"
    (backup,) = [b for b in work.backups() if b["tool_call"]["tool"] == "Edit"]
    assert backup["id"] in work.route.seen_after_tools()
    preimage("restore", backup["id"], env=work.env)
    assert readme.read_text() == "# shop\nversion 1\n"


def test_kilo_mcp_delete_is_backed_up_and_restored(work: Ran) -> None:
    """`shop_write_query` (DELETE) is read as MCP server `shop` from Kilo's kilo.json, its
    SQLite file is backed up first, the model is told, and restore brings the rows back."""
    db = work.box.project / "shop.db"
    assert rows(db) == []
    (backup,) = [b for b in work.backups() if b["tool_call"]["tool"] == "mcp__shop__write_query"]
    assert backup["id"] in work.route.seen_after_tools()
    preimage("restore", backup["id"], env=work.env)
    assert rows(db) == ROWS


def test_kilo_install_list_and_uninstall_leave_the_project_as_it_was(work: Ran) -> None:
    """`install --list` says the plugin is installed; `uninstall` removes it and the `.kilo/`
    folder install made (with the .gitignore Kilo wrote there because it existed)."""
    listed = preimage("install", "--list", env=work.env, cwd=work.box.project).stdout
    (row,) = [line for line in listed.splitlines() if line.startswith("kilo") and "project" in line]
    assert " installed" in row and "cannot run" not in row
    assert (work.box.project / ".kilo" / ".gitignore").exists()    # Kilo's own, on its start
    preimage("uninstall", "kilo", env=work.env, cwd=work.box.project)
    assert {p.name for p in work.box.project.iterdir()} == work.project_before
    listed = preimage("install", "--list", env=work.env, cwd=work.box.project).stdout
    (row,) = [line for line in listed.splitlines() if line.startswith("kilo") and "project" in line]
    assert "not installed" in row


PATCH = """*** Begin Patch
*** Update File: README.md
@@
 # shop
-version 1
+version 3
*** Add File: added.txt
+added by the patch
*** Delete File: notes.txt
*** End Patch"""


@pytest.fixture(scope="module")
def patched(model: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """One `apply_patch` (the tool Kilo offers GPT models instead of `edit` and `write`:
    7.7.7 has no `multiedit` or `patch`) updating README.md, adding added.txt and deleting
    notes.txt."""
    root = tmp_path_factory.mktemp("kilo-patch")
    return start(model, root, [Call("apply_patch", {"patchText": PATCH})],
                 model_id="gpt-5-scripted")


def test_kilo_apply_patch_is_backed_up_and_restored(patched: Ran) -> None:
    """Kilo's `apply_patch` reaches the plugin as `apply_patch` with the patch's files: the
    three (and the folder's entry) are backed up before it runs, the model is told, and
    restore brings README.md and notes.txt back and takes added.txt away."""
    project = patched.box.project
    assert (project / "README.md").read_text() == "# shop\nversion 3\n"   # Kilo ran it
    assert not (project / "notes.txt").exists()
    assert (project / "added.txt").read_text() == "added by the patch\n"
    (decision,) = patched.decisions()
    assert decision["harness"] == "kilo" and decision["tool"] == "apply_patch"
    (backup,) = patched.backups()
    assert backup["id"] == decision["backup_id"]
    # the three files, and the project folder's own entry (adding and deleting change it)
    assert sorted(backup["targets"]) == sorted(
        [*((project / n).as_uri() for n in ("README.md", "added.txt", "notes.txt")),
         project.as_uri() + "?depth=0"])
    assert backup["id"] in patched.route.seen_after_tools()
    preimage("restore", backup["id"], env=patched.env)
    assert (project / "README.md").read_text() == "# shop\nversion 1\n"
    assert (project / "notes.txt").read_text() == "hello\n"
    assert not (project / "added.txt").exists()


def test_kilo_refuses_the_call_when_preimage_cannot_run(
        model: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    """When the plugin cannot start `preimage` (here: PREIMAGE_BIN names nothing), Kilo does
    not run the `rm` (the default `ask` refuses where Kilo cannot ask) and the model hears why."""
    root = tmp_path_factory.mktemp("kilo-unrunnable")
    ran = start(model, root, [shell("rm -rf build")],
                extra={"PREIMAGE_BIN": str(root / "missing" / "preimage")})
    assert tree(ran.box.project / "build") == ran.build_before
    told = ran.route.seen_after_tools()
    assert "NOT backed up" in told and "cannot run" in told
    assert ran.backups() == []


def test_kilo_in_its_sandbox_gets_the_copy_not_the_trash_move(
        model: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    """With Kilo's sandbox on (its shell commands see everything outside the project
    read-only, the store included), the `rm` is not rewritten into a trash move that could
    not write there: it runs as written, after the tree was copied, the model hears why, and
    restore brings it back exactly."""
    root = tmp_path_factory.mktemp("kilo-sandboxed")
    outside = root / "outside"
    outside.mkdir()
    ran = start(model, root, [shell(f"touch {outside}/probe"), shell("rm -rf build")],
                settings={"sandbox": {"enabled": True},
                          "permission": {"external_directory": "allow"}})
    assert "Read-only file system" in ran.route.tool_results[0]   # the sandbox is on
    build = ran.box.project / "build"
    assert not build.exists()
    (backup,) = [b for b in ran.backups() if "build" in json.dumps(b["tool_call"]["input"])]
    assert backup["kind"] != "trash" and backup["stored_bytes"] > 0
    assert backup["tool_call"]["input"]["command"] == "rm -rf build"
    told = ran.route.seen_after_tools()
    assert backup["id"] in told
    assert "not turned into a move into preimage's trash: Kilo may run it in its sandbox" in told
    preimage("restore", backup["id"], env=ran.env)
    assert tree(build) == ran.build_before
