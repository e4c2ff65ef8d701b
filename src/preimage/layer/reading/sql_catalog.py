"""What the database itself says about the tables a statement writes.

SQL text does not show everything a statement changes: a trigger or a rule
on the table runs other statements, a view or a foreign table forwards the
write elsewhere, and a foreign key with ``ON DELETE CASCADE`` (or ``SET
NULL``/``SET DEFAULT``, and the same ``ON UPDATE``) changes the tables that
reference it.  Before a write to named tables is captured, the layer asks
the database's catalog (PostgreSQL's ``pg_class``/``pg_trigger``/
``pg_rewrite``/``pg_constraint``, SQLite's ``sqlite_master`` and
``foreign_key_list``):

* a name that is not a plain table, a table with triggers or rules, or one
  with a column whose domain default calls a function (``nextval`` of a
  sequence the table does not own) → the capture widens to the whole
  database, naming the cause;
* tables that cascade from a written table → added to the capture;
* a table without a primary key → a row scope on it becomes the whole table
  (a changed row of a keyless table cannot be told from a new one, so only
  the table restored whole comes back exactly).

A catalog that cannot be read (no permission, a missing database) also
widens to the whole database: unsure means wider.  A server that cannot be
reached is the exception: the capture needs the same server, fails, and the
decision says the call is not backed up.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

_CASCADING = ("c", "n", "d")   # confdeltype/confupdtype: cascade, set null, set default


@dataclass
class TableFacts:
    """What the catalog says about a set of written tables."""

    widen: list[str] = field(default_factory=list)      # causes that need the whole database
    cascades: list[str] = field(default_factory=list)   # more tables the write reaches
    keyless: list[str] = field(default_factory=list)    # no primary key: rows have no identity


def postgres_facts(uri: str, database: str, tables: list[str],
                   references: bool = False) -> TableFacts:
    """Facts about ``tables`` (``schema.name``) in PostgreSQL ``database`` at ``uri``; with
    ``references`` every foreign key to them reaches (``TRUNCATE … CASCADE``), not only the
    cascading ones."""
    from preimage.connectors.postgres.connection import connect
    from preimage.interface.errors import TransientConnectorError
    from preimage.interface.target import Target

    facts = TableFacts()
    try:
        conn = connect(Target.parse(uri), database, autocommit=True)
    except TransientConnectorError:
        return facts  # the server is not there: the capture cannot run either, and says so
    except Exception as exc:  # any other failure to look means the layer cannot narrow
        facts.widen.append(f"the catalog could not be read ({type(exc).__name__})")
        return facts
    try:
        with conn.cursor() as cur:
            cur.execute("SET statement_timeout = '3s'")
            seen = set(tables)
            todo = list(tables)
            while todo:
                name = todo.pop()
                schema, _, rel = name.rpartition(".")
                cur.execute(
                    """SELECT c.oid, c.relkind,
                         EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid
                                 AND NOT t.tgisinternal),
                         EXISTS (SELECT 1 FROM pg_rewrite r WHERE r.ev_class = c.oid
                                 AND r.rulename <> '_RETURN')
                       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                       WHERE n.nspname = %s AND c.relname = %s""", (schema or "public", rel))
                row = cur.fetchone()
                if row is None:
                    continue  # created by the statement: captured as absent
                oid, relkind, triggers, rules = row
                cur.execute("SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = %s "
                            "AND contype = 'p')", (oid,))
                keyed = cur.fetchone()
                if relkind in ("r", "p") and not (keyed and keyed[0]):
                    facts.keyless.append(name)
                if relkind not in ("r", "p"):
                    kind = {"v": "a view", "m": "a materialized view", "f": "a foreign table",
                            "S": "a sequence", "i": "an index", "c": "a type"}.get(relkind, relkind)
                    facts.widen.append(f"`{name}` is {kind}")
                if triggers:
                    facts.widen.append(f"`{name}` has triggers")
                if rules:
                    facts.widen.append(f"`{name}` has rules")
                # a domain's default is not the table's own: when it calls a function
                # (`nextval('free_seq')`) the write changes what the table scope does not hold
                cur.execute(
                    """WITH RECURSIVE doms(typ) AS (
                         SELECT a.atttypid FROM pg_attribute a
                         WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped
                         UNION SELECT t.typbasetype FROM pg_type t JOIN doms d ON t.oid = d.typ
                         WHERE t.typtype = 'd')
                       SELECT format_type(t.oid, NULL), t.typdefault
                       FROM pg_type t JOIN doms d ON t.oid = d.typ
                       WHERE t.typtype = 'd' AND t.typdefault LIKE '%%(%%'
                       ORDER BY 1""", (oid,))
                for domain, default in cur.fetchall():
                    facts.widen.append(f"`{name}` has a column of domain `{domain}`, whose "
                                       f"default `{default}` calls a function")
                cur.execute(
                    """SELECT DISTINCT n.nspname || '.' || c.relname
                       FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
                       JOIN pg_namespace n ON n.oid = c.relnamespace
                       WHERE k.contype = 'f' AND k.confrelid = %s
                         AND (%s OR k.confdeltype = ANY(%s) OR k.confupdtype = ANY(%s))""",
                    (oid, references, list(_CASCADING), list(_CASCADING)))
                for (child,) in cur.fetchall():
                    if child not in seen:
                        seen.add(child)
                        todo.append(child)
                        facts.cascades.append(child)
    except Exception as exc:  # a catalog query that fails leaves the layer unsure
        facts.widen.append(f"the catalog could not be read ({type(exc).__name__})")
    finally:
        conn.close()
    return facts


def sqlite_facts(path: str, tables: list[str], references: bool = False) -> TableFacts:
    """Facts about ``tables`` in the SQLite file at ``path`` (read-only, never created)."""
    facts = TableFacts()
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
    except sqlite3.Error as exc:
        facts.widen.append(f"the catalog could not be read ({exc})")
        return facts
    try:
        rows = db.execute("SELECT type, name, tbl_name FROM sqlite_master").fetchall()
        kinds = {name.lower(): typ for typ, name, _ in rows if typ in ("table", "view")}
        triggered = {tbl.lower() for typ, _, tbl in rows if typ == "trigger"}
        children: dict[str, set[str]] = {}
        for name, typ in kinds.items():
            if typ != "table":
                continue
            for fk in db.execute(f"PRAGMA foreign_key_list({_quote(name)})").fetchall():
                on_update, on_delete = str(fk[5]).upper(), str(fk[6]).upper()
                if references or on_update in ("CASCADE", "SET NULL", "SET DEFAULT") or \
                        on_delete in ("CASCADE", "SET NULL", "SET DEFAULT"):
                    children.setdefault(str(fk[2]).lower(), set()).add(name)
        seen = {t.lower() for t in tables}
        todo = list(seen)
        while todo:
            name = todo.pop()
            if kinds.get(name) == "view":
                facts.widen.append(f"`{name}` is a view")
            if name in triggered:
                facts.widen.append(f"`{name}` has triggers")
            for child in sorted(children.get(name, ())):
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
                    facts.cascades.append(child)
    except sqlite3.Error as exc:
        facts.widen.append(f"the catalog could not be read ({exc})")
    finally:
        db.close()
    return facts


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
