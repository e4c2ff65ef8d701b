"""Each real agent harness, driven by a scripted model, with preimage installed as a user would.

The harness binaries come from the npm registry at pinned versions (fixtures/harnesses.py);
the model is a stdlib server on loopback (one for the session) that answers each turn
with the next scripted tool call and then "done".  The harness runs every tool itself,
in a sandbox home and project; preimage's hook was put there by ``preimage install``.

Three runs per harness, each asserted on by several tests:

* **work** (``install --user``): the model lists the project (read-only), deletes
  ``build/`` with the shell tool, overwrites ``notes.txt`` with the file tool, and
  deletes every row of a SQLite table through an MCP server that is named only in the
  harness's own settings (``shop``: nothing in its name says SQLite);
* **unprotected** (``install --user``, a second project in the same home, the store
  unwritable): the model is told the call is NOT backed up, and the hook read the
  second project's directory;
* **denied** (project install with ``--on-failure deny``, the store unwritable): the
  shell delete never runs and the model hears why.

Claude Code's work run bypasses permissions (an unattended run), so the call the layer
rewrites (``rm`` → ``preimage trash``) runs; one more run shows that in its default
mode the rewritten call waits for the user instead.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from harnesses import BIN, Run, Sandbox, backups, preimage
from model_server import Call, ModelServer, Route, Script

pytestmark = [pytest.mark.harness, pytest.mark.slow]

HARNESSES = ["claude-code", "codex", "gemini", "opencode"]
ROWS = [(1, "apple"), (2, "pear")]


# ------------------------------------------------------------------ each harness's own tool calls
def shell(harness: str, command: str) -> Call:
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
    return Call(name, args)


def edit(harness: str, path: Path, old: str, new: str) -> Call:
    """The harness's own file-editing tool call, replacing ``path``'s text ``old`` by ``new``."""
    if harness == "codex":
        patch = (f"*** Begin Patch\n*** Update File: {path.name}\n@@\n-{old.rstrip()}\n"
                 f"+{new.rstrip()}\n*** End Patch\n")
        return Call("apply_patch", kind="custom", freeform_input=patch)
    name, key = {"claude-code": ("Write", "file_path"), "gemini": ("write_file", "file_path"),
                 "opencode": ("write", "filePath")}[harness]
    return Call(name, {key: str(path), "content": new})


def mcp_delete(harness: str, server: str) -> list[Call]:
    """The MCP call ``write_query("DELETE FROM orders")`` as the harness's model makes it.

    Codex offers MCP tools only behind its ``tool_search`` tool: the model searches
    first, then calls the tool in the namespace the search returned.
    """
    args = {"query": "DELETE FROM orders"}
    if harness == "codex":
        return [Call("tool_search", {"query": f"{server} write query", "limit": 8},
                     kind="tool_search"),
                Call("write_query", args, namespace=f"mcp__{server}")]
    name = {"claude-code": f"mcp__{server}__write_query", "gemini": f"mcp_{server}_write_query",
            "opencode": f"{server}_write_query"}[harness]
    return [Call(name, args)]


# ------------------------------------------------------------------ one run
@dataclass
class Ran:
    """A finished harness run, its sandbox, its model route and its own store."""

    box: Sandbox
    route: Route
    run: Run
    env: dict[str, str]

    @property
    def db(self) -> Path:
        return self.box.project / "shop.db"

    def backups(self) -> list[dict[str, Any]]:
        """The backups taken for a tool call (a restore's own safety backup names none)."""
        return [b for b in backups(self.env) if b.get("tool_call")]

    def backup_of(self, tool: str, needle: str) -> dict[str, Any]:
        """The one backup whose call is ``tool`` with ``needle`` in its input."""
        found = [b for b in self.backups() if b["tool_call"]["tool"] == tool
                 and needle in json.dumps(b["tool_call"]["input"])]
        assert len(found) == 1, [b["tool_call"] for b in self.backups()]
        return found[0]

    def decisions(self) -> list[dict[str, Any]]:
        log = Path(self.env["PREIMAGE_LOG"])
        lines = log.read_text().splitlines() if log.exists() else []
        return [e for e in map(json.loads, lines) if e.get("event") == "decision"]


def rows(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as con:
        got = con.execute("SELECT id, item FROM orders ORDER BY id").fetchall()
    con.close()
    return got


def start(model: ModelServer, harness: str, root: Path, calls: list[Call], *,
          home: Path | None = None, unwritable_store: bool = False, user_scope: bool = False,
          on_failure: str | None = None, permission_mode: str | None = None,
          mcp: bool = False) -> Ran:
    """A sandbox with a project (build/, notes.txt, shop.db; with ``mcp``, MCP server `shop`
    in the harness's own settings), preimage installed, and the harness run once."""
    route = model.route(Script(calls))
    store = root / "preimage"
    env_extra = {"PREIMAGE_HOME": str(store / "store"),
                 "PREIMAGE_CONFIG_DIR": str(store / "config"),
                 "PREIMAGE_LOG": str(store / "hook.log")}
    if unwritable_store:
        blocker = root / "blocker"
        blocker.write_text("a file where the store's parent directory should be")
        env_extra["PREIMAGE_HOME"] = str(blocker / "store")
    box = Sandbox(harness, root, route.url, path_dirs=[BIN], home_dir=home, extra_env=env_extra,
                  permission_mode=permission_mode)
    (box.project / "build").mkdir()
    (box.project / "build" / "app.o").write_bytes(b"\x7fELF object code")
    (box.project / "notes.txt").write_text("hello\n")
    with sqlite3.connect(box.project / "shop.db") as con:
        con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
        con.executemany("INSERT INTO orders (item) VALUES (?)", [(i,) for _, i in ROWS])
    con.close()
    if mcp:
        box.add_mcp_server("shop", [str(Path(BIN) / "mcp-server-sqlite"),
                                    "--db-path", str(box.project / "shop.db")])
    env = box.env()
    options = (["--user"] if user_scope else []) + (
        [f"--on-failure={on_failure}"] if on_failure else [])
    preimage("install", harness, *options, env=env, cwd=box.project)
    run = box.run(label=root.name)
    assert run.returncode == 0, run.stderr[-3000:]
    return Ran(box, route, run, env)


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One home per harness, shared by its `work` and `unprotected` runs."""
    return {h: tmp_path_factory.mktemp(f"{h}-home") for h in HARNESSES}


@pytest.fixture(scope="module", params=HARNESSES)
def work(request: pytest.FixtureRequest, model: ModelServer, homes: dict[str, Path],
         tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """The `work` run: ls, rm -rf build, an edit of notes.txt, an MCP DELETE."""
    harness: str = request.param
    root = tmp_path_factory.mktemp(f"{harness}-work")
    project = root / "project"
    calls = [shell(harness, "ls -la"), shell(harness, "rm -rf build"),
             edit(harness, project / "notes.txt", "hello\n", "overwritten\n"),
             *mcp_delete(harness, "shop")]
    # Claude Code puts a rewritten call (rm → preimage trash) to the user unless the session
    # bypasses permissions, as an unattended run does (see the test of the asking path).
    mode = "bypassPermissions" if harness == "claude-code" else None
    return start(model, harness, root, calls, home=homes[harness], user_scope=True,
                 permission_mode=mode, mcp=True)


@pytest.fixture(scope="module", params=HARNESSES)
def unprotected(request: pytest.FixtureRequest, model: ModelServer, homes: dict[str, Path],
                tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """The `unprotected` run: rm -rf build in a second project of the same home, store broken."""
    harness: str = request.param
    root = tmp_path_factory.mktemp(f"{harness}-unprotected")
    return start(model, harness, root, [shell(harness, "rm -rf build")], home=homes[harness],
                 unwritable_store=True, user_scope=True)


@pytest.fixture(scope="module", params=HARNESSES)
def denied(request: pytest.FixtureRequest, model: ModelServer,
           tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """The `denied` run: rm -rf build, project install with --on-failure deny, store broken."""
    harness: str = request.param
    root = tmp_path_factory.mktemp(f"{harness}-denied")
    return start(model, harness, root, [shell(harness, "rm -rf build")],
                 unwritable_store=True, on_failure="deny")


# ------------------------------------------------------------------ the work run
def test_read_only_call_takes_no_backup(work: Ran) -> None:
    """`ls -la` runs through the hook, is read as read-only and leaves no backup."""
    assert "notes.txt" in work.route.tool_results[0]          # the harness ran it
    first = work.decisions()[0]                               # the hook decided on it
    assert first["tool"] == "Bash" and first["action"] == "pass"
    assert first["backup_id"] is None and first["targets"] == [] and not first["error"]
    assert not any("ls -la" in json.dumps(b["tool_call"]["input"]) for b in work.backups())


def test_shell_delete_is_backed_up_and_restored(work: Ran) -> None:
    """`rm -rf build` leaves a backup tied to the call; the model is told; restore brings it back.

    Where the harness runs the layer's rewrite (Claude Code: `rm` → `preimage trash`), the
    backup is the move into the store's trash, under the ID the hook's decision gave."""
    assert not (work.box.project / "build").exists()
    (backup,) = [b for b in work.backups() if "build" in json.dumps(b["tool_call"]["input"])]
    (decision,) = [d for d in work.decisions() if backup["id"] in json.dumps(d)]
    assert decision["harness"] == work.box.harness and decision["tool"] == "Bash"
    if backup["tool_call"]["tool"] != "trash":
        assert "rm -r" in backup["tool_call"]["input"]["command"]
        assert backup["tool_call"]["harness"] == work.box.harness
    assert backup["id"] in work.route.seen_after_tools()
    preimage("restore", backup["id"], env=work.env)
    assert (work.box.project / "build" / "app.o").read_bytes() == b"\x7fELF object code"


def test_file_edit_is_backed_up_and_restored(work: Ran) -> None:
    """The harness's own file tool is backed up before it writes; restore undoes the edit."""
    notes = work.box.project / "notes.txt"
    assert notes.read_text() == "overwritten\n"
    backup = next(b for b in work.backups() if "notes.txt" in json.dumps(b["tool_call"]["input"]))
    assert backup["tool_call"]["harness"] == work.box.harness
    assert backup["id"] in work.route.seen_after_tools()
    preimage("restore", backup["id"], env=work.env)
    assert notes.read_text() == "hello\n"


def test_mcp_delete_is_backed_up_and_restored(work: Ran) -> None:
    """A DELETE through MCP server `shop` — known only from the harness's own settings — is
    backed up as the table's rows; restore brings them back."""
    assert rows(work.db) == [], work.route.tool_results
    backup = work.backup_of("mcp__shop__write_query", "DELETE")
    assert backup["id"] in work.route.seen_after_tools()
    preimage("restore", backup["id"], env=work.env)
    assert rows(work.db) == ROWS


# ------------------------------------------------------------------ failures
def test_failed_backup_is_visible_never_silent(unprotected: Ran) -> None:
    """With an unwritable store the model is told the call is NOT backed up; the user-scope
    hook, in a home another project used first, read this project's directory."""
    assert "NOT back" in unprotected.route.seen_after_tools()
    (decision,) = unprotected.decisions()
    assert decision["error"].startswith((unprotected.box.project / "build").as_uri() + ":")


def test_failed_backup_with_deny_blocks_the_call(denied: Ran) -> None:
    """`install --on-failure deny`: an unwritable store stops the call; the model hears why."""
    assert (denied.box.project / "build" / "app.o").exists()
    assert "NOT backed up" in " ".join(denied.route.tool_results)


def test_claude_code_rewrite_follows_the_users_own_rules(
        model: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    """In Claude Code's default mode the rewritten `rm` carries no decision of preimage's:
    the user allowed Bash, so it runs as the original would have — into the trash, under
    the backup ID the model is told — and restore brings the tree back."""
    root = tmp_path_factory.mktemp("claude-code-default-mode")
    ran = start(model, "claude-code", root, [shell("claude-code", "rm -rf build")])
    assert not (ran.box.project / "build").exists()
    (backup,) = [b for b in ran.backups() if "build" in json.dumps(b["tool_call"]["input"])]
    assert backup["tool_call"]["tool"] == "trash"
    assert backup["id"] in ran.route.seen_after_tools()
    preimage("restore", backup["id"], env=ran.env)
    assert (ran.box.project / "build" / "app.o").read_bytes() == b"\x7fELF object code"
