"""Fixtures for the SQL connector tests: a real PostgreSQL server for the session,
a fresh database per test, and a backup store in a temp dir."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

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


CliResult = subprocess.CompletedProcess[str]


class Cli:
    """``preimage`` run in a real process against the test's store (PREIMAGE_HOME)."""

    def run(self, *args: str, check: bool = True) -> CliResult:
        proc = subprocess.run(
            [sys.executable, "-m", "preimage", *args],
            capture_output=True, text=True, env=dict(os.environ), timeout=300, check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"preimage {' '.join(args)} exited {proc.returncode}:\n"
                                 f"{proc.stdout}\n{proc.stderr}")
        return proc

    def capture(self, *uris: str) -> str:
        """``preimage capture --json URI…`` → the backup id."""
        return str(json.loads(self.run("capture", "--json", *uris).stdout)["id"])

    def restore(self, backup_id: str, *args: str) -> dict[str, Any]:
        """``preimage restore --json ID …`` as a dict."""
        return json.loads(self.run("restore", "--json", backup_id, *args).stdout)  # type: ignore[no-any-return]

    def score(self, backup_id: str) -> dict[str, Any]:
        """``preimage score --json ID`` as a dict."""
        return json.loads(self.run("score", "--json", "--show", "20", backup_id).stdout)  # type: ignore[no-any-return]


@pytest.fixture
def cli(store: Store) -> Cli:
    """The CLI, using the test's store."""
    return Cli()


def _pg_dump(db: Database, *extra: str) -> tuple[str, str]:
    """(schema, data) of ``db`` as pg_dump prints them, normalised for comparison:
    comment and ``\\restrict`` lines dropped, rows of every COPY block sorted (row
    order on disk is not state a user sees)."""
    server: Any = db.server

    def run(*args: str) -> str:
        proc = subprocess.run([server.tool("pg_dump"), "--no-sync", *args, *extra, db.name],
                              capture_output=True, text=True, env=server.env(), check=False)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def clean(text: str) -> str:
        out: list[str] = []
        block: list[str] | None = None
        for line in text.splitlines():
            if block is not None:
                if line == "\\.":
                    out += sorted(block)
                    out.append(line)
                    block = None
                else:
                    block.append(line)
                continue
            if not line.strip() or line.startswith(("--", "\\restrict", "\\unrestrict")):
                continue
            out.append(line)
            if line.startswith("COPY "):
                block = []
        return "\n".join(out)

    return clean(run("--schema-only")), clean(run("--data-only"))


@pytest.fixture
def pg_dump() -> Callable[..., tuple[str, str]]:
    """pg_dump of a test database: (schema, data), normalised."""
    return _pg_dump
