"""A plain rm on the store's filesystem: rewritten into a rename into the trash, renamed back.

The oracle for "exactly" is the file connector: the tree is captured the
ordinary way first, and after trash + restore the live tree must score 1.0
against that capture in content and metadata, with the same inode.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from preimage.layer.harnesses.hook import handle

Cli = Callable[..., subprocess.CompletedProcess[str]]


def hook(command: str, cwd: Path, harness: str = "claude-code", *args: str,
         description: str = "") -> dict[str, Any]:
    """The hook's answer for a Bash call (decided in this process)."""
    tool_input = {"command": command, **({"description": description} if description else {})}
    text = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": tool_input, "cwd": str(cwd), "tool_use_id": "toolu_1",
                       "session_id": "s1", "permission_mode": "default"})
    out = handle(harness, list(args), text)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def rewritten(answer: dict[str, Any]) -> str | None:
    return answer.get("hookSpecificOutput", {}).get("updatedInput", {}).get("command")


def backup_of(command: str) -> str:
    return command.split("--backup ", 1)[1].split(maxsplit=1)[0]


def run_shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def make_tree(root: Path) -> None:
    """Files with modes, times, a symlink, a hard link, an empty dir and an xattr."""
    (root / "src" / "empty").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(root / "run.sh", 0o750)
    (root / "secret").write_bytes(os.urandom(4096))
    os.chmod(root / "secret", 0o600)
    os.link(root / "secret", root / "secret.hard")
    os.symlink("src/main.py", root / "link")
    os.utime(root / "src" / "main.py", ns=(1_600_000_000_000_000_000, 1_600_000_000_123_456_789))
    try:
        os.setxattr(root / "src" / "main.py", "user.origin", b"preimage-test")
    except OSError:
        pass


@pytest.fixture
def tree(tmp_path: Path, home: Path) -> Path:
    """A tree to delete, and the test's own store (never the user's)."""
    work = tmp_path / "w"
    make_tree(work / "tree")
    return work


def test_plain_rm_renames_into_trash_and_restores_exactly(tree: Path, home: Path, cli: Cli) -> None:
    """`rm -rf tree` becomes a trash move; nothing moves before the call runs; restore by id
    brings the same inode back and the file connector scores it 1.0."""
    reference = cli("capture", f"file://{tree / 'tree'}", check=True).stdout.strip()
    inode = os.stat(tree / "tree").st_ino
    answer = hook("rm -rf tree", tree)
    out = answer["hookSpecificOutput"]
    assert "permissionDecision" not in out  # the user's own rules decide, as for the rm
    command = rewritten(answer)
    assert command and " trash " in command and command.endswith(str(tree / "tree"))
    backup_id = backup_of(command)
    assert backup_id in out["additionalContext"]
    assert (tree / "tree").exists()  # the hook moved nothing
    assert cli("show", backup_id).returncode == 2  # and recorded nothing yet

    proc = run_shell(command, tree)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    assert not (tree / "tree").exists()
    shown = json.loads(cli("show", backup_id, "--json", check=True).stdout)
    assert shown["status"] == "complete"

    cli("restore", backup_id, check=True)
    assert os.stat(tree / "tree").st_ino == inode
    score = json.loads(cli("score", reference, "--json", check=True).stdout)
    assert score["content"] == 1.0 and score["metadata"] == 1.0


def test_restore_over_something_new_keeps_it_in_the_undo_backup(tree: Path, cli: Cli) -> None:
    """A path re-created since the rm is captured into the undo backup, then replaced."""
    command = rewritten(hook("rm -r tree", tree))
    assert command
    run_shell(command, tree).check_returncode()
    (tree / "tree").mkdir()
    (tree / "tree" / "new.txt").write_text("written after the rm")
    done = json.loads(cli("restore", backup_of(command), "--json", check=True).stdout)
    assert (tree / "tree" / "run.sh").exists() and not (tree / "tree" / "new.txt").exists()
    undo = done["undo_backup"]
    cli("restore", undo, check=True)
    assert (tree / "tree" / "new.txt").read_text() == "written after the rm"


def test_second_restore_says_already_back(tree: Path, cli: Cli) -> None:
    """A trash entry is renamed back once; restoring again changes nothing and says so."""
    command = rewritten(hook("rm -rf tree", tree))
    assert command
    run_shell(command, tree).check_returncode()
    cli("restore", backup_of(command), check=True)
    again = cli("restore", backup_of(command), "--json")
    assert again.returncode == 0, again.stderr
    assert "no longer in the trash" in again.stdout
    assert (tree / "tree" / "run.sh").exists()


@pytest.mark.parametrize("command", [
    "rm -rf tree/*", "rm -rfv tree", "rm -rf $TREE", "rm -rf tree 2>/dev/null",
    "sudo rm -rf tree", "rm -rf tree missing",
])
def test_less_plain_rm_is_captured(command: str, tree: Path) -> None:
    """Globs, other options, variables, redirections, wrappers and missing operands
    (without -f … here: `missing` with -f is fine, so it is tested apart) keep the capture."""
    if command == "rm -rf tree missing":
        (tree / "tree2").mkdir()
        command = "rm -r tree missing"
    answer = hook(command, tree)
    assert " trash " not in (rewritten(answer) or "")
    assert "preimage backup " in answer["hookSpecificOutput"]["additionalContext"]


def test_rm_force_skips_missing_operands(tree: Path) -> None:
    """With -f a missing operand is ignored, as rm ignores it."""
    command = rewritten(hook("rm -rf tree gone", tree))
    assert command and command.endswith(str(tree / "tree"))
    proc = run_shell(command, tree)
    assert proc.returncode == 0 and not (tree / "tree").exists()


def test_codex_without_proof_of_no_sandbox_keeps_the_capture(tree: Path) -> None:
    """Codex runs commands in a sandbox that cannot write to the store unless told
    otherwise; a hook that cannot see Codex's settings (no Codex process above it, as
    here) gets a capture, not a trash move."""
    answer = hook("rm -rf tree", tree, "codex")
    assert rewritten(answer) is None
    assert "preimage backup " in answer["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize(("harness", "field"), [("gemini", "tool_input"), ("opencode", "args")])
def test_gemini_and_opencode_get_the_rewrite_in_their_own_form(
        tree: Path, home: Path, harness: str, field: str) -> None:
    """Gemini CLI and OpenCode run a rewritten command, each given in its own answer form;
    the rewrite names the hook's own store."""
    tool = {"gemini": "run_shell_command", "opencode": "bash"}[harness]
    event = {"gemini": "BeforeTool", "opencode": "tool.execute.before"}[harness]
    key = "tool_name" if harness == "gemini" else "tool"
    text = json.dumps({"hook_event_name": event, key: tool,
                       "tool_input": {"command": "rm -rf tree"}, "cwd": str(tree),
                       "session_id": "s1"})
    answer = json.loads(handle(harness, [], text).stdout)
    got = answer.get("hookSpecificOutput", answer)[field]["command"]
    assert f" trash --home {home} " in got and got.endswith(str(tree / "tree"))
    run_shell(got, tree).check_returncode()
    assert not (tree / "tree").exists()


def test_working_directory_inside_is_captured(tree: Path) -> None:
    """Moving the shell's own working directory away would leave it inside the trash."""
    answer = hook(f"rm -rf {tree / 'tree'}", tree / "tree" / "src")
    assert " trash " not in (rewritten(answer) or "")


@contextlib.contextmanager
def tmpfs(folder: Path) -> Iterator[Path]:
    """``folder`` with a tmpfs mounted on it for the block (needs root)."""
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@pytest.fixture
def other_fs(tmp_path: Path) -> Iterator[Path]:
    """A folder on another filesystem than the store."""
    with tmpfs(tmp_path / "otherfs") as folder:
        yield folder


def test_other_filesystem_is_captured_and_restored(other_fs: Path, cli: Cli) -> None:
    """rm on a filesystem the store is not on is protected by a copy, as before."""
    make_tree(other_fs / "tree")
    answer = hook("rm -rf tree", other_fs)
    assert rewritten(answer) is None
    context = answer["hookSpecificOutput"]["additionalContext"]
    backup_id = context.split("preimage backup ", 1)[1].split()[0]
    shutil.rmtree(other_fs / "tree")
    cli("restore", backup_id, check=True)
    assert (other_fs / "tree" / "run.sh").read_text() == "#!/bin/sh\necho run\n"


def test_trash_command_speaks_like_rm(tmp_path: Path, home: Path, cli: Cli) -> None:
    """`preimage trash` refuses a directory without -r and a missing path without -f."""
    (tmp_path / "d").mkdir()
    proc = cli("trash", "--home", str(home), "--backup", "0000000000abc", "--", str(tmp_path / "d"),
               str(tmp_path / "nope"))
    assert proc.returncode == 1
    assert "Is a directory" in proc.stderr and "No such file or directory" in proc.stderr
    assert (tmp_path / "d").is_dir()


def test_tree_holding_a_mount_point_is_captured(tree: Path) -> None:
    """A rename would carry a mounted filesystem along; such a tree is captured instead."""
    assert rewritten(hook("rm -rf tree", tree))  # renamed while nothing is mounted in it
    with tmpfs(tree / "tree" / "mnt"):
        answer = hook("rm -rf tree", tree)
        assert " trash " not in (rewritten(answer) or "")
        assert "preimage backup " in answer["hookSpecificOutput"]["additionalContext"]


def test_trash_backup_names_the_agents_call(tree: Path, home: Path, cli: Cli) -> None:
    """The backup records the call the agent made (tool, command, harness, session, call
    id), redacted like every stored call; the rewritten command line carries only the ID."""
    answer = hook("rm -rf tree", tree, description="clean up; api_key=sk-live-hunter2")
    command = rewritten(answer)
    assert command and "hunter2" not in command and "toolu_1" not in command
    backup_id = backup_of(command)
    assert "hunter2" not in (home / "trash" / f"{backup_id}.call.json").read_text()
    run_shell(command, tree).check_returncode()
    assert not (home / "trash" / f"{backup_id}.call.json").exists()   # taken by the run
    (listed,) = [b for b in json.loads(cli("list", "--json", check=True).stdout)
                 if b["id"] == backup_id]
    call = listed["tool_call"]
    assert call["tool"] == "Bash" and call["input"]["command"] == "rm -rf tree"
    assert call["harness"] == "claude-code" and call["tool_use_id"] == "toolu_1"
    assert "hunter2" not in json.dumps(listed) and "***" in call["input"]["description"]
    assert listed["session"] == "s1" and listed["label"] == "rm -rf tree"
    assert listed["targets"] == [(tree / "tree").as_uri()]


def test_trash_command_run_by_hand_names_its_paths(tmp_path: Path, home: Path, cli: Cli) -> None:
    """Without a call left by the hook, the backup names the paths it moved."""
    (tmp_path / "d").mkdir()
    cli("trash", "--home", str(home), "--backup", "0000000000abd", "-r", "--",
        str(tmp_path / "d"), check=True)
    shown = json.loads(cli("show", "0000000000abd", "--json", check=True).stdout)
    assert shown["tool_call"] == {"tool": "trash", "input": {"paths": [str(tmp_path / "d")]}}
    assert shown["trash"] == [{"target": (tmp_path / "d").as_uri(), "in_trash": True}]



def test_prune_keeps_a_waiting_call_for_a_day(tree: Path, home: Path, cli: Cli) -> None:
    """A rewritten rm the user has not approved yet keeps its call file through a prune;
    one older than a day (a call never run) is reclaimed."""
    fresh = backup_of(rewritten(hook("rm -rf tree", tree)) or "")
    stale = backup_of(rewritten(hook("rm -rf tree/src", tree)) or "")
    day_ago = time.time() - 2 * 24 * 3600
    os.utime(home / "trash" / f"{stale}.call.json", (day_ago, day_ago))
    cli("prune", check=True)
    assert (home / "trash" / f"{fresh}.call.json").exists()
    assert not (home / "trash" / f"{stale}.call.json").exists()


def score_of(cli: Cli, backup_id: str) -> dict[str, Any]:
    return json.loads(cli("score", backup_id, "--json", check=True).stdout)  # type: ignore[no-any-return]


def test_trash_backup_scores_and_diffs_before_and_after_restore(tree: Path, cli: Cli) -> None:
    """While the tree is in the trash, score and diff compare the live path with what the
    trash holds (the tree is gone: far from 1.0); the restore records what it renamed back,
    so afterwards the backup scores 1.0 — and drops again when the tree changes."""
    command = rewritten(hook("rm -rf tree", tree))
    assert command
    backup_id = backup_of(command)
    run_shell(command, tree).check_returncode()
    before = score_of(cli, backup_id)
    assert before["content"] < 0.1 and before["restorable"]["score"] < 0.1
    assert cli("diff", backup_id).returncode == 1
    assert json.loads(cli("show", backup_id, "--json", check=True).stdout)["snapshots"] == []

    cli("restore", backup_id, check=True)
    shown = json.loads(cli("show", backup_id, "--json", check=True).stdout)
    assert [s["target"] for s in shown["snapshots"]] == [(tree / "tree").as_uri()]
    assert shown["trash"] == [{"target": (tree / "tree").as_uri(), "in_trash": False}]
    after = score_of(cli, backup_id)
    assert after["content"] == 1.0 and after["metadata"] == 1.0
    assert cli("diff", backup_id).returncode == 0

    (tree / "tree" / "run.sh").write_text("changed after the restore\n")
    assert score_of(cli, backup_id)["content"] < 1.0
    assert cli("diff", backup_id).returncode == 1


def test_trash_entry_nobody_recorded_never_scores_one(tree: Path, home: Path, cli: Cli) -> None:
    """An entry taken out of the trash without a restore (so nothing recorded it) is
    reported as not captured: the tree is back in place, yet the score stays below 1.0."""
    command = rewritten(hook("rm -rf tree", tree))
    assert command
    backup_id = backup_of(command)
    run_shell(command, tree).check_returncode()
    os.rename(home / "trash" / backup_id / "0", tree / "tree")
    got = score_of(cli, backup_id)
    assert got["content"] < 1.0
    assert "not captured" in json.dumps(got["differences"])
    assert cli("diff", backup_id).returncode == 1
