"""Fixtures for the harness adapters: a private store, and real harness binaries in sandboxes."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))

from harnesses import BIN, Sandbox
from model_server import ModelServer, Script


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private PREIMAGE_HOME, config dir and hook log (outside every project it protects)."""
    h = tmp_path / "store"
    monkeypatch.setenv("PREIMAGE_HOME", str(h))
    monkeypatch.setenv("PREIMAGE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("PREIMAGE_LOG", str(tmp_path / "log" / "hook.log"))
    monkeypatch.delenv("PREIMAGE_MODEL", raising=False)
    monkeypatch.delenv("PREIMAGE_MODE", raising=False)
    return h


@pytest.fixture
def sandbox(home: Path, tmp_path: Path) -> Iterator[Callable[..., tuple[Sandbox, ModelServer]]]:
    """``make(harness, script)``: a sandbox for a real harness, its model scripted."""
    servers: list[ModelServer] = []

    def make(harness: str, script: Script, shared_home: Path | None = None,
             ) -> tuple[Sandbox, ModelServer]:
        server = ModelServer(script).__enter__()
        servers.append(server)
        box = Sandbox(harness, tmp_path / harness, server.url, path_dirs=[BIN],
                      home_dir=shared_home)
        return box, server

    yield make
    for s in servers:
        s.__exit__(None, None, None)


@pytest.fixture(scope="session")
def opencode_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One OpenCode home for the session: its first start migrates a database and installs
    the plugin's dependency, which later runs reuse."""
    return tmp_path_factory.mktemp("opencode-home")
