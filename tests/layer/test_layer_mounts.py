"""Kernel interfaces pass; tmpfs mounts under /dev or /run hold data and are protected.

``/dev/shm`` is a real tmpfs on every Linux machine (POSIX shared memory lives
there), so the tests delete a tree in it as an agent would and restore it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from preimage.layer.harnesses.hook import handle
from preimage.layer.reading.mounts import fs_type, kernel_path

Cli = Callable[..., subprocess.CompletedProcess[str]]
SHM = Path("/dev/shm")


def hook(command: str, cwd: Path) -> dict[str, Any]:
    """Claude Code's hook answer for a Bash call, decided in this process."""
    text = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}, "cwd": str(cwd), "session_id": "s1"})
    return json.loads(handle("claude-code", [], text).stdout)  # type: ignore[no-any-return]


@pytest.fixture
def shm_tree() -> Iterator[Path]:
    """A small tree in /dev/shm (removed afterwards, whatever the test did)."""
    assert fs_type(str(SHM)) == "tmpfs", "this machine has no /dev/shm tmpfs"
    root = SHM / f"preimage-test-{uuid.uuid4().hex[:12]}"
    (root / "state").mkdir(parents=True)
    (root / "state" / "session.db").write_bytes(b"shared memory state")
    os.chmod(root / "state" / "session.db", 0o640)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("path", ["/dev/null", "/dev/stdout", "/dev/fd/1", "/dev/tcp/127.0.0.1/9",
                                  "/dev/pts", "/proc/self/status", "/sys/kernel", "/dev"])
def test_kernel_interfaces_are_not_data(path: str) -> None:
    assert kernel_path(path)


@pytest.mark.parametrize("path", ["/dev/shm", "/dev/shm/app/state", f"/run/user/{os.getuid()}/x",
                                  "/tmp/x", "/dev/shm/not-there-yet"])
def test_tmpfs_and_ordinary_paths_are_data(path: str) -> None:
    assert not kernel_path(path)


def test_rm_in_dev_shm_is_captured_and_restored(shm_tree: Path, home: Path, cli: Cli) -> None:
    """The store is on another filesystem: the tree is copied before the rm, and restored."""
    answer = hook(f"rm -rf {shm_tree / 'state'}", shm_tree)
    out = answer["hookSpecificOutput"]
    assert "updatedInput" not in out   # another filesystem than the store: no rename
    backup_id = out["additionalContext"].split("preimage backup ", 1)[1].split()[0]
    shown = json.loads(cli("show", backup_id, "--json", check=True).stdout)
    # the tree, and the directory whose entry the rm removes (its listing and mtime)
    assert shown["targets"] == [f"file://{shm_tree / 'state'}", f"file://{shm_tree}?depth=0"]
    shutil.rmtree(shm_tree / "state")
    cli("restore", backup_id, check=True)
    assert (shm_tree / "state" / "session.db").read_bytes() == b"shared memory state"
    assert os.stat(shm_tree / "state" / "session.db").st_mode & 0o777 == 0o640


def test_rm_in_dev_shm_with_the_store_there_is_renamed(shm_tree: Path, cli: Cli,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """With the store on the same tmpfs, the rm becomes a rename into its trash."""
    store = shm_tree / "store"
    monkeypatch.setenv("PREIMAGE_HOME", str(store))
    inode = os.stat(shm_tree / "state").st_ino
    command = hook("rm -rf state", shm_tree)["hookSpecificOutput"]["updatedInput"]["command"]
    assert " trash " in command
    subprocess.run(["bash", "-c", command], cwd=shm_tree, check=True)
    assert not (shm_tree / "state").exists()
    backup_id = command.split("--backup ", 1)[1].split()[0]
    cli("restore", backup_id, check=True, env={"PREIMAGE_HOME": str(store)})
    assert os.stat(shm_tree / "state").st_ino == inode
    assert (shm_tree / "state" / "session.db").read_bytes() == b"shared memory state"


def test_redirect_to_dev_null_takes_no_backup(tmp_path: Path, home: Path) -> None:
    assert hook("ls -la > /dev/null 2>/dev/stderr", tmp_path) == {}
