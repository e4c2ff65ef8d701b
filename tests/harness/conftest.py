"""Fixtures for the harness adapters: the scripted model server, and what each run cost."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))

from harnesses import RUNS
from model_server import ModelServer


@pytest.fixture(scope="session")
def model() -> Iterator[ModelServer]:
    """One scripted model server for the session; each harness run takes a route of its own."""
    with ModelServer() as server:
        yield server


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What each real harness run cost (CPU of its process tree, and wall time): information
    for whoever watches the suite's budget, never an assertion."""
    if not RUNS:
        return
    terminalreporter.section("real harness runs")
    total_cpu = total_wall = 0.0
    for harness, label, run in RUNS:
        terminalreporter.write_line(f"{harness:12} {label:28} cpu {run.cpu_seconds:6.1f} s   "
                                    f"wall {run.wall_seconds:6.1f} s")
        total_cpu += run.cpu_seconds
        total_wall += run.wall_seconds
    terminalreporter.write_line(f"{len(RUNS)} runs: cpu {total_cpu:.1f} s, wall {total_wall:.1f} s")
