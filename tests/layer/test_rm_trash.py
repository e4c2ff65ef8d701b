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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from preimage.layer.hook import handle

Cli = Callable[..., subprocess.CompletedProcess[str]]


def hook(command: str, cwd: Path, harness: str = "claude-code", *args: str) -> dict[str, Any]:
    """The hook's answer for a Bash call (decided in this process)."""
    text = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}, "cwd": str(cwd),
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
def tree(tmp_path: Path) -> Path:
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
    assert out["permissionDecision"] == "ask"  # the user still approves the rewritten rm
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


def test_other_harnesses_keep_the_capture(tree: Path) -> None:
    """A harness not known to run rewritten input (codex) gets a capture, not a trash move."""
    answer = hook("rm -rf tree", tree, "codex")
    assert rewritten(answer) is None
    assert "preimage backup " in answer["hookSpecificOutput"]["additionalContext"]


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
