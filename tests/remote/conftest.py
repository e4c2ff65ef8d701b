"""Fixtures for the shared store: one real SeaweedFS and one real PostgreSQL per session,
a fresh bucket, database and key per test, and machines (homes) that run the CLI."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "fixtures"))
from fleet_world import Fleet, new_fleet  # noqa: E402 - after the path is set


def _load_fixture(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_preimage_fixture_{name}",
                                                  ROOT / "fixtures" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


sw_fixture = _load_fixture("seaweedfs")
pg_fixture = _load_fixture("postgres")


@pytest.fixture(scope="session")
def seaweed() -> Iterator[Any]:
    """One SeaweedFS (master, volume, filer, S3 gateway) on loopback for the session."""
    try:
        server = sw_fixture.SeaweedServer.start()
    except sw_fixture.SeaweedServerError as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def catalog_server() -> Iterator[Any]:
    """One PostgreSQL server for the session's catalogs."""
    try:
        server = pg_fixture.PostgresServer.start()
    except pg_fixture.PostgresServerError as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fleet(seaweed: Any, catalog_server: Any, tmp_path: Path) -> Iterator[Fleet]:
    """A new shared store: bucket, catalog database and key, initialised with `store init`."""
    with new_fleet(seaweed, catalog_server, tmp_path) as f:
        yield f
