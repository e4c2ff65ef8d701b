"""The schema oracle for MySQL/MariaDB: the server's own dump tool beside the capture.

As for PostgreSQL (:mod:`preimage.connectors.postgres.oracle`), the capture's own reading
is checked by a tool nobody here wrote: ``mariadb-dump`` (``mysqldump`` for MySQL) with
``--no-data --routines --triggers --events`` for a whole database (``--databases``, so the
database's character set is in it), or ``--no-data --triggers`` and the table names for a
table target.  A row scope has none.  MySQL cannot share a transaction's snapshot with
another session, so the dump runs beside the capture in its own ``--single-transaction``
(a schema change in between shows as a difference: the score fails closed).

Its output is normalized (:func:`normalize`) and kept compressed in the blob store;
``score`` compares it with the live schema dumped the same way
(:mod:`preimage.similarity.oracle`).  Normalized away: the dump's own comment lines
(host, versions, completion) and blank lines; each remaining line is named by the dump
section it is in (``Table structure for table `t```, ``Dumping routines …``).  The password
reaches the tool through ``MYSQL_PWD`` only, never its arguments.  Without the tool, or
when it fails, the snapshot records why and the score says the oracle did not run.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess

from preimage.interface.dump_run import DumpRun, spawn
from preimage.interface.target import Target
from preimage.snapshot_schemas.oracle import SchemaOracle

# The dump's comment lines about the dump itself, not the schema.
_NOISE = ("-- MariaDB dump", "-- MySQL dump", "-- Host:", "-- Server version",
          "-- Dump completed", "-- ------")
_SECTION = re.compile(r"^-- (.+)$")
_TIMEOUT = 300
OFF = "switched off (PREIMAGE_SCHEMA_ORACLE=off)"


def switched_off() -> bool:
    """``PREIMAGE_SCHEMA_ORACLE=off``: no dump beside the capture (the score says so)."""
    return os.environ.get("PREIMAGE_SCHEMA_ORACLE", "").lower() in ("off", "0", "no")


def find_dump_tool(mariadb: bool) -> str | None:
    """``mariadb-dump`` for MariaDB (``mysqldump`` where it is the only one), ``mysqldump``
    for MySQL; ``None`` when neither is on ``PATH``."""
    names = ("mariadb-dump", "mysqldump") if mariadb else ("mysqldump", "mariadb-dump")
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


@functools.lru_cache(maxsize=8)
def tool_version(program: str) -> str:
    """``mariadb-dump 10.11.6`` as the program names itself (its name alone otherwise)."""
    name = os.path.basename(program)
    try:
        proc = subprocess.run([program, "--version"], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return name
    found = re.search(r"(?:Distrib|Ver) (\d+(?:\.\d+)+)", proc.stdout)
    return f"{name} {found.group(1)}" if proc.returncode == 0 and found else name


def start(target: Target, database: str, tables: list[str] | None, *,
          mariadb: bool) -> DumpRun | SchemaOracle:
    """Start the dump of ``database`` (``tables``: only those, with their triggers)."""
    if switched_off():
        return SchemaOracle(tool="mariadb-dump" if mariadb else "mysqldump", reason=OFF)
    program = find_dump_tool(mariadb)
    if program is None:
        return SchemaOracle(tool="mariadb-dump" if mariadb else "mysqldump", reason=(
            "no mariadb-dump or mysqldump on this machine (install the server's client "
            "programs to compare schemas)"))
    tool = tool_version(program)
    args = [program, "--no-data", "--triggers", "--single-transaction", "--skip-dump-date",
            "--no-tablespaces", f"--host={target.host or 'localhost'}"]
    if target.port:
        args += [f"--port={int(target.port)}", "--protocol=TCP"]
    if target.username:
        args.append(f"--user={target.username}")
    if tables is None:
        args += ["--routines", "--events", "--databases", database]
    else:
        args += [database, *tables]
    env = dict(os.environ)
    env.pop("MYSQL_PWD", None)
    password = target.resolve_password()
    if password is not None:
        env["MYSQL_PWD"] = password  # never in the arguments: others can read those
    return spawn(tool, args, env, normalize, _TIMEOUT)


def normalize(text: str) -> list[str]:
    """The dump as ``section<TAB>line`` lines, without its own comments and blank lines."""
    out = []
    section = "(preamble)"
    for line in text.splitlines():
        if not line.strip() or line == "--" or line.startswith(_NOISE):
            continue
        header = _SECTION.match(line)
        if header:
            section = header.group(1)
            continue
        out.append(f"{section}\t{line}")
    return out
