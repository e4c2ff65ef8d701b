"""Fixtures every test area shares: a private store and the CLI in a real process.

An area's own ``conftest.py`` overrides ``home`` when it needs more private
settings (the backup layer's config dir) and wraps ``cli`` when its commands
need other defaults (mail tests check the exit code by default).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from preimage import Store

CliResult = subprocess.CompletedProcess[str]


@pytest.fixture(scope="session", autouse=True)
def _hook_decides_in_process() -> Iterator[None]:
    """Hook processes decide in-process unless a test starts a decision service itself
    (a service per test's store would outlive the test)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREIMAGE_SERVICE", "off")
        yield


@pytest.fixture(autouse=True)
def _never_the_users_store(tmp_path_factory: pytest.TempPathFactory,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reaches the machine's own store or settings: a test that takes no
    ``home`` still runs with a private PREIMAGE_HOME and config dir (``home``
    overrides both with its own)."""
    base = tmp_path_factory.mktemp("default-home")
    monkeypatch.setenv("PREIMAGE_HOME", str(base / "store"))
    monkeypatch.setenv("PREIMAGE_CONFIG_DIR", str(base / "config"))
    monkeypatch.setenv("PREIMAGE_LOG", str(base / "hook.log"))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private PREIMAGE_HOME for the test (outside the trees it protects)."""
    h = tmp_path / "home"
    monkeypatch.setenv("PREIMAGE_HOME", str(h))
    return h


@pytest.fixture
def store(home: Path) -> Iterator[Store]:
    """The store at the test's PREIMAGE_HOME."""
    st = Store(home)
    yield st
    st.close()


@pytest.fixture
def cli(home: Path) -> Callable[..., CliResult]:
    """Run ``preimage ARGS`` in a real process with the test's store.

    ``check=True`` raises with the command's stderr when it exits non-zero;
    ``input``, ``cwd`` and other keywords go to :func:`subprocess.run`.
    """

    def run(*args: str, check: bool = False, env: dict[str, str] | None = None,
            input: str | None = None, cwd: Path | None = None, **kw: Any) -> CliResult:
        full_env = {**os.environ, "PREIMAGE_HOME": str(home), **(env or {})}
        proc = subprocess.run(
            [sys.executable, "-m", "preimage", *args],
            capture_output=True, text=True, env=full_env, input=input, cwd=cwd,
            timeout=600, **kw,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"preimage {' '.join(args)} failed ({proc.returncode}): {proc.stderr}"
            )
        return proc

    return run
