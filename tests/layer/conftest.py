"""Fixtures for the backup layer: a seeded world and a layer over it (each test's private
store, config dir and hook log come from tests/conftest.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))

from layer_world import IMAP, PG, World, build_world

from preimage import Store
from preimage.layer import BackupLayer, LayerConfig, McpServer

CORPUS = Path(__file__).parent / "corpus"


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
               "http://127.0.0.1:9292": "discourse"},
        **kw,
    )


@pytest.fixture
def layer(world: World, store: Store) -> BackupLayer:
    """A layer for the world, with no model."""
    return BackupLayer(store=store, config=world_config(world), env=world.env)


def as_json(text: str) -> Any:
    """The JSON document a command printed."""
    return json.loads(text)
