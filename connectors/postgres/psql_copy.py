"""Reading a big table's rows with ``psql``, inside the capture's own snapshot.

libpq hands ``COPY`` data over one row per call, and in Python each call costs
more than the server spends producing the row: a table of small rows is read
several times slower than ``pg_dump`` reads it.  So a big table (at least
:data:`MIN_BYTES` on disk) is read the way ``pg_dump -j`` reads one: by another
session that imports the capture transaction's snapshot
(``pg_export_snapshot()``, then ``SET TRANSACTION SNAPSHOT`` in a ``REPEATABLE
READ`` transaction) — here ``psql``, whose output is read in big chunks.  Its
``ctid, xmin`` record comes at the same time from a second ``psql`` in the same
snapshot, written straight to a file in ``COPY``'s binary form (text takes the
server twice as long to write): the same plain scan from the first page
of the same table under the same snapshot yields the same row versions in the
same order, so the two stay line for line (the counts are checked).  Both
sessions get the capture session's settings that shape ``COPY`` text (encoding,
date, interval, float and bytea styles, time zone, search path) and read in
storage order (synchronized scans and parallel workers off).

The password goes to ``psql`` through its environment only, never its
arguments.  Without ``psql`` (looked for in the Debian-style version directories, then on
``PATH``), on a standby, or when a ``psql`` session fails or cannot take its
table lock at once (``NOWAIT``: a waiting ``ALTER`` must not deadlock against
the capture), the caller reads in process: both readers produce the same bytes.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

MIN_BYTES = 8 << 20  # smaller tables are read in process: a psql start costs more than it saves
_CHUNK = 1 << 20
# Settings that shape COPY's text, or which rows a scan returns and in what order.
_SETTINGS = ("client_encoding", "DateStyle", "IntervalStyle", "TimeZone", "extra_float_digits",
             "bytea_output", "lc_monetary", "search_path", "row_security",
             "synchronize_seqscans", "max_parallel_workers_per_gather")

# Connection parameters passed on to psql (libpq has known them for years) and those left
# out at the value every libpq takes by default anyway.
_PARAMS = frozenset({
    "host", "hostaddr", "port", "dbname", "user", "options", "application_name",
    "connect_timeout", "sslmode", "sslrootcert", "sslcert", "sslkey", "sslcrl",
    "requirepeer", "krbsrvname", "gssencmode", "channel_binding", "target_session_attrs"})
_DEFAULTS = {"sslcertmode": "allow"}

Cursor = Any


class PsqlCopyError(Exception):
    """A ``psql`` reader failed; the caller reads in process instead."""


@dataclass(frozen=True)
class PsqlSession:
    """How to open ``psql`` sessions that see what the capture transaction sees."""

    program: str
    conninfo: str
    env: dict[str, str]
    setup: list[str]  # statements run first in each session's transaction

    def _args(self, sql: list[str]) -> list[str]:
        # -w: never prompt for a password (on the terminal, where nobody may answer)
        args = [self.program, "-X", "-q", "-w", "-v", "ON_ERROR_STOP=1", "-d", self.conninfo]
        for statement in [*self.setup, *sql]:
            args += ["-c", statement]
        return args

    @contextmanager
    def copy(self, lock: str, data_sql: str, system_sql: str,
             system: IO[bytes]) -> Iterator[Iterator[bytes]]:
        """Run ``data_sql`` and ``system_sql`` (two ``COPY … TO STDOUT``) at once: yield an
        iterator over the first's bytes, in chunks; the second's go to ``system``.

        Raises :class:`PsqlCopyError` when ``psql`` cannot be run, or (when the iterator is
        exhausted) when either session failed."""
        locking = f"LOCK TABLE ONLY {lock} IN ACCESS SHARE MODE NOWAIT"
        with tempfile.TemporaryFile() as err_data, tempfile.TemporaryFile() as err_system:
            try:
                side = subprocess.Popen(self._args([locking, system_sql]), env=self.env,
                                        stdin=subprocess.DEVNULL, stdout=system,
                                        stderr=err_system)
            except OSError as exc:
                raise PsqlCopyError(f"cannot run {self.program}: {exc.strerror}") from exc
            try:
                main = subprocess.Popen(self._args([locking, data_sql]), env=self.env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=err_data)
            except OSError as exc:
                side.kill()
                side.wait()
                raise PsqlCopyError(f"cannot run {self.program}: {exc.strerror}") from exc
            try:
                yield self._read(main, side, err_data, err_system)
            finally:
                for proc in (main, side):
                    if proc.poll() is None:
                        proc.kill()
                    proc.wait()
                if main.stdout is not None:
                    main.stdout.close()

    @staticmethod
    def _read(main: subprocess.Popen[bytes], side: subprocess.Popen[bytes],
              err_data: IO[bytes], err_system: IO[bytes]) -> Iterator[bytes]:
        assert main.stdout is not None
        while chunk := main.stdout.read(_CHUNK):
            yield chunk
        for proc, err in ((main, err_data), (side, err_system)):
            if proc.wait() != 0:
                err.seek(0)
                lines = err.read().decode(errors="replace").strip().splitlines()
                raise PsqlCopyError(lines[-1] if lines else f"psql exited with {proc.returncode}")


def find_psql(server_major: int) -> str | None:
    """The ``psql`` program: the server's major version's from the Debian-style version
    directories (``pg_wrapper`` on ``PATH`` costs a Perl start per call), else the newest
    there, else ``psql`` on ``PATH``; ``None`` when there is none."""
    versioned = {}
    for path in glob.glob("/usr/lib/postgresql/*/bin/psql"):
        version = path.split("/")[-3]
        if version.isdigit() and os.access(path, os.X_OK):
            versioned[int(version)] = path
    if server_major in versioned:
        return versioned[server_major]
    if versioned:
        return versioned[max(versioned)]
    return shutil.which("psql")


def open_session(cur: Cursor) -> PsqlSession | None:
    """Export the capture transaction's snapshot for ``psql`` sessions; ``None`` when there
    is no ``psql``, the connection uses a parameter not passed on, or the server is a
    standby (the transaction is left as it was then)."""
    from psycopg.conninfo import make_conninfo

    conn = cur.connection
    program = find_psql(conn.info.server_version // 10000)
    params = {k: v for k, v in conn.info.get_parameters().items()
              if k != "password" and _DEFAULTS.get(k) != v}
    if program is None or set(params) - _PARAMS:
        return None  # psql's libpq may not know a parameter, and leaving it out could weaken
    cur.execute("SELECT pg_catalog.pg_is_in_recovery() AS standby")
    if cur.fetchone()["standby"]:
        return None
    settings = copy_settings(cur)
    cur.execute("SELECT pg_catalog.pg_export_snapshot() AS snapshot")
    snapshot = cur.fetchone()["snapshot"]
    env = dict(os.environ)
    if conn.info.password:
        env["PGPASSWORD"] = conn.info.password  # never in the arguments: others can read those
    return PsqlSession(
        program=program,
        conninfo=make_conninfo("", **params),
        env=env,
        setup=["BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
               f"SET TRANSACTION SNAPSHOT {_literal(snapshot)}", "; ".join(settings)],
    )


def copy_settings(cur: Cursor) -> list[str]:
    """``SET`` statements giving another session this session's settings that shape
    ``COPY`` text and the order of a scan."""
    cur.execute("SELECT name, setting FROM pg_catalog.pg_settings WHERE name = ANY(%s) "
                "ORDER BY name", (list(_SETTINGS),))
    return [f"SET {r['name']} TO {_literal(r['setting'])}" for r in cur.fetchall()]


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def big_tables(cur: Cursor, oids: list[int]) -> set[int]:
    """The tables among ``oids`` of at least :data:`MIN_BYTES` (main fork)."""
    if not oids:
        return set()
    cur.execute("SELECT o AS oid FROM unnest(%s::oid[]) AS o "
                "WHERE pg_catalog.pg_relation_size(o) >= %s", (oids, MIN_BYTES))
    return {r["oid"] for r in cur.fetchall()}
