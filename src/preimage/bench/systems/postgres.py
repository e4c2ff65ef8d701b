"""PostgreSQL: a real server, one database per scenario run.

The server is the test launcher ``fixtures/postgres.py`` (``initdb`` +
``pg_ctl`` on a free loopback port), started once per benchmark run — or an
existing server when ``PREIMAGE_BENCH_POSTGRES`` holds its URI with a
superuser's password (``postgresql://postgres:PW@127.0.0.1:5432``).

``setup.postgres`` is ``{database, sql}``: the database (default ``app``) is
created fresh and the script runs with ``psql -v ON_ERROR_STOP=1``.
Variables: ``{pg_db}``, ``{pg_uri}`` (``postgresql://user@host:port/db``, no
password), ``{pg_host}``, ``{pg_port}``, ``{pg_user}``; shell calls get
``PGHOST``/``PGPORT``/``PGUSER``/``PGPASSWORD``/``PGDATABASE`` and ``psql``
on ``PATH``.  MCP calls (``execute_sql``, ``query``, ``run_sql`` with a
``query`` or ``sql`` argument) run their SQL with ``psql`` as the MCP
servers do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

from preimage.bench.systems.base import CallOutcome, Sandbox, System, load_fixture
from preimage.bench.systems.sqlite import SQL_TOOLS, sql_argument
from preimage.interface.errors import UsageError


class PostgresSystem(System):
    """A PostgreSQL server shared by the run; a fresh database per scenario run."""

    name: ClassVar[str] = "postgres"
    schemes: ClassVar[tuple[str, ...]] = ("file", "postgresql")
    files_only: ClassVar[bool] = False

    def __init__(self) -> None:
        self.server: Any = None
        self.host = "127.0.0.1"
        self.port = 5432
        self.user = "postgres"
        self.password = ""
        self.bindir: Path | None = None
        self._saved_env: dict[str, str | None] = {}

    def start(self, workdir: Path) -> None:
        """Reuse ``$PREIMAGE_BENCH_POSTGRES`` or start the test launcher's server."""
        given = os.environ.get("PREIMAGE_BENCH_POSTGRES")
        if given:
            parts = urlsplit(given)
            self.host = parts.hostname or "127.0.0.1"
            self.port = parts.port or 5432
            self.user = unquote(parts.username or "postgres")
            self.password = unquote(parts.password or "")
            psql = shutil.which("psql")
            self.bindir = Path(psql).parent if psql else None
        else:
            launcher = load_fixture("postgres.py")
            # Its own temp dir: as root the server runs as ``postgres``, which must reach it.
            self.server = launcher.PostgresServer.start()
            self.host, self.port = self.server.host, self.server.port
            self.user, self.password = self.server.user, self.server.password
            self.bindir = Path(self.server.bindir)
        # The connector reads the password from the environment, as a user's would.
        self._saved_env = {"PREIMAGE_POSTGRESQL_PASSWORD": os.environ.get(
            "PREIMAGE_POSTGRESQL_PASSWORD")}
        os.environ["PREIMAGE_POSTGRESQL_PASSWORD"] = self.password

    def stop(self) -> None:
        """Stop the server the run started; put the environment back."""
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if self.server is not None:
            self.server.stop()
            self.server = None

    def _psql(self) -> str:
        if self.bindir is not None and (self.bindir / "psql").exists():
            return str(self.bindir / "psql")
        return "psql"

    def psql(self, sql: str, database: str = "postgres") -> CallOutcome:
        """Run ``sql`` with psql, stopping at the first error."""
        env = {**os.environ, "PGHOST": self.host, "PGPORT": str(self.port),
               "PGUSER": self.user, "PGPASSWORD": self.password}
        proc = subprocess.run(
            [self._psql(), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", database],
            input=sql, capture_output=True, text=True, env=env, timeout=300,
        )
        return CallOutcome(proc.returncode, (proc.stdout + proc.stderr)[-2000:])

    def prepare(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """``{pg_db}``, ``{pg_uri}`` and the libpq environment of the run."""
        spec = setup.get("postgres") or {}
        database = str(spec.get("database", "app"))
        sandbox.variables.update(
            pg_db=database, pg_host=self.host, pg_port=str(self.port), pg_user=self.user,
            pg_uri=f"postgresql://{self.user}@{self.host}:{self.port}/{database}",
        )
        sandbox.env.update(
            PGHOST=self.host, PGPORT=str(self.port), PGUSER=self.user,
            PGPASSWORD=self.password, PGDATABASE=database,
        )
        if self.bindir is not None:
            sandbox.env["PATH"] = f"{self.bindir}:{sandbox.env['PATH']}"

    def seed_system(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """Create the scenario's database fresh and run its script."""
        spec = setup.get("postgres") or {}
        database = sandbox.variables["pg_db"]
        dropped = self.psql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE);')
        made = self.psql(f'CREATE DATABASE "{database}";')
        for step in (dropped, made):
            if step.exit_code != 0:
                raise UsageError(f"cannot create database {database}: {step.output.strip()}")
        sql = spec.get("sql")
        if sql:
            done = self.psql(str(sql), database)
            if done.exit_code != 0:
                raise UsageError(f"setup.postgres.sql failed: {done.output.strip()[-600:]}")

    def teardown(self, sandbox: Sandbox) -> None:
        """Drop the run's database (whatever the scenario or the restore left)."""
        database = sandbox.variables.get("pg_db")
        if database:
            self.psql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE);')

    def run_mcp(
        self, server: str, tool: str, arguments: dict[str, Any], sandbox: Sandbox
    ) -> CallOutcome:
        """Run the SQL of a PostgreSQL MCP tool call in the run's database."""
        if tool not in SQL_TOOLS:
            return super().run_mcp(server, tool, arguments, sandbox)
        sql = sql_argument(server, tool, arguments)
        return self.psql(sql, sandbox.variables["pg_db"])

    def mcp_servers(self, sandbox: Sandbox) -> dict[str, dict[str, Any]]:
        """The PostgreSQL MCP server stands behind the run's database."""
        return {"postgres": {"kind": "postgres", "target": sandbox.variables["pg_uri"]}}
