"""The warm process never does what its caller could not: a caller in a sandbox (another
mount namespace, no_new_privs) runs its command itself; a caller killed outright ends
the command it asked for."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from preimage.services import warm as _warm


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    base = {k: v for k, v in os.environ.items() if k != "PREIMAGE_SERVICE"}
    return {**base, "PREIMAGE_RUNTIME_DIR": str(runtime), "PREIMAGE_HOME": str(tmp_path / "home")}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("keep me\n")
    return root


def _cli(env: dict[str, str], *args: str, wrap: tuple[str, ...] = ()
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*wrap, sys.executable, "-m", "preimage", *args], env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)


def _status(env: dict[str, str]) -> dict[str, Any] | None:
    return _warm.ask(_warm.address(env), "status")


def _warm_with(env: dict[str, str], tree: Path) -> str:
    """A warm process listening for ``env``'s settings, and a backup of ``tree``."""
    backup = json.loads(_cli(env, "capture", "--json", f"file://{tree}").stdout)["id"]
    end = time.monotonic() + 300
    while _status(env) is None:
        assert time.monotonic() < end, "no warm process listened"
        time.sleep(0.1)
    return str(backup)


def _stop(env: dict[str, str]) -> None:
    _cli(env, "serve", "--stop")


def _sandbox(*paths: Path) -> tuple[str, ...]:
    """A command prefix running in a new mount namespace where ``paths`` are read-only."""
    binds = " && ".join(f"mount --bind -o ro {p} {p}" for p in paths)
    user = () if os.geteuid() == 0 else ("-r",)
    return ("unshare", *user, "-m", "sh", "-c", f'{binds} && exec "$@"', "sandbox")


def test_a_caller_in_a_read_only_mount_namespace_cannot_restore_or_forget_through_it(
    env: dict[str, str], tree: Path
) -> None:
    """Inside a namespace where the store and the workspace are read-only, restore and forget fail there — the warm process does not do them."""
    backup = _warm_with(env, tree)
    try:
        served = _status(env)["served"]  # type: ignore[index]
        (tree / "notes.txt").write_text("changed\n")
        box = _sandbox(Path(env["PREIMAGE_HOME"]), tree)
        restored = _cli(env, "restore", backup, wrap=box)
        assert restored.returncode != 0, restored.stdout
        assert (tree / "notes.txt").read_text() == "changed\n"
        forgot = _cli(env, "forget", backup, wrap=box)
        assert forgot.returncode != 0
        assert _status(env)["served"] == served  # type: ignore[index]
        for failed in (restored, forgot):   # the sandbox's own refusal, said in one line
            assert "Traceback" not in failed.stderr and "not writable" in failed.stderr
        assert backup in _cli(env, "list").stdout
        # the same caller outside the sandbox is served as before
        assert _status(env)["served"] == served + 1  # type: ignore[index]
    finally:
        _stop(env)


def test_a_caller_with_no_new_privs_runs_its_command_itself(
    env: dict[str, str], tree: Path
) -> None:
    """A caller that set no_new_privs (as Landlock and seccomp sandboxes do) is not served."""
    if shutil.which("setpriv") is None:
        pytest.fail("setpriv (util-linux) is needed: install util-linux")
    _warm_with(env, tree)
    try:
        served = _status(env)["served"]  # type: ignore[index]
        listed = _cli(env, "list", wrap=("setpriv", "--no-new-privs"))
        assert listed.returncode == 0, listed.stderr
        assert _status(env)["served"] == served  # type: ignore[index]
    finally:
        _stop(env)


def test_kill_9_of_a_served_caller_ends_its_command(env: dict[str, str], tree: Path) -> None:
    """A served command whose caller is killed with SIGKILL ends too, instead of running on."""
    _warm_with(env, tree)
    catalog = sqlite3.connect(Path(env["PREIMAGE_HOME"]) / "catalog.sqlite",
                              isolation_level=None)
    catalog.execute("BEGIN EXCLUSIVE")  # the command waits for the catalog as long as we hold it
    try:
        caller = subprocess.Popen([sys.executable, "-m", "preimage", "capture",
                                   f"file://{tree}"], env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 300
        while _status(env)["running"] != 1:  # type: ignore[index]
            assert time.monotonic() < end and caller.poll() is None
            time.sleep(0.05)
        caller.send_signal(signal.SIGKILL)
        assert caller.wait(timeout=300) == -signal.SIGKILL
        end = time.monotonic() + 60   # the catalog is still locked: only the kill can end it
        while _status(env)["running"] != 0:  # type: ignore[index]
            assert time.monotonic() < end, "the command ran on after its caller was killed"
            time.sleep(0.05)
    finally:
        catalog.execute("ROLLBACK")
        catalog.close()
        _stop(env)
