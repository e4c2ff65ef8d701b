"""Harness adapters, install/uninstall and the Python API, without the harness binaries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harnesses import BIN

import preimage
from preimage.layer.config import LayerConfig
from preimage.layer.harnesses import get_harness
from preimage.layer.harnesses.hook import handle


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([os.path.join(BIN, "preimage"), *args], cwd=cwd, capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=120)


@pytest.mark.parametrize("harness", ["claude-code", "codex", "gemini", "opencode"])
def test_install_is_idempotent_and_names_no_machine_path(harness: str, home: Path,
                                                         tmp_path: Path) -> None:
    """Project install twice changes nothing the second time and writes only the bare name."""
    first = cli("install", harness, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    path = get_harness(harness).settings_path("project", tmp_path)
    text = path.read_text()
    assert "preimage" in text and sys.prefix not in text and BIN not in text
    second = cli("install", harness, cwd=tmp_path)
    assert "already installed" in second.stdout
    assert path.read_text() == text


@pytest.mark.parametrize(("harness", "variable", "where"), [
    ("gemini", "GEMINI_CLI_HOME", ".gemini/settings.json"),
    ("qwen", "QWEN_HOME", "settings.json")])
def test_user_install_follows_the_harness_own_home_variable(
        harness: str, variable: str, where: str, home: Path, tmp_path: Path) -> None:
    """`install --user` writes where the harness reads its user settings — its own home
    variable when set (`GEMINI_CLI_HOME`, `QWEN_HOME`), not `~` — and `--list` and
    `uninstall` find it there."""
    user, own = tmp_path / "user", tmp_path / "own"
    env = {"HOME": str(user), variable: str(own)}
    done = cli("install", harness, "--user", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert str(own / where) in done.stdout, done.stdout
    assert "preimage" in (own / where).read_text()
    assert not (user / f".{harness}").exists()
    listed = cli("install", "--list", cwd=tmp_path, env=env).stdout
    assert str(own / where) in listed, listed
    assert cli("uninstall", harness, "--user", cwd=tmp_path, env=env).returncode == 0
    assert not (own / where).exists()   # install made it: uninstall gives back no file


def test_install_keeps_other_hooks_and_uninstall_removes_only_ours(home: Path,
                                                                    tmp_path: Path) -> None:
    """Other hooks and keys survive install and uninstall; uninstall gives the file back
    byte for byte."""
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    mine = {"matcher": "write_file", "hooks": [{"type": "command", "command": "my-linter"}]}
    original = {"model": {"name": "x"}, "hooks": {"BeforeTool": [mine]}}
    settings.write_text(json.dumps(original))
    assert cli("install", "gemini", cwd=tmp_path).returncode == 0
    data = json.loads(settings.read_text())
    assert data["hooks"]["BeforeTool"][0] == mine and data["model"] == {"name": "x"}
    assert any("preimage hook gemini" in h["command"] for g in data["hooks"]["AfterTool"]
               for h in g["hooks"])
    assert cli("uninstall", "gemini", cwd=tmp_path).returncode == 0
    assert settings.read_text() == json.dumps(original)     # byte for byte, not re-formatted


def test_dry_run_shows_the_diff_and_writes_nothing(home: Path, tmp_path: Path) -> None:
    """`install --dry-run` prints the change and leaves no file behind."""
    proc = cli("install", "claude-code", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0
    assert "+++" in proc.stdout and "preimage hook claude-code" in proc.stdout
    assert not (tmp_path / ".claude").exists()


def test_install_list_shows_every_harness_and_status(home: Path, tmp_path: Path) -> None:
    """`install --list` names all four harnesses with their status per scope."""
    cli("install", "codex", cwd=tmp_path)
    out = cli("install", "--list", cwd=tmp_path, env={"HOME": str(tmp_path / "h")}).stdout
    for name in ("claude-code", "codex", "gemini", "opencode"):
        assert name in out
    codex_project = next(line for line in out.splitlines()
                         if line.startswith("codex") and " project " in line)
    assert " installed" in codex_project and "not installed" not in codex_project


def test_uninstall_leaves_the_project_as_before_install(home: Path, tmp_path: Path) -> None:
    """Install then uninstall of every harness leaves no file and no folder behind."""
    project = tmp_path / "project"   # apart from the test's store and config directory
    project.mkdir()
    assert cli("install", "--all", cwd=project).returncode == 0
    assert (project / ".opencode" / "plugin" / "preimage.js").exists()
    assert cli("uninstall", "--all", cwd=project).returncode == 0
    assert sorted(p.name for p in project.iterdir()) == []


def test_list_shows_baked_options_and_a_hook_that_cannot_run(home: Path, tmp_path: Path) -> None:
    """`--list` names the options in the hook and says when its preimage is not on PATH."""
    cli("install", "gemini", "--on-failure", "deny", cwd=tmp_path)
    with_path = cli("install", "--list", cwd=tmp_path,
                    env={"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"})
    row = next(r for r in with_path.stdout.splitlines() if r.startswith("gemini") and "project" in r)
    assert "installed (--on-failure deny)" in row and "cannot run" not in row
    without = cli("install", "--list", cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    row = next(r for r in without.stdout.splitlines() if r.startswith("gemini") and "project" in r)
    assert "cannot run: preimage" in row and "pipx" in without.stderr


def test_install_refuses_invalid_settings(home: Path, tmp_path: Path) -> None:
    """A settings file that is not JSON is left untouched, with a one-line error."""
    settings = tmp_path / ".codex" / "hooks.json"
    settings.parent.mkdir()
    settings.write_text("{ not json")
    proc = cli("install", "codex", cwd=tmp_path)
    assert proc.returncode == 2 and "not valid JSON" in proc.stderr
    assert settings.read_text() == "{ not json"


def _payload(**kw: object) -> str:
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": "/",
                       "session_id": "s", "tool_use_id": "t", **kw})


def test_codex_never_answers_what_it_rejects(home: Path, tmp_path: Path) -> None:
    """Codex gets no bare allow and no ask: a failed backup under ask becomes deny."""
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    (tmp_path / "build").mkdir()
    os.environ["PREIMAGE_HOME"] = str(blocker / "store")
    try:
        out = json.loads(handle("codex", ["--on-failure", "ask", "--approve"], _payload(
            tool_input={"command": "rm -r build"}, cwd=str(tmp_path))).stdout)
    finally:
        os.environ["PREIMAGE_HOME"] = str(home)
    specific = out["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "NOT backed up" in specific["permissionDecisionReason"]


def test_gemini_and_opencode_calls_read_as_neutral_tool_calls(tmp_path: Path) -> None:
    """write_file/replace/run_shell_command and OpenCode's tools map to Write/Edit/Bash/mcp__."""
    gemini = get_harness("gemini")
    call = gemini.event({"hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
                         "tool_input": {"command": "make", "dir_path": "sub"},
                         "cwd": str(tmp_path)}).call
    assert call is not None and call.tool == "Bash" and call.workdir == str(tmp_path / "sub")
    (tmp_path / "opencode.json").write_text('{// comment\n "mcp": {"pg-main": {"type": "local"},}}')
    opencode = get_harness("opencode")
    for tool, args, expected in [
        ("edit", {"filePath": "a.py", "oldString": "x", "newString": "y"}, "Edit"),
        ("write", {"filePath": "a.py", "content": "y"}, "Write"),
        ("pg-main_execute_sql", {"sql": "DROP TABLE t"}, "mcp__pg-main__execute_sql"),
    ]:
        got = opencode.event({"hook_event_name": "tool.execute.before", "tool": tool,
                              "tool_input": args, "cwd": str(tmp_path)}).call
        assert got is not None and got.tool == expected
        if expected in ("Edit", "Write"):
            assert got.input["file_path"] == "a.py"


def test_protect_backs_up_before_the_body_and_records_after(home: Path, tmp_path: Path) -> None:
    """`with preimage.protect(call)`: the backup exists before the body runs; restore undoes it."""
    target = tmp_path / "notes.txt"
    target.write_text("hello\n")
    call = preimage.ToolCall("Write", {"file_path": str(target), "content": "x"}, str(tmp_path))
    with preimage.protect(call) as guard:
        assert guard.backup_id is not None
        target.write_text("x")
    assert guard.completion is not None and guard.completion.status == "ok"
    preimage.restore(guard.backup_id)
    assert target.read_text() == "hello\n"


def test_protected_decorator_refuses_when_backup_fails_under_deny(tmp_path: Path,
                                                                   home: Path) -> None:
    """A decorated tool whose backup fails does not run under on_failure: deny."""
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    os.environ["PREIMAGE_HOME"] = str(blocker / "store")
    ran: list[str] = []

    @preimage.protected("Write", config=LayerConfig(on_failure="deny"))
    def write(file_path: str, content: str) -> None:
        ran.append(file_path)

    try:
        with pytest.raises(preimage.UnprotectedCallError):
            write(str(tmp_path / "a.txt"), "x")
    finally:
        os.environ["PREIMAGE_HOME"] = str(home)
    assert ran == []


def _codex_home(tmp_path: Path, config: str, **profiles: str) -> dict[str, str]:
    home = tmp_path / "codex-home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(config)
    for name, text in profiles.items():
        (home / f"{name}.config.toml").write_text(text)
    return {"CODEX_HOME": str(home), "HOME": str(tmp_path)}


@pytest.mark.parametrize(("argv", "config", "expected"), [
    (["exec", "go"], 'sandbox_mode = "danger-full-access"\n', "danger-full-access"),
    (["exec", "go"], 'sandbox_mode = "workspace-write"\n', "workspace-write"),
    (["exec", "go"], "", None),                                       # Codex's default: sandboxed
    (["exec", "--sandbox", "workspace-write", "go"], 'sandbox_mode = "danger-full-access"\n',
     "workspace-write"),
    (["exec", "-s=danger-full-access", "go"], "", "danger-full-access"),
    (["exec", "--dangerously-bypass-approvals-and-sandbox", "go"], "", "danger-full-access"),
    (["exec", "--approve-for-me", "go"], 'sandbox_mode = "danger-full-access"\n',
     "workspace-write"),
    (["exec", "-c", 'sandbox_mode="read-only"', "go"], 'sandbox_mode = "danger-full-access"\n',
     "read-only"),
    (["exec", "--ignore-user-config", "go"], 'sandbox_mode = "danger-full-access"\n', None),
    (["exec", "--remote", "ws://x", "go"], 'sandbox_mode = "danger-full-access"\n', "unknown"),
    (["exec", "-p", "ci", "go"], 'sandbox_mode = "workspace-write"\n', "danger-full-access"),
    (["exec", "go"], 'profile = "ci"\nsandbox_mode = "workspace-write"\n', "danger-full-access"),
    (["exec", "go"], 'profile = "old"\n[profiles.old]\nsandbox_mode = "danger-full-access"\n',
     "danger-full-access"),
])
def test_codex_sandbox_is_read_from_its_command_line_and_config(
        tmp_path: Path, argv: list[str], config: str, expected: str | None) -> None:
    """Which sandbox Codex runs commands in, as the hook reads it: the command line wins,
    then the profile, then the user's config.toml; unset means Codex's own (sandboxed)."""
    from preimage.layer.harnesses.codex import sandbox_of

    env = _codex_home(tmp_path, config, ci='sandbox_mode = "danger-full-access"\n')
    assert sandbox_of(argv, env, str(tmp_path)) == expected


def test_codex_project_config_can_only_sandbox(tmp_path: Path) -> None:
    """A project's .codex/config.toml that sandboxes wins over a user's full access (whether
    Codex trusts the project is not visible to the hook, so it can only make it safer)."""
    from preimage.layer.harnesses.codex import sandbox_of

    env = _codex_home(tmp_path, 'sandbox_mode = "danger-full-access"\n')
    project = tmp_path / "p" / "sub"
    project.mkdir(parents=True)
    (tmp_path / "p" / ".codex").mkdir()
    (tmp_path / "p" / ".codex" / "config.toml").write_text('sandbox_mode = "workspace-write"\n')
    assert sandbox_of(["exec", "go"], env, str(project)) == "workspace-write"


def test_codex_rm_is_captured_when_the_hook_cannot_see_codex(home: Path, tmp_path: Path) -> None:
    """A Codex hook whose process has no Codex among its ancestors (here: the test itself)
    cannot tell the sandbox, so `rm` is not rewritten — the tree is copied first, and the
    model is told why."""
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "a.o").write_bytes(b"x")
    text = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "rm -r build"}, "cwd": str(tmp_path),
                       "session_id": "s", "tool_use_id": "c1"})
    answer = json.loads(handle("codex", [], text).stdout)
    specific = answer["hookSpecificOutput"]
    assert "updatedInput" not in specific and "preimage backup " in specific["additionalContext"]
    assert "Codex's sandbox mode cannot be told" in specific["additionalContext"]


def test_opencode_plugin_is_told_when_a_call_has_nothing_after(home: Path,
                                                               tmp_path: Path) -> None:
    """A read-only call leaves no note, so the pre-call answer tells the plugin to skip the
    post-call event (``"after": false``: no process, no round trip); a call that took a
    backup does not, and its post-call event finds the note and names the backup."""
    (tmp_path / "notes.txt").write_text("keep\n")

    def before(command: str, call: str) -> dict[str, object]:
        text = json.dumps({"hook_event_name": "tool.execute.before", "tool": "bash",
                           "session_id": "s", "tool_use_id": call, "cwd": str(tmp_path),
                           "tool_input": {"command": command}})
        return dict(json.loads(handle("opencode", [], text).stdout))

    assert before("ls -la", "c1") == {"after": False}
    protected = before("echo changed > notes.txt", "c2")
    assert "after" not in protected and "preimage backup " in str(protected.get("note"))
    after = json.dumps({"hook_event_name": "tool.execute.after", "tool": "bash",
                        "session_id": "s", "tool_use_id": "c2", "cwd": str(tmp_path),
                        "tool_input": {"command": "echo changed > notes.txt"},
                        "tool_response": {"output": ""}})
    assert "preimage backup " in json.loads(handle("opencode", [], after).stdout).get("note", "")
