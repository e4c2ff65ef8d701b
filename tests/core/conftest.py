"""Fixtures for core tests: a private store and a CLI runner in a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from preimage import Store


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


CliResult = subprocess.CompletedProcess[str]


@pytest.fixture
def cli(home: Path) -> Callable[..., CliResult]:
    """Run `preimage ARGS` in a real process with the test's store."""

    def run(*args: str, check: bool = False, env: dict[str, str] | None = None) -> CliResult:
        full_env = {**os.environ, "PREIMAGE_HOME": str(home), **(env or {})}
        proc = subprocess.run(
            [sys.executable, "-m", "preimage", *args],
            capture_output=True,
            text=True,
            env=full_env,
            timeout=300,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"preimage {' '.join(args)} failed: {proc.stderr}")
        return proc

    return run


def as_json(proc: CliResult) -> Any:
    """The JSON a CLI command printed."""
    return json.loads(proc.stdout)
