"""A PostgreSQL capture re-addressed to another database (``restore --to``, ``score
--against``), on the same server or another one.

Objects are named inside their database (schema-qualified, with an empty
``search_path``), so the snapshot moves by its database: the target URI (with the
source's scope — ``?schema=``, ``?tables=``, a row scope — when the destination
names none), ``database``, and the database item's name (a whole-database restore
creates it when missing, with the captured owner, encoding, collation and
settings).  Mapped: the database name; OIDs differ anyway (``server`` class).

The capture's schema oracle (``pg_dump --create``) names the database in its
``DATABASE``, ``DATABASE PROPERTIES``, ``COMMENT ON DATABASE`` and ``\\connect`` lines: a
comparison rewrites those names too, so the dump of the destination is compared line for
line.

Refused, with the reason: the source database itself, and another scope than the
source's (a schema renamed on the way: every definition names its schema, and
rewriting SQL text is not done here — restore into another database instead).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from preimage.connectors.postgres.scope import parse_scope
from preimage.interface.errors import UsageError
from preimage.interface.target import Target
from preimage.restoration import IdentityMapping, Relocation, rewrite_oracle
from preimage.snapshot_schemas.postgres import PgDatabase, PostgresSnapshot

_SCOPE = ("schema", "tables", "table", "where")


_PLAIN = re.compile(r"[a-z_][a-z0-9_$]*\Z")


def _ident(name: str) -> str:
    """``name`` as pg_dump prints an identifier (quoted unless plain lower case)."""
    return name if _PLAIN.match(name) else '"' + name.replace('"', '""') + '"'


def _oracle_rewrite(old: str, new: str) -> Any:
    pattern = re.compile(r"(DATABASE (?:PROPERTIES )?|\\connect )" + re.escape(_ident(old))
                         + r"(?=[\s;]|$)")
    return lambda line: pattern.sub(lambda m: m.group(1) + _ident(new), line)


def relocate_database(
    snapshot: PostgresSnapshot, destination: Target, blobs: Any | None = None
) -> Relocation:
    """``snapshot`` as a capture of ``destination`` (see the module docstring)."""
    if destination.scheme not in ("postgresql", "postgres"):
        raise UsageError(f"{destination.redacted}: a PostgreSQL backup restores into a "
                         "postgresql:// target")
    source = Target.parse(snapshot.target)
    given = [(p, v) for p in _SCOPE if (v := destination.param(p)) is not None]
    if not given:
        scope = [(p, v) for p in _SCOPE if (v := source.param(p)) is not None]
        uri = destination.redacted + (("&" if "?" in destination.redacted else "?")
                                      + urlencode(scope) if scope else "")
        destination = Target.parse(uri)
    mine, theirs = parse_scope(source), parse_scope(destination)
    if (theirs.scope, theirs.names) != (mine.scope, mine.names):
        raise UsageError(
            f"--to {destination.redacted}: the backup holds {mine.scope} "
            f"{','.join(mine.names) or snapshot.database}; a PostgreSQL backup moves to another "
            "database with the same scope (definitions name their schemas, so a schema is not "
            "renamed on the way). Nothing was written"
        )
    same_server = (destination.host or "", destination.port) == (source.host or "", source.port)
    if same_server and theirs.database == mine.database:
        raise UsageError(
            f"--to {destination.redacted} is the backup's own database ({snapshot.target}); "
            "restore in place without --to, or name another database. Nothing was written"
        )
    items = [i.model_copy(update={"name": theirs.database})
             if isinstance(i, PgDatabase) and i.name == mine.database else i
             for i in snapshot.items]
    oracle = snapshot.oracle
    if theirs.database != mine.database:
        oracle = rewrite_oracle(oracle, _oracle_rewrite(mine.database, theirs.database), blobs)
    moved = snapshot.model_copy(update={
        "target": destination.redacted, "database": theirs.database, "items": items,
        "oracle": oracle,
    })
    mappings = []
    if theirs.database != mine.database:
        mappings.append(IdentityMapping(what="database", old=mine.database, new=theirs.database))
    if not same_server:
        mappings.append(IdentityMapping(
            what="server", old=f"{source.host}:{source.port or 5432}",
            new=f"{destination.host}:{destination.port or 5432}"))
    return Relocation(moved, tuple(mappings))
