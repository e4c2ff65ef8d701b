"""The schema oracle: ``pg_dump --schema-only`` of the target, in the capture's own snapshot.

The capture reads the catalogs with its own queries, so a kind it does not read (or reads
wrongly) would go unnoticed by a meter that compares the capture with itself.  PostgreSQL's
own dump tool is an outside reader: while the capture transaction is open, ``pg_dump``
imports its snapshot (``pg_export_snapshot()`` → ``--snapshot``) and dumps the schema of
the same moment — a whole database with ``--create`` (database settings, grants and
``ALTER ROLE … IN DATABASE … SET`` included), a schema target with ``-n``, a table target
with ``-t``.  A row scope has no oracle: it holds rows only.

Its output is normalized (:func:`normalize`) and kept compressed in the blob store; the
score compares it with the live schema dumped the same way (see
:mod:`preimage.similarity.oracle`).  Normalized away is only what legitimately differs
between two dumps of the same schema: pg_dump's own comment lines (versions, times, TOC
numbers and OIDs in verbose output), the random ``\\restrict`` key, blank lines, and the
order of the options in a ``WITH (…)`` list.

The tool is the server's major version's ``pg_dump`` from the Debian-style version
directories, else the newest there, else ``pg_dump`` on ``PATH``; a ``pg_dump`` older than
the server refuses to run, and the record says so.  The password reaches ``pg_dump``
through its environment only.  ``pg_dump`` waits at most :data:`LOCK_WAIT` for a table lock
(a waiting ``ALTER`` must not deadlock against the capture); when it cannot run, the
snapshot records why and the score says the oracle did not run.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
from typing import Any

from preimage.connectors.postgres.scope import PgScope
from preimage.interface.dump_run import DumpRun, spawn
from preimage.snapshot_schemas.oracle import SchemaOracle

Cursor = Any

LOCK_WAIT = "10s"
TIMEOUT = 300  # seconds: a schema dump that takes longer is stopped (the record says so)
OFF = "switched off (PREIMAGE_SCHEMA_ORACLE=off)"


def switched_off() -> bool:
    """``PREIMAGE_SCHEMA_ORACLE=off``: no dump beside the capture (the score says so)."""
    return os.environ.get("PREIMAGE_SCHEMA_ORACLE", "").lower() in ("off", "0", "no")
# Connection parameters pg_dump's libpq knows (as for the psql reader), and defaults left out.
_PARAMS = frozenset({
    "host", "hostaddr", "port", "dbname", "user", "options", "application_name",
    "connect_timeout", "sslmode", "sslrootcert", "sslcert", "sslkey", "sslcrl",
    "requirepeer", "krbsrvname", "gssencmode", "channel_binding", "target_session_attrs"})
_DEFAULTS = {"sslcertmode": "allow"}

# pg_dump's own comment lines: about the dump, not the database.
_DUMP_COMMENTS = ("-- PostgreSQL database dump", "-- Dumped from ", "-- Dumped by ",
                  "-- TOC entry ", "-- Dependencies:", "-- Started on ", "-- Completed on ")
_HEADER = re.compile(r"^-- (?:Data for )?Name: (.*); Type: (.*); Schema: (.*); Owner: .*$")
_WITH = re.compile(r"WITH \(([^()]*)\)")


def find_pg_dump(server_major: int) -> str | None:
    """The ``pg_dump`` to use for a server of ``server_major`` (see the module docstring)."""
    versioned = {}
    for path in glob.glob("/usr/lib/postgresql/*/bin/pg_dump"):
        version = path.split("/")[-3]
        if version.isdigit() and os.access(path, os.X_OK):
            versioned[int(version)] = path
    if server_major in versioned:
        return versioned[server_major]
    newer = [v for v in versioned if v > server_major]
    if newer:
        return versioned[min(newer)]
    return shutil.which("pg_dump")


@functools.lru_cache(maxsize=8)
def tool_version(program: str) -> str:
    """``pg_dump 15.10`` as the program names itself (``pg_dump`` when it will not say)."""
    try:
        proc = subprocess.run([program, "--version"], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "pg_dump"
    found = re.search(r"\d+(?:\.\d+)+", proc.stdout)  # "pg_dump (PostgreSQL) 15.18 (Debian …)"
    return f"pg_dump {found.group()}" if proc.returncode == 0 and found else "pg_dump"


def _quoted(name: str) -> str:
    """A name as a pg_dump pattern matching exactly it (no wildcards)."""
    return '"' + name.replace('"', '""') + '"'


def _scope_args(scope: PgScope) -> list[str]:
    if scope.scope == "database":
        return ["--create"]
    if scope.scope == "schema":
        return [arg for name in scope.names for arg in ("-n", _quoted(name))]
    out = []
    for name in scope.names:
        schema, table = name.split(".", 1)
        out += ["-t", f"{_quoted(schema)}.{_quoted(table)}"]
    return out


def start(cur: Cursor, scope: PgScope) -> DumpRun | SchemaOracle | None:
    """Start ``pg_dump`` in the capture transaction's snapshot: a :class:`DumpRun` to
    :meth:`~DumpRun.finish` before the transaction ends, a :class:`SchemaOracle` saying why
    it could not start, or ``None`` for a row scope (no schema to compare)."""
    from psycopg.conninfo import make_conninfo

    if scope.scope == "rows":
        return None
    if switched_off():
        return SchemaOracle(tool="pg_dump", reason=OFF)
    conn = cur.connection
    program = find_pg_dump(conn.info.server_version // 10000)
    if program is None:
        return SchemaOracle(tool="pg_dump", reason="pg_dump was not found on this machine "
                            "(install PostgreSQL's client programs to compare schemas)")
    tool = tool_version(program)
    params = {k: v for k, v in conn.info.get_parameters().items()
              if k != "password" and _DEFAULTS.get(k) != v}
    if set(params) - _PARAMS:
        unknown = ", ".join(sorted(set(params) - _PARAMS))
        return SchemaOracle(tool=tool, reason=f"the connection uses {unknown}, which is not "
                            "passed on to pg_dump")
    cur.execute("SELECT pg_catalog.pg_is_in_recovery() AS standby")
    if cur.fetchone()["standby"]:
        return SchemaOracle(tool=tool, reason="the server is a standby (no snapshot to share)")
    cur.execute("SELECT pg_catalog.pg_export_snapshot() AS snapshot")
    snapshot = cur.fetchone()["snapshot"]
    env = dict(os.environ)
    env.pop("PGPASSWORD", None)
    if conn.info.password:
        env["PGPASSWORD"] = conn.info.password  # never in the arguments: others can read those
    args = [program, "--schema-only", "--no-password", f"--snapshot={snapshot}",
            f"--lock-wait-timeout={LOCK_WAIT}", *_scope_args(scope),
            "-d", make_conninfo("", **params)]
    return spawn(tool, args, env, normalize, TIMEOUT)


def normalize(text: str) -> list[str]:
    """pg_dump's output as ``entry<TAB>line`` lines: each statement line under the name of
    the TOC entry it belongs to (``TABLE app.items``, ``COMMENT app.COLUMN items.qty``),
    without pg_dump's own comments and blank lines, ``WITH (…)`` options sorted."""
    out = []
    entry = "(preamble)"
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            name, kind, schema = header.groups()
            entry = f"{kind} {name}" if schema == "-" else f"{kind} {schema}.{name}"
            continue
        if (not line.strip() or line == "--" or line.startswith(_DUMP_COMMENTS)
                or line.startswith(("\\restrict ", "\\unrestrict "))):
            continue
        out.append(f"{entry}\t{_WITH.sub(_sorted_options, line)}")
    return out


def _sorted_options(match: re.Match[str]) -> str:
    return f"WITH ({', '.join(sorted(split_list(match.group(1))))})"


def split_list(text: str) -> list[str]:
    """``a='1', b='x, y'`` → ``["a='1'", "b='x, y'"]``: commas inside quotes stay."""
    parts, current, quote = [], [], ""
    for ch in text:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
            current.append(ch)
        elif ch == ",":
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    parts.append("".join(current).strip())
    return [p for p in parts if p]
