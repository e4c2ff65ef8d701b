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
def bench(home: Path) -> Callable[..., Any]:
    """Run `preimage bench ARGS --json` in a real process (``env``: settings added to its
    environment); return the parsed results."""

    def run(*args: str, expect_exit: int = 0, timeout: int = 600,
            env: dict[str, str] | None = None) -> Any:
        env = {**os.environ, "PREIMAGE_HOME": str(home), **(env or {})}
        proc = subprocess.run(
            [sys.executable, "-m", "preimage", "bench", *args, "--json"],
            capture_output=True, text=True, env=env, timeout=timeout,
        )
        assert proc.returncode == expect_exit, proc.stderr[-3000:] + proc.stdout[-3000:]
        return json.loads(proc.stdout)

    return run
