"""Fixtures for the SQL connector tests: a real PostgreSQL server for the session,
a fresh database per test, and a backup store in a temp dir."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from preimage import Store

ROOT = Path(__file__).resolve().parents[2]


def _load_fixture(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_preimage_fixture_{name}",
                                                  ROOT / "fixtures" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


pg_fixture = _load_fixture("postgres")
_counter = itertools.count()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[object]:
    """One throw-away PostgreSQL server for the whole session."""
    try:
        server = pg_fixture.PostgresServer.start()
    except pg_fixture.PostgresServerError as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


class Database:
    """A fresh database on the session server."""

    def __init__(self, server: object, name: str) -> None:
        self.server = server
        self.name = name

    def uri(self, query: str = "", *, password: bool = True) -> str:
        return self.server.uri(self.name, password=password, query=query)  # type: ignore[attr-defined]

    def sql(self, statement: str) -> str:
        return self.server.psql(statement, self.name)  # type: ignore[attr-defined, no-any-return]


@pytest.fixture
def db(pg_server: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[Database]:
    """A new, empty database (dropped afterwards)."""
    name = f"t{next(_counter)}"
    pg_server.psql(f"CREATE DATABASE {name}")  # type: ignore[attr-defined]
    monkeypatch.setenv("PREIMAGE_POSTGRESQL_PASSWORD", pg_server.password)  # type: ignore[attr-defined]
    yield Database(pg_server, name)
    pg_server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[attr-defined]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """A backup store in a temp dir (also PREIMAGE_HOME for the CLI)."""
    home = tmp_path / "preimage-home"
    monkeypatch.setenv("PREIMAGE_HOME", str(home))
    st = Store(home)
    yield st
    st.close()
