"""File scenarios end to end: guard or hook → destructive call → `preimage restore ID` → score 1.0."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from layer_world import World

Cli = Callable[..., subprocess.CompletedProcess[str]]


def restore_and_score(cli: Cli, backup_id: str, env: dict[str, str]) -> dict[str, Any]:
    """Restore the backup through the CLI and return `preimage score --json`."""
    cli("restore", backup_id, env=env, check=True)
    proc = cli("score", backup_id, "--json", env=env, check=True)
    return dict(json.loads(proc.stdout))


def tree_state(root: Path) -> dict[str, tuple[int, int, bytes | str]]:
    """Mode, mtime and content (or link target) of every path under ``root``."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            body: bytes | str = os.readlink(p) if p.is_symlink() else (
                p.read_bytes() if p.is_file() else b"")
            out[str(p.relative_to(root))] = (st.st_mode, st.st_mtime_ns, body)
    return out


@pytest.mark.parametrize(("scenario", "command", "where", "gone"), [
    ("T-rm-home", "rm -rf ~/Documents ~/Downloads", "home", ["Documents", "Downloads"]),
    ("T-chmod-R", "chmod -R 777 tree", "proj", []),
    ("S-sqlite-file", "rm -f app.db && sqlite3 app.db < schema.sql", "proj", []),
    ("S-sqlite-rows", "sqlite3 app.db \"UPDATE t SET v = 'gone' WHERE id = 1\"", "proj", None),
    ("S-sqlite-drop", "sqlite3 app.db 'DROP TABLE t'", "proj", None),
])
def test_guard_backs_up_then_restore_brings_it_back(
    scenario: str, command: str, where: str, gone: list[str] | None, world: World, cli: Cli,
    home: Path,
) -> None:
    """`preimage guard` captures before running; restore by the printed ID scores 1.0."""
    cwd = world.home if where == "home" else world.proj
    env = {**world.env, "PREIMAGE_HOME": str(home)}
    before = tree_state(world.home)
    proc = cli("guard", "--", command, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    backup_id = proc.stdout.strip().splitlines()[0]
    assert backup_id in proc.stderr
    for name in gone or []:
        assert not (cwd / name).exists()
    assert tree_state(world.home) != before
    score = restore_and_score(cli, backup_id, env)
    assert score["content"] == 1.0 and score["metadata"] == 1.0, score["differences"]
    if gone is None:
        return  # rows restored through SQLite: the file's bytes need not be the same
    after = tree_state(world.home)
    changed = {k for k in before if before[k] != after.get(k)}
    # The directory holding a re-created file keeps its new mtime: it is not a target.
    assert changed <= {"proj"}, changed


def test_guard_one_call_one_undo_covers_what_only_supervision_saw(
        world: World, cli: Cli, home: Path) -> None:
    """`preimage guard` of a program the reader cannot follow (`python3 -c`) that writes
    outside the workspace and the home: only supervision sees that file change, yet `log`
    shows one call, and `undo` and `restore` of the ID guard printed each bring it back."""
    outside = world.home.parent / "outside"
    outside.mkdir()
    target = outside / "x"
    target.write_text("old\n")
    env = {**world.env, "PREIMAGE_HOME": str(home)}
    code = f"open({str(target)!r}, 'w').write('new\\n')"
    proc = cli("guard", "--", "python3", "-c", code, env=env, cwd=world.proj)
    assert proc.returncode == 0, proc.stderr
    backup_id = proc.stdout.strip().splitlines()[0]
    assert target.read_text() == "new\n"
    assert f"a part of this call's backup {backup_id}" in proc.stderr

    log = json.loads(cli("log", "--json", env=env, check=True).stdout)
    assert [e["backup"] for e in log] == [backup_id]
    assert str(target) in log[0]["delta"]
    undone = cli("undo", backup_id, env=env, check=True)
    assert target.read_text() == "old\n"
    assert "the paths the call was seen to change were reverted from backup" in undone.stdout

    target.write_text("changed by a person\n")
    cli("restore", backup_id, env=env, check=True)
    assert target.read_text() == "old\n"


def hook(cli: Cli, payload: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """Send one PreToolUse payload to `preimage hook claude-code`; return its JSON answer."""
    proc = cli("hook", "claude-code", input=json.dumps(payload), env=env)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def backup_id_of(answer: dict[str, Any]) -> str:
    """The backup ID named in the hook's additionalContext."""
    text = answer["hookSpecificOutput"]["additionalContext"]
    return text.split("preimage backup ", 1)[1].split()[0]


def test_hook_rm_sibling_then_restore(world: World, cli: Cli, home: Path) -> None:
    """T-rm-sibling: the hook backs up ~/proj before the mistyped rm; restore scores 1.0."""
    env = {**world.env, "PREIMAGE_HOME": str(home)}
    command = "rm -rf ~/proj/ web-crawler"
    answer = hook(cli, {"hook_event_name": "PreToolUse", "tool_name": "Bash",
                        "tool_input": {"command": command}, "cwd": str(world.proj),
                        "session_id": "s1", "tool_use_id": "t1"}, env)
    backup_id = backup_id_of(answer)
    assert "permissionDecision" not in answer["hookSpecificOutput"]
    subprocess.run(["bash", "-c", command], cwd=world.proj, env=env, check=True)
    assert not world.proj.exists()
    score = restore_and_score(cli, backup_id, env)
    assert score["content"] == 1.0 and score["metadata"] == 1.0, score["differences"]
    assert (world.proj / "web-crawler" / "crawl.py").read_text() == "#\n"


def test_hook_config_overwrite_then_restore(world: World, cli: Cli, home: Path) -> None:
    """T-config-overwrite: a Write of {"hooks":{}} over settings.json is undone with every key."""
    env = {**world.env, "PREIMAGE_HOME": str(home)}
    settings = world.home / ".claude" / "settings.json"
    original = settings.read_text()
    answer = hook(cli, {"hook_event_name": "PreToolUse", "tool_name": "Write",
                        "tool_input": {"file_path": str(settings), "content": '{"hooks":{}}'},
                        "cwd": str(world.proj), "session_id": "s1"}, env)
    backup_id = backup_id_of(answer)
    settings.write_text('{"hooks":{}}')
    score = restore_and_score(cli, backup_id, env)
    assert score["content"] == 1.0 and score["metadata"] == 1.0
    assert json.loads(settings.read_text()) == json.loads(original)


GIT_ENV = {"GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "A",
           "GIT_COMMITTER_EMAIL": "a@x", "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.mark.parametrize(("scenario", "command"), [
    ("T-git-clean-fdx", "git clean -fdx"),
    ("T-git-reset-hard", "git reset --hard"),
    ("T-git-checkout-dot", "git reset HEAD && git checkout -- ."),
])
def test_guard_git_scenario_then_restore(scenario: str, command: str, world: World, cli: Cli,
                                         home: Path) -> None:
    """Staged, unstaged, untracked and ignored work destroyed by git comes back at 1.0."""
    env = {**world.env, **GIT_ENV, "PREIMAGE_HOME": str(home)}

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=world.proj, env={**os.environ, **env},
                              check=True, capture_output=True, text=True).stdout

    git("add", "-A")
    git("commit", "-qm", "base")
    (world.proj / "notes.txt").write_text("staged change\n")
    git("add", "notes.txt")
    (world.proj / "README.md").write_text("# unstaged change\n")
    (world.proj / "new.txt").write_text("untracked\n")
    before = (git("status", "--porcelain", "--ignored"), git("diff"), git("diff", "--cached"))
    proc = cli("guard", "--", command, env=env, cwd=world.proj)
    assert proc.returncode == 0, proc.stderr
    backup_id = proc.stdout.strip().splitlines()[0]
    assert (git("status", "--porcelain", "--ignored"), git("diff"), git("diff", "--cached")) != before
    score = restore_and_score(cli, backup_id, env)
    assert score["content"] == 1.0 and score["metadata"] == 1.0, score["differences"][:5]
    assert (git("status", "--porcelain", "--ignored"), git("diff"), git("diff", "--cached")) == before
    assert (world.proj / ".env.local").read_text() == "SECRET=1\n"
