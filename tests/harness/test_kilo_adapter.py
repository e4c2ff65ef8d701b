"""Kilo Code CLI's adapter, without its binary: what preimage's plugin sends in, what it
obeys out, where install writes, and when Kilo's sandbox keeps the `rm` a copy."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from harnesses import BIN

from preimage.layer.harnesses import get_harness
from preimage.layer.harnesses.hook import handle
from preimage.layer.mcp_servers import server_names


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private HOME with Kilo's XDG folders under it (nothing of the real user's is read)."""
    folder = tmp_path / "h"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    for name, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_STATE_HOME", ".local/state")):
        monkeypatch.setenv(name, str(folder / sub))
    for name in ("KILO_CONFIG_DIR", "KILO_CONFIG", "KILO_CONFIG_CONTENT"):
        monkeypatch.delenv(name, raising=False)
    return folder


def _before(command: str, cwd: Path) -> str:
    return json.dumps({"hook_event_name": "tool.execute.before", "tool": "bash",
                       "session_id": "ses_1", "tool_use_id": "toolu_1", "cwd": str(cwd),
                       "tool_input": {"command": command, "description": "d"}})


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"   # apart from the test's store, on its filesystem
    (project / "build").mkdir(parents=True)
    (project / "build" / "a.o").write_bytes(b"object")
    return project


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([os.path.join(BIN, "preimage"), *args], cwd=cwd, text=True,
                          capture_output=True, timeout=120)


def test_kilo_tools_read_as_neutral_calls(user_home: Path, tmp_path: Path) -> None:
    """Kilo's `bash` (with a relative workdir), `write` (filePath) and an MCP tool of a
    server in its kilo.jsonc read as Bash, Write and mcp__shop__write_query."""
    kilo = get_harness("kilocode")
    call = kilo.event({"hook_event_name": "tool.execute.before", "tool": "bash",
                       "cwd": str(tmp_path), "tool_input": {"command": "make", "workdir": "sub"}}).call
    assert call is not None and call.tool == "Bash" and call.workdir == str(tmp_path / "sub")
    write = kilo.event({"hook_event_name": "tool.execute.before", "tool": "write",
                        "cwd": "/", "tool_input": {"filePath": "/p/a.py", "content": ""}}).call
    assert write is not None and write.tool == "Write" and write.input["file_path"] == "/p/a.py"
    (tmp_path / "kilo.jsonc").write_text(
        '{\n  // the shop\n  "mcp": {"shop": {"type": "local", "command": ["mcp-server-sqlite",'
        ' "--db-path", "shop.db"]}},\n}\n')
    assert server_names("kilo", str(tmp_path), str(user_home)) == ["shop"]
    mcp = kilo.event({"hook_event_name": "tool.execute.before", "tool": "shop_write_query",
                      "cwd": str(tmp_path), "tool_input": {"query": "DELETE FROM t"}}).call
    assert mcp is not None and mcp.tool == "mcp__shop__write_query"


def _notebook(tool: str, args: dict[str, object], cwd: Path) -> str:
    return json.dumps({"hook_event_name": "tool.execute.before", "tool": tool,
                       "session_id": "ses_1", "tool_use_id": "toolu_2", "cwd": str(cwd),
                       "tool_input": args})


def test_kilo_notebook_edit_backs_up_the_notebook_it_names(home: Path, user_home: Path,
                                                           tmp_path: Path) -> None:
    """Kilo's `notebook_edit` (its `path`, relative to the project) reads as NotebookEdit
    of that notebook, and the backup before the call holds that file, not the workspace."""
    project = _project(tmp_path)
    (project / "nb").mkdir()
    (project / "nb" / "a.ipynb").write_text('{"cells": [], "nbformat": 4}')
    args = {"path": "nb/a.ipynb", "action": "replace", "index": 0, "kind": "code",
            "source": "print(1)", "expected_revision": "r1"}
    call = get_harness("kilo").event(json.loads(_notebook("notebook_edit", args, project))).call
    assert call is not None and call.tool == "NotebookEdit"
    out = json.loads(handle("kilo", [], _notebook("notebook_edit", args, project)).stdout)
    assert "block" not in out
    assert "(pair tier)" in out["note"]
    assert (project / "nb" / "a.ipynb").as_uri() in out["note"]


def test_kilo_notebook_execute_is_not_taken_for_harmless(home: Path, user_home: Path,
                                                         tmp_path: Path) -> None:
    """Kilo's `notebook_execute` runs a cell in the user's kernel: no rule names what it
    changes, so the call is protected as an unknown one (the workspace backed up)."""
    project = _project(tmp_path)
    args = {"path": "nb/a.ipynb", "index": 0, "expected_revision": "r1"}
    out = json.loads(handle("kilo", [], _notebook("notebook_execute", args, project)).stdout)
    assert "block" not in out
    assert "(workspace tier)" in out.get("note", ""), out
    assert project.as_uri() in out["note"]


def test_kilo_rm_is_moved_to_the_trash_without_a_sandbox(home: Path, user_home: Path,
                                                          tmp_path: Path) -> None:
    """With nothing turning Kilo's sandbox on, the plugin gets `args` running
    `preimage trash` in place of the `rm`, and a note naming the backup."""
    out = json.loads(handle("kilo", [], _before("rm -rf build", _project(tmp_path))).stdout)
    assert " trash --home " in out["args"]["command"] and "preimage" in out["note"]


@pytest.mark.parametrize("where", ["project", "agent", "policy", "unparseable", "inline"])
def test_kilo_sandbox_keeps_the_copy(where: str, home: Path, user_home: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """When Kilo's sandbox may be on (its settings, an agent's, the per-session policy it
    keeps, a settings file that cannot be parsed, $KILO_CONFIG_CONTENT) the `rm` is not
    rewritten — the sandbox could not write to the store — the tree is copied first, and
    the note to the model says why."""
    project = _project(tmp_path)
    if where == "project":
        (project / "kilo.json").write_text('{"sandbox": {"enabled": true}}')
    elif where == "agent":
        (project / ".kilo").mkdir()
        (project / ".kilo" / "kilo.jsonc").write_text('{"agent": {"code": {"sandbox": true}}}')
    elif where == "policy":
        policy = user_home / ".local" / "state" / "kilo-sandbox-policy" / "abc"
        policy.mkdir(parents=True)
        (policy / "def.json").write_text('{"mode": "deny", "enabled": true}')
    elif where == "unparseable":
        (user_home / ".config" / "kilo").mkdir(parents=True)
        (user_home / ".config" / "kilo" / "kilo.jsonc").write_text('{"sandbox": {enabled: true}}')
    else:
        monkeypatch.setenv("KILO_CONFIG_CONTENT", '{"sandbox": {"enabled": true}}')
    out = json.loads(handle("kilo", [], _before("rm -rf build", project)).stdout)
    assert "args" not in out and "block" not in out
    assert "holds the state before this call: " + (project / "build").as_uri() in out["note"]
    # the model hears why its rm was copied, not moved into the trash
    assert "not turned into a move into preimage's trash: Kilo may run it in its sandbox (" \
        in out["note"]


def test_kilo_sandbox_turned_off_keeps_the_trash_move(home: Path, user_home: Path,
                                                      tmp_path: Path) -> None:
    """A sandbox entry that says off (and a policy file with `enabled: false`, which Kilo
    writes on every start) leaves the trash move."""
    project = _project(tmp_path)
    (project / "kilo.json").write_text('{"sandbox": {"enabled": false, "network": "deny"}}')
    policy = user_home / ".local" / "state" / "kilo-sandbox-policy" / "abc"
    policy.mkdir(parents=True)
    (policy / "def.json").write_text('{"mode": "deny", "enabled": false}')
    out = json.loads(handle("kilo", [], _before("rm -rf build", project)).stdout)
    assert " trash --home " in out["args"]["command"]


def test_kilo_install_beside_another_plugin_and_uninstall(home: Path, user_home: Path,
                                                          tmp_path: Path) -> None:
    """Install writes .kilo/plugin/preimage.js next to the user's own plugin, never over a
    file that is not preimage's; uninstall gives the user's .kilo/ back byte for byte (the
    .gitignore Kilo wrote there before install stays: install did not cause it)."""
    project = tmp_path / "project"
    plugins = project / ".kilo" / "plugin"
    plugins.mkdir(parents=True)
    (plugins / "mine.ts").write_text("export const Mine = async () => ({})\n")
    (project / ".kilo" / "kilo.jsonc").write_text('{\n  // mine\n  "model": "x/y",\n}\n')
    (project / ".kilo" / ".gitignore").write_text("node_modules\npackage.json\n.gitignore\n")
    before = {str(p.relative_to(project)): p.read_bytes() for p in project.rglob("*")
              if p.is_file()}
    assert cli("install", "kilo", cwd=project).returncode == 0
    text = (plugins / "preimage.js").read_text()
    assert "preimage for Kilo Code CLI" in text and '"hook", "kilo"' in text
    assert cli("uninstall", "kilo", cwd=project).returncode == 0
    after = {str(p.relative_to(project)): p.read_bytes() for p in project.rglob("*")
             if p.is_file()}
    assert after == before
    (plugins / "preimage.js").write_text("// someone else's\n")
    refused = cli("install", "kilo", cwd=project)
    assert refused.returncode == 2 and "not preimage's plugin" in refused.stderr
    assert (plugins / "preimage.js").read_text() == "// someone else's\n"


def test_kilo_uninstall_removes_what_kilo_put_in_the_folder_install_made(
        home: Path, user_home: Path, tmp_path: Path) -> None:
    """Kilo writes a .gitignore (and would install its plugin package) into a .kilo/ it
    finds: uninstall removes those from the .kilo/ that install created, and the folder."""
    project = tmp_path / "project"
    project.mkdir()
    assert cli("install", "kilo", cwd=project).returncode == 0
    folder = project / ".kilo"
    (folder / ".gitignore").write_text("node_modules\npackage.json\npackage-lock.json\n"
                                       "pnpm-lock.yaml\nbun.lock\nyarn.lock\n.gitignore\n"
                                       "agent-manager.json")
    (folder / "package.json").write_text('{"dependencies": {"@kilocode/plugin": "7.7.7"}}')
    assert cli("uninstall", "kilo", cwd=project).returncode == 0
    assert list(project.iterdir()) == []


def test_kilo_user_scope_follows_kilo_config_dir(home: Path, user_home: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`install kilo --user` writes where Kilo reads its global plugins: $KILO_CONFIG_DIR
    when set, else $XDG_CONFIG_HOME/kilo."""
    kilo = get_harness("kilo")
    assert kilo.settings_path("user", tmp_path) == (
        user_home / ".config" / "kilo" / "plugin" / "preimage.js")
    monkeypatch.setenv("KILO_CONFIG_DIR", str(tmp_path / "kc"))
    assert kilo.settings_path("user", tmp_path) == tmp_path / "kc" / "plugin" / "preimage.js"
