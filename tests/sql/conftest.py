"""Fixtures for the SQL connector tests: a real PostgreSQL server for the session,
a fresh database per test, and a backup store in a temp dir."""

from __future__ import annotations

import difflib
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


@pytest.fixture(scope="module", params=pg_fixture.EXTRA_MAJORS, ids=lambda m: f"pg{m}")
def pg_major_server(request: pytest.FixtureRequest) -> Iterator[object]:
    """A throw-away server of each further major version (16, 17, 18), for a module."""
    try:
        server = pg_fixture.PostgresServer.start(major=request.param)
    except pg_fixture.PostgresServerError as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_major_db(pg_major_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Database]:
    """A new database on that server; its client programs (pg_dump 18) first on PATH."""
    name = f"v{next(_counter)}"
    pg_major_server.psql(f"CREATE DATABASE {name}")
    for key in ("PATH", "LD_LIBRARY_PATH"):
        monkeypatch.setenv(key, pg_major_server.env()[key])
    monkeypatch.setenv("PREIMAGE_POSTGRESQL_PASSWORD", pg_major_server.password)
    yield Database(pg_major_server, name)
    pg_major_server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


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


# Lines of a plain pg_dump that are about the dump, not the database: the server and
# pg_dump versions in the header, and \restrict / \unrestrict, whose key pg_dump draws
# at random on every run.  Nothing else is removed: rows stay in the order pg_dump
# read them (storage order), so a restore that moved rows around shows up.
_DUMP_NOISE = ("-- Dumped from database version", "-- Dumped by pg_dump version",
               "\\restrict ", "\\unrestrict ")


def _pg_dump(db: Database, *extra: str) -> str:
    """``pg_dump`` of ``db`` (plain, with owners and grants), less :data:`_DUMP_NOISE`."""
    server: Any = db.server
    proc = subprocess.run([server.tool("pg_dump"), "--no-sync", *extra, db.name],
                          capture_output=True, text=True, env=server.env(), check=False)
    assert proc.returncode == 0, proc.stderr
    return "\n".join(line for line in proc.stdout.splitlines()
                     if not line.startswith(_DUMP_NOISE))


@pytest.fixture
def pg_dump() -> Callable[..., str]:
    """pg_dump of a test database, byte for byte but for its version and key lines."""
    return _pg_dump


samples_fixture = _load_fixture("sql_samples")


@pytest.fixture(scope="session")
def pg_samples(pg_server: Any) -> Callable[[str], str]:
    """Sample name → template database holding it, each loaded once per session."""
    loaded: dict[str, str] = {}

    def get(name: str) -> str:
        if name not in loaded:
            loaded[name] = samples_fixture.load_postgres(pg_server, name)
        return loaded[name]

    return get


@pytest.fixture
def sample_db(db: Database, pg_samples: Callable[[str], str]) -> Callable[[str], Database]:
    """Turn the test's database into a copy of a sample database."""

    def make(name: str) -> Database:
        template = pg_samples(name)
        db.server.psql(f"DROP DATABASE {db.name}")  # type: ignore[attr-defined]
        db.server.psql(f"CREATE DATABASE {db.name} TEMPLATE {template}")  # type: ignore[attr-defined]
        return db

    return make


class Checks:
    """Assertions shared by the PostgreSQL tests."""

    @staticmethod
    def next_value(db: Database, seq: str) -> int:
        """What the next ``nextval`` would return, read without calling it."""
        out = db.sql(
            f"SELECT CASE WHEN is_called THEN last_value + (SELECT seqincrement FROM pg_sequence "
            f"WHERE seqrelid = '{seq}'::regclass) ELSE last_value END FROM {seq}"
        )
        return int(out.strip())

    @staticmethod
    def sequences(db: Database) -> str:
        """Every sequence with its last value (empty until first used), one per line."""
        return db.sql("SELECT format('%I.%I', schemaname, sequencename), last_value "
                      "FROM pg_catalog.pg_sequences ORDER BY 1")

    @staticmethod
    def same_dump(after: str, before: str) -> None:
        """pg_dump output identical; on failure show the differing lines."""
        diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), "original",
                                         "restored", lineterm="", n=1))
        assert not diff, "pg_dump differs:\n" + "\n".join(diff[:60])

    @staticmethod
    def full_fidelity(cli: Cli, backup_id: str) -> dict[str, Any]:
        """``preimage score``: content and metadata at 1.0, and the schema oracle (pg_dump
        beside the capture and the score) ran and found the schemas identical."""
        score = cli.score(backup_id)
        assert score["content"] == 1.0, score["differences"]
        assert score["metadata"] == 1.0, score["differences"]
        assert all("schema identical" in note for note in score["oracles"]), score["oracles"]
        return score


@pytest.fixture
def damage_rows(store: Store) -> Callable[[Any, str], None]:
    """Flip one byte half-way through the rows blob of table ``name`` in a backup, as a
    disk or a copy would damage it."""

    def damage(backup: Any, name: str) -> None:
        (table,) = [t for t in backup.snapshots[0].items if getattr(t, "name", "") == name]
        path = store.blobs.path(table.rows_digest)
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))

    return damage


@pytest.fixture
def check() -> type[Checks]:
    """Shared assertions (dump identity, full fidelity, sequence positions)."""
    return Checks


mariadb_fixture = _load_fixture("mariadb")


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[Any]:
    """One throw-away MariaDB server for the whole session."""
    try:
        server = mariadb_fixture.MariaDBServer.start()
    except mariadb_fixture.MariaDBServerError as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


class MyDatabase:
    """A fresh database on the session's MariaDB server."""

    def __init__(self, server: Any, name: str) -> None:
        self.server = server
        self.name = name

    def uri(self, query: str = "", *, driver: str = "mariadb+pymysql") -> str:
        return str(self.server.uri(self.name, driver=driver, query=query))

    def sql(self, statements: str) -> str:
        return str(self.server.sql(statements, self.name))

    def dump(self) -> str:
        """mysqldump (routines, events, triggers), without its date line."""
        return str(self.server.dump(self.name))


@pytest.fixture(scope="session")
def my_samples(mariadb_server: Any) -> Callable[[str], str]:
    """Sample name → database holding it on the MariaDB server, loaded once per session."""
    loaded: dict[str, str] = {}

    def get(name: str) -> str:
        if name not in loaded:
            loaded[name] = samples_fixture.load_mariadb(mariadb_server, name)
        return loaded[name]

    return get


@pytest.fixture
def mydb(mariadb_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[MyDatabase]:
    """A new, empty MariaDB database (dropped afterwards); its password in MYSQL_PWD."""
    name = f"m{next(_counter)}"
    mariadb_server.sql(f"CREATE DATABASE {name}")
    monkeypatch.setenv("MYSQL_PWD", mariadb_server.password)
    yield MyDatabase(mariadb_server, name)
    mariadb_server.sql(f"DROP DATABASE IF EXISTS {name}")
