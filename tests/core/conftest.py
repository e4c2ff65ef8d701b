"""Helpers for core tests (the store and CLI fixtures are in ``tests/conftest.py``)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

CliResult = subprocess.CompletedProcess[str]


def as_json(proc: CliResult) -> Any:
    """The JSON a CLI command printed."""
    return json.loads(proc.stdout)
