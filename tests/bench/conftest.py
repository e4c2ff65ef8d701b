"""Fixtures for benchmark tests: a private store and `preimage bench` in a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def bench_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private PREIMAGE_HOME (the benchmark keeps its own stores per run)."""
    h = tmp_path / "home"
    monkeypatch.setenv("PREIMAGE_HOME", str(h))
    return h


@pytest.fixture
def bench(bench_home: Path) -> Callable[..., Any]:
    """Run `preimage bench ARGS --json` in a real process; return the parsed results."""

    def run(*args: str, expect_exit: int = 0) -> Any:
        env = {**os.environ, "PREIMAGE_HOME": str(bench_home)}
        proc = subprocess.run(
            [sys.executable, "-m", "preimage", "bench", *args, "--json"],
            capture_output=True, text=True, env=env, timeout=600,
        )
        assert proc.returncode == expect_exit, proc.stderr[-3000:] + proc.stdout[-3000:]
        return json.loads(proc.stdout)

    return run
