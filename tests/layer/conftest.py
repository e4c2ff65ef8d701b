"""Fixtures for the backup layer: a seeded world and a layer over it (each test's private
store, config dir and hook log come from tests/conftest.py)."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))

from layer_world import IMAP, PG, World, build_world

from preimage import Store
from preimage.layer import BackupLayer, LayerConfig, McpServer

CORPUS = Path(__file__).parent / "corpus"
_db_counter = itertools.count()


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A fake home with documents, a git project with a venv, a kubeconfig and MCP servers."""
    return build_world(tmp_path / "w")


def world_config(world: World, **kw: Any) -> LayerConfig:
    """Layer settings for the world: MCP targets and a site adapter per origin."""
    return LayerConfig(
        workspace=str(world.proj),
        mcp={"postgres": McpServer(kind="postgres", target=PG),
             "email": McpServer(kind="email", target=IMAP + "/"),
             "playwright": McpServer(kind="browser", profile=str(world.profile))},
        sites={"http://127.0.0.1:8080": "isso", "http://127.0.0.1:8000": "trac?env=/srv/trac",
               "http://127.0.0.1:9292": "discourse", "http://127.0.0.1:3923": "copyparty"},
        **kw,
    )


@pytest.fixture
def layer(world: World, store: Store) -> BackupLayer:
    """A layer for the world, with no model."""
    return BackupLayer(store=store, config=world_config(world), env=world.env)


def as_json(text: str) -> Any:
    """The JSON document a command printed."""
    return json.loads(text)


def _load_fixture(name: str) -> Any:
    """A launcher module from fixtures/ (loaded by path: it is not a package)."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "fixtures" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_preimage_layer_fixture_{name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """One throw-away PostgreSQL server for the layer's SQL tests and the SQL audit."""
    pg = _load_fixture("postgres")
    try:
        server = pg.PostgresServer.start()
    except pg.PostgresServerError as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_db(pg_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A new database on the session server (its name); libpq and preimage can log in."""
    name = f"layer{next(_db_counter)}"
    pg_server.psql(f"CREATE DATABASE {name}")
    monkeypatch.setenv("PREIMAGE_POSTGRESQL_PASSWORD", pg_server.password)
    for k, v in pg_server.env().items():
        if k.startswith("PG"):
            monkeypatch.setenv(k, v)
    yield name
    pg_server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
