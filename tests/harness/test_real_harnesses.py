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
* **unprotected** (``install --user --on-failure allow``, a second project in the same
  home, the store unwritable): the model is told the call is NOT backed up, and the hook
  read the second project's directory;
* **denied** (project install with ``--on-failure deny``, the store unwritable): the
  shell delete never runs and the model hears why.

Every harness runs the layer's rewrite of the plain ``rm`` (→ ``preimage trash``): the
tree is renamed into the store's trash.  Claude Code's work run bypasses permissions (an
unattended run); one more run shows its default mode leaves the rewritten call to the
user's own rules.  Codex gets the rewrite only outside its sandbox (one run inside it
keeps the copy), and one Codex run has every hook answered by ``preimage serve``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from harnesses import BIN, Run, Sandbox, backups, preimage
from model_server import Call, ModelServer, Route, Script
from services import running_services, service_status, stop_services, wait_for_service

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
        """The backups taken before a tool call (a restore's own safety backup names none;
        the capture right after a call, kind ``post-call``, names it too but is not one)."""
        return [b for b in backups(self.env) if b.get("tool_call") and b["kind"] != "post-call"]

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
          mcp: bool = False, service: bool = False, codex_sandbox: str | None = None,
          prepare: Callable[[Sandbox], None] | None = None) -> Ran:
    """A sandbox with a project (build/, notes.txt, shop.db; with ``mcp``, MCP server `shop`
    in the harness's own settings), preimage installed, and the harness run once.

    With ``service`` the hooks use the decision service (on a private runtime directory;
    the first hook starts it, the caller stops it); else every hook decides in its own
    process.  ``codex_sandbox`` replaces Codex's sandbox mode; ``prepare`` runs last
    before the harness does."""
    route = model.route(Script(calls))
    store = root / "preimage"
    env_extra = {"PREIMAGE_HOME": str(store / "store"),
                 "PREIMAGE_CONFIG_DIR": str(store / "config"),
                 "PREIMAGE_LOG": str(store / "hook.log")}
    if service:
        (root / "rt").mkdir(mode=0o700)
        env_extra |= {"PREIMAGE_SERVICE": "on", "PREIMAGE_RUNTIME_DIR": str(root / "rt")}
    if unwritable_store:
        blocker = root / "blocker"
        blocker.write_text("a file where the store's parent directory should be")
        env_extra["PREIMAGE_HOME"] = str(blocker / "store")
    box = Sandbox(harness, root, route.url, path_dirs=[BIN], home_dir=home, extra_env=env_extra,
                  permission_mode=permission_mode)
    if codex_sandbox:
        config = box.home / ".codex" / "config.toml"
        config.write_text(config.read_text().replace(
            'sandbox_mode = "danger-full-access"', f'sandbox_mode = "{codex_sandbox}"'))
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
    if prepare is not None:
        prepare(box)
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
    """The `unprotected` run: rm -rf build in a second project of the same home, store broken,
    installed with `--on-failure allow` (the default, `ask`, would stop the call)."""
    harness: str = request.param
    root = tmp_path_factory.mktemp(f"{harness}-unprotected")
    return start(model, harness, root, [shell(harness, "rm -rf build")], home=homes[harness],
                 unwritable_store=True, user_scope=True, on_failure="allow")


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
    assert first["model_tokens"] == 0          # a count, never masked as a secret
    assert not any("ls -la" in json.dumps(b["tool_call"]["input"]) for b in work.backups())


def test_shell_delete_is_backed_up_and_restored(work: Ran) -> None:
    """`rm -rf build` is rewritten into `preimage trash` and the harness runs the rewrite:
    the tree is renamed into the store's trash (no copy) under the ID the hook's decision
    gave, the backup names the agent's own call, the model is told, and restore brings
    the tree back."""
    assert not (work.box.project / "build").exists()
    (backup,) = [b for b in work.backups() if "build" in json.dumps(b["tool_call"]["input"])]
    (decision,) = [d for d in work.decisions() if backup["id"] in json.dumps(d)]
    assert decision["harness"] == work.box.harness and decision["tool"] == "Bash"
    assert decision["action"] == "rewrite" and decision["backup_id"] == backup["id"]
    assert " trash --home " + work.env["PREIMAGE_HOME"] + " " in \
        decision["updated_input"]["command"]
    assert backup["kind"] == "trash" and backup["stored_bytes"] == 0
    assert backup["trash"] == [{"target": (work.box.project / "build").as_uri(), "in_trash": True}]
    call = backup["tool_call"]
    assert call["tool"] == "Bash" and call["harness"] == work.box.harness
    assert "rm -r" in call["input"]["command"] and "trash" not in call["input"]["command"]
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


def test_every_call_finds_its_pre_call_note(work: Ran) -> None:
    """Each after-event found the note its pre-call hook left — the rewritten `rm` too,
    whose input the harness may report rewritten — so none is left in `pending/`."""
    pending = Path(work.env["PREIMAGE_LOG"]).parent / "pending"
    assert not pending.exists() or sorted(p.name for p in pending.iterdir()) == []


@pytest.mark.parametrize("harness", ["claude-code", "gemini"])
def test_one_call_one_undo(model: ModelServer, tmp_path_factory: pytest.TempPathFactory,
                           harness: str) -> None:
    """`rm notes.txt && echo agent > build/app.o` becomes a trash move plus the write, two
    backups of one call: `preimage undo` (Claude Code's run) or `restore` (Gemini CLI's) of
    the backup the model was told reverts the whole call — the deleted file is back, and
    so is the overwritten one."""
    root = tmp_path_factory.mktemp(f"{harness}-one-undo")
    mode = "bypassPermissions" if harness == "claude-code" else None
    ran = start(model, harness, root, [shell(harness, "rm notes.txt && echo agent > build/app.o")],
                permission_mode=mode)
    project = ran.box.project
    assert not (project / "notes.txt").exists()
    assert (project / "build" / "app.o").read_text() == "agent\n"
    (decision,) = ran.decisions()
    assert decision["action"] == "rewrite" and decision["backup_id"]
    assert decision["backup_id"] in ran.route.seen_after_tools()     # what the model was told
    kinds = sorted(b["kind"] for b in ran.backups())
    assert kinds == ["layer", "trash"]                               # one call, two backups
    preimage("undo" if harness == "claude-code" else "restore", decision["backup_id"],
             env=ran.env)
    assert (project / "notes.txt").read_text() == "hello\n"
    assert (project / "build" / "app.o").read_bytes() == b"\x7fELF object code"


def test_restored_directory_gives_its_parent_the_old_mtime(
        model: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    """After `rm -rf build` went to the trash and came back, the project directory has the
    mtime it had before the rm, not the time of the restore."""
    root = tmp_path_factory.mktemp("gemini-parent-mtime")
    old = 1_000_000_000_000_000_000   # 2001-09-09, in ns

    def age(box: Sandbox) -> None:
        os.utime(box.project, ns=(old, old))

    ran = start(model, "gemini", root, [shell("gemini", "rm -rf build")], user_scope=True,
                prepare=age)
    assert not (ran.box.project / "build").exists()
    assert ran.box.project.stat().st_mtime_ns != old            # the rm changed it
    (backup,) = [b for b in ran.backups() if b["kind"] == "trash"]
    preimage("restore", backup["id"], env=ran.env)
    assert (ran.box.project / "build" / "app.o").exists()
    assert ran.box.project.stat().st_mtime_ns == old


# ------------------------------------------------------------------ failures
def test_failed_backup_is_visible_never_silent(unprotected: Ran) -> None:
    """With an unwritable store the model is told the call is NOT backed up; the user-scope
    hook, in a home another project used first, read this project's directory."""
    assert "NOT back" in unprotected.route.seen_after_tools()
    (decision,) = unprotected.decisions()
    # the targets the capture would have held (the tree, and its parent's entry), then why
    assert decision["error"].startswith((unprotected.box.project / "build").as_uri())
    assert "unavailable" in decision["error"]


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
    assert backup["kind"] == "trash" and backup["tool_call"]["tool"] == "Bash"
    assert backup["tool_call"]["input"]["command"] == "rm -rf build"   # the model's own call
    assert backup["id"] in ran.route.seen_after_tools()
    preimage("restore", backup["id"], env=ran.env)
    assert (ran.box.project / "build" / "app.o").read_bytes() == b"\x7fELF object code"


# ------------------------------------------------------------------ Codex's sandbox, the service
def test_codex_in_its_sandbox_keeps_the_capture(
        model: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Codex runs commands in its sandbox unless told otherwise, and the sandbox cannot
    write to the store: with `sandbox_mode = "workspace-write"` the hook does not rewrite
    `rm` into `preimage trash` but copies the tree before the call, as for any harness
    that could not run the rewrite, and tells the model why."""
    root = tmp_path_factory.mktemp("codex-sandboxed")
    ran = start(model, "codex", root, [shell("codex", "rm -rf build")],
                codex_sandbox="workspace-write")
    (decision,) = ran.decisions()
    assert decision["action"] == "capture" and decision.get("updated_input") is None
    backup = ran.backup_of("Bash", "rm -r build")
    assert backup["kind"] == "layer" and backup["id"] == decision["backup_id"]
    # the tree, and the entry of its parent directory (whose mtime the rm changes)
    assert backup["targets"] == [(ran.box.project / "build").as_uri(),
                                 ran.box.project.as_uri() + "?depth=0"]
    assert "Codex runs it in its sandbox (sandbox_mode workspace-write)" in \
        ran.route.seen_after_tools()


def test_real_harness_through_the_decision_service(
        model: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Codex's hooks answered by `preimage serve`, as a user gets it: the first hook finds
    no service, decides in its own process and starts one (the user's one service).  In the next run
    every call reaches that service (none is decided in the hook process); the service
    reads Codex's settings through the hook process it serves, so `rm` is rewritten as
    outside it; the backups land in the store the hooks were given and restore; and no
    `preimage serve` is left running afterwards."""
    root = tmp_path_factory.mktemp("codex-service")
    project, runtime = root / "project", root / "rt"
    calls = [shell("codex", "ls -la"), shell("codex", "rm -rf build"),
             edit("codex", project / "notes.txt", "hello\n", "overwritten\n")]
    try:
        ran = start(model, "codex", root, calls, service=True)
        wait_for_service(runtime)                      # the one the first hook started
        shutil.rmtree(project / "build", ignore_errors=True)
        (project / "build").mkdir()
        (project / "build" / "app.o").write_bytes(b"\x7fELF object code")
        (project / "notes.txt").write_text("hello\n")
        log_path = Path(ran.env["PREIMAGE_LOG"])
        first = len(log_path.read_text().splitlines())
        before = service_status(runtime)
        second = ran.box.run(label="codex-service-again")
        assert second.returncode == 0, second.stderr[-3000:]
        after = service_status(runtime)
    finally:
        stop_services(runtime)
    assert running_services(runtime) == []
    assert before is not None and after is not None and before["pid"] == after["pid"]
    log = [json.loads(line) for line in log_path.read_text().splitlines()[first:]]
    assert [e for e in log if e.get("event") == "path"] == []   # no call decided in-process
    hooks = [e for e in log if e.get("event") in ("decision", "completed")]
    alone = [e for e in hooks if e.get("path") == "nothing after"]   # answered by the client
    served = after["served"]["hook"] - before["served"]["hook"]   # type: ignore[index]
    assert len(hooks) >= 6                          # three calls, each before and after
    assert served == len(hooks) - len(alone) and [e["tool"] for e in alone] == ["Bash"]
    (rm,) = [e for e in log if e.get("event") == "decision" and e.get("action") == "rewrite"]
    assert " trash --home " + ran.env["PREIMAGE_HOME"] + " " in rm["updated_input"]["command"]
    assert not (project / "build").exists()
    trash = next(b for b in ran.backups() if b["id"] == rm["backup_id"])
    assert trash["kind"] == "trash" and trash["tool_call"]["input"]["command"] == "rm -r build"
    (edit_id,) = [e["backup_id"] for e in log if e.get("event") == "decision"
                  and e.get("action") == "capture"]                 # the edit, before it ran
    preimage("restore", trash["id"], env=ran.env)
    preimage("restore", edit_id, env=ran.env)
    assert (project / "build" / "app.o").read_bytes() == b"\x7fELF object code"
    assert (project / "notes.txt").read_text() == "hello\n"


def test_gemini_sessions_share_one_decision_service(
        model: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each Gemini CLI run is a new session with its own `GEMINI_SESSION_ID` in the hook's
    environment: the second session's calls reach the service the first one started, and
    no second service is left running. The read-only call's after-event (Gemini CLI names
    no call, and the session left no pre-call note) is answered by the hook client alone."""
    root = tmp_path_factory.mktemp("gemini-service")
    runtime = root / "rt"
    try:
        ran = start(model, "gemini", root, [shell("gemini", "ls -la")], service=True)
        first = wait_for_service(runtime)
        log_path = Path(ran.env["PREIMAGE_LOG"])
        seen = len(log_path.read_text().splitlines())
        again = ran.box.run(label="gemini-service-again")
        assert again.returncode == 0, again.stderr[-3000:]
        after = service_status(runtime)
        services = running_services(runtime)
    finally:
        stop_services(runtime)
    assert after is not None and after["pid"] == first["pid"] and services == [first["pid"]]
    log = [json.loads(line) for line in log_path.read_text().splitlines()[seen:]]
    assert [e for e in log if e.get("event") == "path"] == []   # none decided in-process
    assert [e["tool"] for e in log if e.get("event") == "decision"] == ["Bash"]
    alone = [e for e in log if e.get("path") == "nothing after"]
    assert [e["tool"] for e in alone] == ["run_shell_command"]
    assert after["served"]["hook"] - first["served"]["hook"] == 1   # type: ignore[index]


@pytest.mark.parametrize("harness", ["opencode"])
def test_plugin_talks_to_the_service_itself(
        harness: str, model: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The OpenCode plugin (installed for the user: with the compiled client) asks that
    client once where the service listens and then sends each call to it itself: every call of the second run is served with the harness
    process itself at the other end of the socket (one peer, no process per call), and the
    backup of the protected call restores."""
    root = tmp_path_factory.mktemp(f"{harness}-direct")
    project, runtime = root / "project", root / "rt"
    calls = [shell(harness, "ls -la"), edit(harness, project / "notes.txt", "hello\n", "over\n")]
    try:
        ran = start(model, harness, root, calls, service=True, user_scope=True)
        wait_for_service(runtime)                      # the one the first call started
        (project / "notes.txt").write_text("hello\n")
        serve_log = runtime / "serve.log"
        seen = len(serve_log.read_text().splitlines())
        again = ran.box.run(label=f"{harness}-direct-again")
        assert again.returncode == 0, again.stderr[-3000:]
        served = [json.loads(line) for line in serve_log.read_text().splitlines()[seen:]]
    finally:
        stop_services(runtime)
    hooks = [e for e in served if e.get("event") == "hook"]
    assert len(hooks) == 3                             # ls before; the edit before and after
    assert all(e["result"] == "answered" for e in hooks), hooks
    assert len({e["peer_pid"] for e in hooks}) == 1, hooks
    assert (project / "notes.txt").read_text() == "over\n"
    log = [json.loads(line) for line in Path(ran.env["PREIMAGE_LOG"]).read_text().splitlines()]
    edit_id = [e["backup_id"] for e in log if e.get("event") == "decision"
               and e.get("action") == "capture"][-1]
    preimage("restore", edit_id, env=ran.env)
    assert (project / "notes.txt").read_text() == "hello\n"


@pytest.mark.parametrize("harness", ["gemini", "opencode"])
def test_a_harness_told_after_the_call_is_answered_first_and_told_the_undo(
        harness: str, model: ModelServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Gemini CLI and OpenCode tell the model after the call; served by the decision
    service (the second run: the first one's hook started it), that answer is given from
    the pre-call note before the capture after the call: the model is told the backup and
    `preimage undo ID` (OpenCode's plugin after the pre-call answer's note), the hook log
    says the capture came after the answer, and the undo reverts just that call (a later
    file is kept)."""
    root = tmp_path_factory.mktemp(f"{harness}-first")
    project, runtime = root / "project", root / "rt"
    calls = [edit(harness, project / "notes.txt", "hello\n", "over\n")]
    try:
        ran = start(model, harness, root, calls, service=True,
                    user_scope=harness == "opencode")
        wait_for_service(runtime)                      # the one the first call started
        (project / "notes.txt").write_text("hello\n")
        log_path = Path(ran.env["PREIMAGE_LOG"])
        seen = len(log_path.read_text().splitlines())
        told = len(ran.route.requests)
        again = ran.box.run(label=f"{harness}-first-again")
        assert again.returncode == 0, again.stderr[-3000:]
    finally:
        stop_services(runtime)
    assert (project / "notes.txt").read_text() == "over\n"
    (edit_id,) = [e["backup_id"] for e in map(json.loads, log_path.read_text().splitlines()[seen:])
                  if e.get("event") == "decision" and e.get("action") == "capture"]
    after = json.dumps([r["body"] for r in ran.route.requests[told:] if r["turn"] > 0])
    assert f"preimage backup {edit_id}" in after      # what the model was told
    assert f"`preimage undo {edit_id}`" in after
    (project / "later.txt").write_text("made after the call\n")
    preimage("undo", edit_id, env=ran.env)   # waits for the capture after the call, if running
    assert (project / "notes.txt").read_text() == "hello\n"
    assert (project / "later.txt").read_text() == "made after the call\n"
    (done,) = [e for e in map(json.loads, log_path.read_text().splitlines()[seen:])
               if e.get("event") == "completed" and e.get("backup_id") == edit_id]
    assert done["answered_first"] is True and done["post_backup_id"]
