"""The warm process: commands after the first run in a child forked from a process that has
already imported preimage, with the caller's directory, environment, streams and exit
status — and the same outcome as in their own process."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from services import lock_held

from preimage.services import warm as _warm


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    base = {k: v for k, v in os.environ.items() if k != "PREIMAGE_SERVICE"}
    return {**base, "PREIMAGE_RUNTIME_DIR": str(runtime), "PREIMAGE_HOME": str(tmp_path / "home")}


def _cli(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "preimage", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)


def _status(env: dict[str, str]) -> dict[str, Any] | None:
    return _warm.ask(_warm.address(env), "status")


def _wait_warm(env: dict[str, str], limit: float = 300.0) -> dict[str, Any]:
    """The warm process's status once it listens (the limit only stops a hung test)."""
    end = time.monotonic() + limit
    while (doc := _status(env)) is None:
        assert time.monotonic() < end, "no warm process listened"
        time.sleep(0.1)
    return doc


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "notes.txt").write_text("keep me\n")
    return root


def test_commands_after_the_first_run_warm_with_the_same_outcome(
    env: dict[str, str], tree: Path, tmp_path: Path
) -> None:
    """The first command starts the warm process and runs in its own; the next ones are
    served by it — output, errors and exit status as in their own process, in the caller's
    working directory — and a restore it serves brings the files back."""
    first = _cli(env, "capture", f"file://{tree}")
    assert first.returncode == 0, first.stderr
    assert _wait_warm(env)["served"] == 0

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    captured = _cli(env, "capture", "--json", f"file://{tree}", cwd=elsewhere)
    assert captured.returncode == 0, captured.stderr
    backup = json.loads(captured.stdout)["id"]

    missing = _cli(env, "restore", "no-such-backup")
    own = _cli({**env, "PREIMAGE_SERVICE": "off"}, "restore", "no-such-backup")
    assert (missing.returncode, missing.stdout, missing.stderr) == (
        own.returncode, own.stdout, own.stderr)
    assert missing.returncode != 0 and len(missing.stderr.strip().splitlines()) == 1

    (tree / "notes.txt").unlink()
    (tree / "src" / "app.py").write_text("broken\n")
    restored = _cli(env, "restore", backup)
    assert restored.returncode == 0, restored.stderr
    assert (tree / "notes.txt").read_text() == "keep me\n"
    assert (tree / "src" / "app.py").read_text() == "print('hi')\n"

    listed = _cli(env, "list", "--json")
    assert backup in listed.stdout
    assert _status(env)["served"] == 4  # type: ignore[index]
    assert _cli(env, "serve", "--stop").returncode == 0
    assert _status(env) is None


def test_every_store_is_served_by_the_one_warm_process(
    env: dict[str, str], tree: Path, tmp_path: Path
) -> None:
    """One warm process serves every store of the user: another PREIMAGE_HOME's commands go
    to it and see only that store, and the first store's commands still see theirs."""
    assert _cli(env, "capture", f"file://{tree}").returncode == 0
    first = _wait_warm(env)
    other = {**env, "PREIMAGE_HOME": str(tmp_path / "other-home")}
    listed = _cli(other, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []
    mine = _cli(env, "list", "--json")
    assert mine.returncode == 0 and len(json.loads(mine.stdout)) == 1
    after = _status(other)
    assert after is not None and after["pid"] == first["pid"] and after["served"] == 2
    assert len(list(Path(env["PREIMAGE_RUNTIME_DIR"]).glob("cli-*.lock"))) == 1
    assert _cli(env, "serve", "--stop").returncode == 0
    assert _status(other) is None


def test_service_off_keeps_every_command_in_its_own_process(
    env: dict[str, str], tree: Path
) -> None:
    """PREIMAGE_SERVICE=off: no warm process is started or used."""
    off = {**env, "PREIMAGE_SERVICE": "off"}
    for _ in range(2):
        assert _cli(off, "capture", f"file://{tree}").returncode == 0
    assert not list(Path(env["PREIMAGE_RUNTIME_DIR"]).glob("cli-*"))
    assert _status(env) is None


def test_a_signal_to_the_caller_reaches_the_command_it_runs(
    env: dict[str, str], tree: Path
) -> None:
    """SIGTERM to a command served warm ends the command itself (the caller exits as if
    it had run it: 143); the warm process goes on serving, and the store stays sound.  A
    warm process stopped meanwhile is gone at once: its running command does not hold its
    lock (a new one could start)."""
    assert _cli(env, "capture", f"file://{tree}").returncode == 0
    _wait_warm(env)
    catalog = sqlite3.connect(Path(env["PREIMAGE_HOME"]) / "catalog.sqlite",
                              isolation_level=None)
    catalog.execute("BEGIN EXCLUSIVE")  # the capture cannot record itself until we let go
    try:
        caller = subprocess.Popen([sys.executable, "-m", "preimage", "capture",
                                   f"file://{tree}"], env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 300
        while _status(env)["running"] != 1:  # type: ignore[index]
            assert time.monotonic() < end and caller.poll() is None
            time.sleep(0.05)
        caller.send_signal(signal.SIGTERM)
        assert caller.wait(timeout=300) == 128 + signal.SIGTERM
        while _status(env)["running"] != 0:  # type: ignore[index]
            assert time.monotonic() < end
            time.sleep(0.05)

        blocked = subprocess.Popen([sys.executable, "-m", "preimage", "capture",
                                    f"file://{tree}"], env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while _status(env)["running"] != 1:  # type: ignore[index]
            assert time.monotonic() < end and blocked.poll() is None
            time.sleep(0.05)
        assert _cli(env, "serve", "--stop").returncode == 0
        lock = next(Path(env["PREIMAGE_RUNTIME_DIR"]).glob("cli-*.lock"))
        while lock_held(lock):
            assert time.monotonic() < end
            time.sleep(0.05)
        assert blocked.poll() is None  # still waiting for the catalog, in its own child
        blocked.send_signal(signal.SIGTERM)
        assert blocked.wait(timeout=300) == 128 + signal.SIGTERM
    finally:
        catalog.execute("ROLLBACK")
        catalog.close()
    listed = json.loads(_cli(env, "list", "--json").stdout)
    assert len(listed) == 1
    assert _cli(env, "check").returncode == 0


def test_help_and_a_table_read_the_same_served_or_not(env: dict[str, str], tree: Path) -> None:
    """What the user reads does not depend on where the command ran: the program's name in
    usage lines and a listing's layout are those of the command's own process."""
    assert _cli(env, "capture", f"file://{tree}").returncode == 0
    _wait_warm(env)
    off = {**env, "PREIMAGE_SERVICE": "off"}
    for args in (("capture", "--help"), ("list",), ("restore",)):
        served, own = _cli(env, *args), _cli(off, *args)
        assert (served.returncode, served.stdout, served.stderr) == (
            own.returncode, own.stdout, own.stderr), args
    assert _status(env)["served"] == 3  # type: ignore[index]
    assert _cli(env, "serve", "--stop").returncode == 0


def test_a_served_command_writes_its_temporary_files_where_its_caller_says(
        tmp_path: Path) -> None:
    """The resident process looks up Python's temporary folder from its own environment
    (no TMPDIR) while it warms up; the process forked for a caller takes the caller's
    environment and with it the caller's TMPDIR — the report spill, a MariaDB load file."""
    wanted = tmp_path / "callers-tmp"
    wanted.mkdir()
    code = ("import tempfile, sys\n"
            "from preimage.services import wire\n"
            "assert tempfile.gettempdir() != sys.argv[1]\n"   # the resident's own choice
            "wire.take_environment({'TMPDIR': sys.argv[1], 'PATH': '/usr/bin:/bin'})\n"
            "fd, name = tempfile.mkstemp(prefix='preimage-report-')\n"
            "print(name)\n")
    resident = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "TEMP", "TMP")}
    done = subprocess.run([sys.executable, "-c", code, str(wanted)], env=resident,
                          capture_output=True, text=True, check=True)
    assert Path(done.stdout.strip()).parent == wanted
