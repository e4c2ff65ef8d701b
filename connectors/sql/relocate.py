"""A SQLite file or a MySQL/MariaDB database re-addressed to another one (``restore
--to``, ``score --against``).

Tables, rows and objects are named inside their database, so the snapshot moves
by its target: the destination URI, with the source's table or row scope when
the destination names none.  MySQL/MariaDB keep the database itself as an object
(``SHOW CREATE DATABASE``): its name and the name in its DDL become the
destination's — the one identity mapped; a comparison rewrites the name in the
capture's schema oracle (``mariadb-dump``: ```name```, ``database 'name'``) too.
Refused: another dialect, and the source database itself (the same file, or the same
server and database).
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import urlencode

from preimage.connectors.sql.address import SCOPE_PARAMS
from preimage.connectors.sql.mysql import MYSQL_DIALECTS
from preimage.interface.errors import UsageError
from preimage.interface.target import Target
from preimage.restoration import IdentityMapping, Relocation, rewrite_oracle
from preimage.snapshot_schemas.sql import SqlObject, SqlSnapshot


def _family(scheme: str) -> str:
    dialect = scheme.split("+", 1)[0]
    return "mysql" if dialect in MYSQL_DIALECTS else dialect


def _file(target: Target) -> str:
    """A SQLite target's file, absolute (``sqlite:////abs/x.db`` or ``sqlite:///rel.db``)."""
    return os.path.abspath(target.path[1:] if target.path.startswith("/") else target.path)


def _place(target: Target) -> tuple[str, ...]:
    """What makes two targets one database: the file, or server and database name."""
    if target.scheme == "sqlite":
        return ("sqlite", os.path.realpath(_file(target)))
    return (_family(target.scheme), target.host or "", str(target.port or ""),
            target.path.strip("/"))


def _scoped(destination: Target, source: Target) -> str:
    """The destination URI, given the source's table or row scope if it names none."""
    if any(destination.param(p) is not None for p in SCOPE_PARAMS):
        return destination.redacted
    scope = [(p, v) for p in sorted(SCOPE_PARAMS) if (v := source.param(p)) is not None]
    if not scope:
        return destination.redacted
    return destination.redacted + ("&" if "?" in destination.redacted else "?") + urlencode(scope)


def _oracle_rewrite(old: str, new: str) -> Any:
    quoted = ("`" + old.replace("`", "``") + "`", "`" + new.replace("`", "``") + "`")
    named = (f"database '{old}'", f"database '{new}'")
    return lambda line: line.replace(*quoted).replace(*named)


def relocate_database(
    snapshot: SqlSnapshot, destination: Target, blobs: Any | None = None
) -> Relocation:
    """``snapshot`` as a capture of ``destination`` (see the module docstring)."""
    source = Target.parse(snapshot.target)
    if _family(destination.scheme) != _family(source.scheme):
        raise UsageError(
            f"{destination.redacted}: a {snapshot.dialect} backup restores into a "
            f"{_family(source.scheme)} target, not {destination.scheme}"
        )
    if _place(destination) == _place(source):
        raise UsageError(
            f"--to {destination.redacted} is the backup's own database ({snapshot.target}); "
            "restore in place without --to, or name another database. Nothing was written"
        )
    if destination.scheme == "sqlite":
        query = destination.uri.split("?", 1)[1] if "?" in destination.uri else ""
        destination = Target.parse("sqlite:///" + _file(destination) + ("?" + query if query else ""))
    target = _scoped(destination, source)
    mappings: list[IdentityMapping] = []
    items: list[Any] = list(snapshot.items)
    old_db, new_db = source.path.strip("/"), destination.path.strip("/")
    if destination.scheme == "sqlite":
        mappings.append(IdentityMapping(what="database file", old=_file(source),
                                        new=_file(destination)))
    elif old_db != new_db:
        mappings.append(IdentityMapping(what="database", old=old_db, new=new_db))
        items = [_renamed_database(i, old_db, new_db) for i in items]
        oracle = rewrite_oracle(snapshot.oracle, _oracle_rewrite(old_db, new_db), blobs)
        moved = snapshot.model_copy(update={"target": target, "items": items, "oracle": oracle})
        return Relocation(moved, tuple(mappings))
    moved = snapshot.model_copy(update={"target": target, "items": items})
    return Relocation(moved, tuple(mappings))


def _renamed_database(item: Any, old: str, new: str) -> Any:
    """The database object of a MySQL/MariaDB snapshot under its new name."""
    if not isinstance(item, SqlObject) or item.kind != "database" or item.name != old:
        return item
    quoted = "`" + new.replace("`", "``") + "`"
    ddl = re.sub(r"^(CREATE DATABASE (?:/\*!32312 IF NOT EXISTS\*/ )?)`(?:[^`]|``)*`",
                 lambda m: m.group(1) + quoted, item.ddl, count=1)
    return item.model_copy(update={"name": new, "ddl": ddl})
