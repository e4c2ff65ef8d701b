"""What a piece of SQL changes, read with sqlglot (never by pattern alone).

Each statement becomes one or more :class:`SqlEffect` s: read-only, a set of
tables, a row scope (``DELETE``/``UPDATE`` with a ``WHERE`` on one table), a
schema, the whole database, or another database (``DROP DATABASE``).  A
``SELECT`` is read-only only when it is proven so: data-changing statements
inside it (``WITH d AS (DELETE … RETURNING *) SELECT …``) count as theirs, and
a call of any function outside the engine's known side-effect-free built-ins
(``SELECT purge_all()``, ``nextval``, ``query_to_xml``) captures the whole
database, naming the function.  Statements sqlglot cannot model are
classified by their leading keywords; anything still unclear is treated as
touching the whole database.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from preimage.layer.decision import Impact

Kind = Literal["read", "tables", "rows", "schema", "database", "other-database"]
_READ_KEYWORDS = ("SELECT", "SHOW", "EXPLAIN", "WITH", "VALUES", "TABLE", "BEGIN", "COMMIT",
                  "ROLLBACK", "START", "SAVEPOINT", "RELEASE", "SET", "RESET", "LISTEN",
                  "UNLISTEN", "NOTIFY", "PREPARE", "DEALLOCATE", "DISCARD", "LOCK", "CHECKPOINT",
                  "VACUUM", "ANALYZE", "ANALYSE", "REINDEX", "CLUSTER", "FETCH", "CLOSE",
                  "DECLARE", "MOVE", "PRAGMA", "DESCRIBE", "DESC", "USE", "END", "ABORT", "LOAD")
_FUNCTION_LISTS = {"postgres": "postgres_functions.txt", "sqlite": "sqlite_functions.txt"}


@dataclass
class SqlEffect:
    """One statement's effect."""

    kind: Kind
    impact: Impact = Impact.NONE
    tables: list[str] = field(default_factory=list)
    where: str | None = None
    schema: str | None = None
    database: str | None = None
    wide: bool = False
    note: str = ""
    forced_by: list[str] = field(default_factory=list)  # what made the scope wider
    search_path: list[str] | None = None  # set by a SET search_path statement
    references: bool = False  # reaches every table with a foreign key to these (TRUNCATE CASCADE)


@lru_cache(maxsize=4)
def known_functions(dialect: str) -> frozenset[str] | None:
    """Built-in functions of ``dialect`` that change no stored state (``None``: no list)."""
    name = _FUNCTION_LISTS.get(dialect)
    if name is None:
        return None
    text = (resources.files("preimage.layer") / "data" / name).read_text()
    return frozenset(ln.strip().lower() for ln in text.splitlines()
                     if ln.strip() and not ln.startswith("#"))


def unknown_functions(tree: object, dialect: str) -> list[str]:
    """Functions ``tree`` calls that are not known to leave stored state alone.

    Functions sqlglot models as typed expressions (``count``, ``upper``,
    ``coalesce`` …) are standard built-ins; the rest (``exp.Anonymous``) are
    looked up in the engine's list.  Without a list (MySQL) every such
    function is unknown.
    """
    from sqlglot import exp

    assert isinstance(tree, exp.Expression)
    known = known_functions(dialect)
    out: list[str] = []
    for f in tree.find_all(exp.Anonymous):
        name = str(f.name).lower()
        if (known is None or name not in known) and name not in out:
            out.append(name)
    return out


def _name(table: object, default_schema: str | None) -> str:
    from sqlglot import exp

    assert isinstance(table, exp.Table)
    schema = table.db or default_schema
    return f"{schema}.{table.name}" if schema else table.name


def _strip_alias(where: object, table: object) -> str:
    """The predicate with the target table's alias and name qualifiers removed."""
    from sqlglot import exp

    assert isinstance(where, exp.Expression) and isinstance(table, exp.Table)
    names = {table.name, table.alias_or_name}
    pred = where.copy()
    for col in pred.find_all(exp.Column):
        if col.table in names:
            col.set("table", None)
            col.set("db", None)
    return pred.sql(dialect="postgres")


def _folded(name: str) -> str:
    """A PostgreSQL name as the server reads it: quoted kept as written, else lower case."""
    if len(name) > 1 and name[0] == name[-1] and name[0] in "'\"":
        return name[1:-1].replace(name[0] * 2, name[0])
    return name.lower()


def _first_keywords(sql: str) -> list[str]:
    return re.findall(r"[A-Za-z_]+", sql.upper())[:4]


def _by_keywords(sql: str, default_schema: str | None) -> SqlEffect:
    words = _first_keywords(sql)
    if not words:
        return SqlEffect("read")
    head = words[0]
    if head in ("CREATE", "DROP", "ALTER") and len(words) > 1 and words[1] in ("ROLE", "USER",
                                                                               "GROUP"):
        if head == "ALTER" and re.search(r"\bRENAME\b", sql, re.I):
            return SqlEffect("database", Impact.NORMAL, forced_by=["ALTER ROLE … RENAME"],
                             note="renaming a role renames it in every owner and grant of the "
                             "database; the whole database is captured")
        return SqlEffect("read", note=f"{head} {words[1]} changes the cluster's roles, which "
                         "preimage does not capture (no database holds them)")
    if head == "EXPLAIN" and "ANALYZE" not in words[1:3]:
        return SqlEffect("read")
    if head in ("VACUUM", "ANALYZE", "ANALYSE") and "FULL" not in words:
        return SqlEffect("read")
    if head == "DISCARD" and len(words) > 1 and words[1] in ("ALL", "TEMP", "TEMPORARY"):
        return SqlEffect("database", Impact.NORMAL, forced_by=[f"DISCARD {words[1]}"],
                         note=f"DISCARD {words[1]} drops the session's temporary objects and "
                         "every object that depends on one (a function or view reading a "
                         "temporary table); the whole database is captured")
    if head in _READ_KEYWORDS and head not in ("EXPLAIN",):
        return SqlEffect("read")
    if head == "REFRESH":
        m = re.search(r"VIEW\s+(?:CONCURRENTLY\s+)?([\w.\"]+)", sql, re.I)
        if m:
            name = ".".join(_folded(part) for part in m.group(1).split("."))
            if "." not in name and default_schema:
                name = f"{default_schema}.{name}"
            return SqlEffect("tables", Impact.NORMAL, [name])
    return SqlEffect("database", Impact.HIGH if head in ("DROP", "TRUNCATE", "DELETE") else
                     Impact.NORMAL, note=f"`{' '.join(words[:2])}` is not modelled statement by "
                     "statement; the whole database is captured",
                     forced_by=[f"statement `{' '.join(words[:2])}`"])


def analyze_sql(sql: str, dialect: str = "postgres",
                default_schema: str | None = None) -> list[SqlEffect]:
    """The effects of every statement in ``sql`` (at least one per statement).

    Unqualified names are in ``default_schema`` (PostgreSQL: ``public``) until
    a ``SET search_path`` in the text says otherwise; that statement's effect
    carries the path, so a caller can remember it for the session.
    """
    import sqlglot

    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    if default_schema is None and dialect == "postgres":
        default_schema = "public"
    out: list[SqlEffect] = []
    for stmt in _split(sql):
        if not stmt.strip():
            continue
        explain = re.match(r"\s*EXPLAIN\s*(\([^)]*\))?\s*(ANALY[SZ]E\b)?", stmt, re.I)
        if explain and (explain.group(2) or re.search(r"\bANALY[SZ]E\b(?!\s+(false|off|0)\b)",
                                                       explain.group(1) or "", re.I)):
            stmt = stmt[explain.end():]  # EXPLAIN ANALYZE runs the statement it explains
            stmt = re.sub(r"^\s*VERBOSE\b", "", stmt, flags=re.I)
        elif explain:
            out.append(SqlEffect("read"))
            continue
        m = re.match(r"\s*SET\s+(?:LOCAL\s+|SESSION\s+)?search_path\s*(?:TO|=)\s*(.+)$",
                     stmt.strip(), re.I | re.S)
        if m and dialect == "postgres":
            path = [_folded(p.strip()) for p in m.group(1).split(",") if p.strip()]
            path = [p for p in path if p and p != "$user" and p.lower() != "default"] or ["public"]
            default_schema = path[0]
            out.append(SqlEffect("read", search_path=path))
            continue
        try:
            tree = sqlglot.parse_one(stmt, read=dialect)
            if dialect == "postgres" and tree is not None:
                # PostgreSQL folds unquoted names to lower case: `serialTest1` is serialtest1
                from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

                tree = normalize_identifiers(tree, dialect=dialect)
        except Exception:  # sqlglot raises many kinds; anything unparsed goes by keywords
            out.append(_by_keywords(stmt, default_schema))
            continue
        try:
            out.extend(_statement_effects(tree, stmt, default_schema, dialect))
        except Exception as exc:  # a shape the reading does not know: fail closed
            words = " ".join(_first_keywords(stmt)[:2])
            out.append(SqlEffect("database", Impact.NORMAL, forced_by=[f"statement `{words}`"],
                                 note=f"`{words}` could not be read statement by statement "
                                 f"({type(exc).__name__}); the whole database is captured"))
    return out


def _statement_effects(tree, stmt: str, default_schema: str | None,  # type: ignore[no-untyped-def]
                       dialect: str) -> list[SqlEffect]:
    """The statement's own effect, those of data-changing statements nested in it, and the
    whole database when it calls a function not known to be free of side effects."""
    from sqlglot import exp

    if tree is None or isinstance(tree, exp.Command):
        return [_by_keywords(stmt, default_schema)]
    effects = [_effect(tree, stmt, default_schema, exp)]
    for sub in tree.find_all(exp.Delete, exp.Update, exp.Insert, exp.Merge):
        when = getattr(exp, "When", None)
        if sub is not tree and not (when is not None and sub.find_ancestor(when) is not None):
            # a MERGE's WHEN … THEN UPDATE/DELETE/INSERT writes the MERGE's own target
            effects.append(_effect(sub, stmt, default_schema, exp))
    unknown = unknown_functions(_executed_part(tree, exp), dialect)
    if unknown:
        names = ", ".join(f"`{n}`" for n in unknown[:5])
        effects.append(SqlEffect("database", Impact.NORMAL,
                                 note=f"the statement calls {names}, not known to leave the "
                                 "database unchanged; the whole database is captured",
                                 forced_by=[f"function `{n}`" for n in unknown]))
    return effects


def _executed_part(tree: Any, exp: Any) -> Any:
    """What of a statement runs now: a CREATE of a function, view, trigger, rule, index or
    type only stores its body; a CREATE TABLE … AS or materialized view runs its query."""
    if isinstance(tree, tuple(getattr(exp, n) for n in ("Grant", "Revoke", "Comment")
                              if hasattr(exp, n))):
        return exp.Null()  # names a function, does not call it
    if not isinstance(tree, exp.Create):
        return tree
    kind = (tree.args.get("kind") or "").upper()
    materialized = tree.find(exp.MaterializedProperty) is not None
    if (kind == "TABLE" or materialized) and tree.expression is not None:
        return tree.expression
    return exp.Null()


def _effect(tree, stmt: str, default_schema: str | None, exp) -> SqlEffect:  # type: ignore[no-untyped-def]
    if isinstance(tree, exp.Command) or tree is None:
        return _by_keywords(stmt, default_schema)
    if isinstance(tree, (exp.Select, exp.Union, exp.Except, exp.Intersect, exp.Show,
                         exp.Describe, exp.Set, exp.Transaction, exp.Commit, exp.Rollback,
                         exp.Use, exp.Pragma)):
        into = tree.args.get("into") if isinstance(tree, exp.Select) else None
        if into is not None:
            if into.args.get("temporary"):
                return SqlEffect("read", note="a temporary table lives only in its session")
            return SqlEffect("tables", Impact.LOW, [_name(into.this, default_schema)],
                             note="SELECT INTO creates a new table, captured as absent")
        return SqlEffect("read")
    tables = [_name(t, default_schema) for t in tree.find_all(exp.Table)]
    if isinstance(tree, exp.Drop):
        kind = (tree.args.get("kind") or "").upper()
        objs = tree.args.get("tables") or ([tree.this] if tree.this is not None else [])
        first = objs[0] if objs else None
        if kind == "DATABASE" and isinstance(first, exp.Table):
            return SqlEffect("other-database", Impact.HIGH, database=first.name or first.db)
        if tree.args.get("cascade"):
            return SqlEffect("database", Impact.HIGH, wide=True,
                             note=f"DROP {kind} … CASCADE drops what depends on it, wherever it "
                             "is; the whole database is captured",
                             forced_by=[f"DROP {kind} … CASCADE"])
        if kind == "SCHEMA":
            name = (first.db or first.name) if isinstance(first, exp.Table) else None
            return SqlEffect("schema", Impact.HIGH, schema=name or default_schema, wide=True)
        if kind == "TABLE":
            names = [_name(t, default_schema) for t in objs if isinstance(t, exp.Table)]
            return SqlEffect("tables", Impact.HIGH, names or tables)
        return _object_schema(first, default_schema, Impact.HIGH, f"DROP {kind}", exp)
    if isinstance(tree, exp.Create):
        return _create(tree, tables, default_schema, exp)
    if isinstance(tree, exp.Alter):
        kind = (tree.args.get("kind") or "").upper()
        if kind == "TABLE":  # every table it names: the altered one, a new name, FK targets
            return SqlEffect("tables", Impact.NORMAL, tables)
        return _object_schema(tree.this, default_schema, Impact.NORMAL, f"ALTER {kind}", exp)
    if isinstance(tree, exp.TruncateTable):
        cascade = bool(tree.args.get("cascade")) or bool(
            re.search(r"\bCASCADE\s*;?\s*$", stmt, re.I))
        return SqlEffect("tables", Impact.HIGH, tables, references=cascade,
                         note="TRUNCATE … CASCADE empties every table that references these"
                         if cascade else "")
    if isinstance(tree, (exp.Delete, exp.Update)):
        target = tree.this if isinstance(tree.this, exp.Table) else tree.find(exp.Table)
        name = _name(target, default_schema)
        where = tree.args.get("where")
        joined = tree.args.get("using") or tree.args.get("from") or tree.args.get("from_")
        if where is None:
            return SqlEffect("tables", Impact.HIGH, [name], wide=True)
        if joined is not None or tree.find(exp.Placeholder, exp.Parameter) is not None:
            return SqlEffect("tables", Impact.HIGH, [name],
                             note="the WHERE reads other tables or parameters; the whole table "
                             "is captured")
        if isinstance(tree, exp.Update) and _sets_default(tree, exp):
            return SqlEffect("tables", Impact.HIGH, [name], forced_by=["SET … = DEFAULT"],
                             note="SET … = DEFAULT runs the column default (an identity or "
                             "serial column takes the next value of its sequence); the table "
                             "is captured with its sequences")
        return SqlEffect("rows", Impact.HIGH, [name], where=_strip_alias(where.this, target))
    if isinstance(tree, (exp.Insert, exp.Merge)):
        target = tree.this if isinstance(tree.this, exp.Table) else tree.find(exp.Table)
        return SqlEffect("tables", Impact.NORMAL, [_name(target, default_schema)])
    if isinstance(tree, exp.Copy):
        if tree.args.get("kind"):  # COPY … FROM loads rows
            return SqlEffect("tables", Impact.NORMAL, tables[:1])
        return SqlEffect("read")
    grants = tuple(getattr(exp, n) for n in ("Grant", "Revoke", "Comment") if hasattr(exp, n))
    if isinstance(tree, grants):
        return _privileges(tree, tables, default_schema, exp)
    return _by_keywords(stmt, default_schema)


def _sets_default(tree: Any, exp: Any) -> bool:
    """Whether an UPDATE assigns ``DEFAULT`` to a column (sqlglot reads it as a column)."""
    for assignment in tree.args.get("expressions") or []:
        value = assignment.expression if isinstance(assignment, exp.EQ) else assignment
        for col in value.find_all(exp.Column):
            ident = col.this
            if (not col.table and isinstance(ident, exp.Identifier) and not ident.quoted
                    and str(ident.this).upper() == "DEFAULT"):
                return True
    return False


def _privileges(tree: Any, tables: list[str], default_schema: str | None, exp: Any) -> SqlEffect:
    """GRANT/REVOKE/COMMENT ON: the table, the schema, or the schema of the object named."""
    kind = (tree.args.get("kind") or "TABLE").upper()
    obj = tree.args.get("securable") or tree.this
    if kind == "SCHEMA":
        name = (obj.db or obj.name) if isinstance(obj, exp.Table) else None
        if name:
            return SqlEffect("schema", Impact.LOW, schema=name)
    if kind == "COLUMN" and isinstance(obj, exp.Column) and obj.table:
        schema = obj.args.get("db")
        return SqlEffect("tables", Impact.LOW,
                         [f"{schema.name if schema else default_schema}.{obj.table}"])
    if kind in ("TABLE", "") and tables:
        return SqlEffect("tables", Impact.LOW, tables)
    return _object_schema(obj, default_schema, Impact.LOW, f"{tree.key.upper()} ON {kind}", exp)


def _object_schema(obj: object, default_schema: str | None, impact: Impact, what: str,
                   exp: Any) -> SqlEffect:
    """The schema holding a non-table object (view, sequence, index, function, type …)."""
    target = obj.this if isinstance(obj, exp.Schema) else obj
    schema = getattr(target, "db", None) or default_schema
    if not schema:
        return SqlEffect("database", impact, note=f"{what}: its schema is not known; the whole "
                         "database is captured", forced_by=[what])
    return SqlEffect("schema", impact, schema=schema,
                     note=f"{what} changes an object of schema {schema}; the schema is captured")


def _create(tree, tables: list[str], default_schema: str | None,  # type: ignore[no-untyped-def]
            exp) -> SqlEffect:
    """What a CREATE adds: a new table (captured absent, so a restore drops it), the table an
    index or trigger is on, a schema, a database, or the schema of any other object."""
    kind = (tree.args.get("kind") or "").upper()
    props = tree.args.get("properties")
    temporary = props is not None and any(
        isinstance(p, exp.TemporaryProperty) for p in props.expressions)
    if temporary:
        return SqlEffect("read", note="a temporary object lives only in its session")
    if kind == "TABLE":
        return SqlEffect("tables", Impact.LOW, tables,
                         note="CREATE TABLE: the new table is captured as absent, so a restore "
                         "drops it")
    on = tree.this.args.get("table") if isinstance(tree.this, exp.Index) else None
    if kind == "INDEX" and isinstance(on, exp.Table):
        # the table it is ON (an operator class, `fruit text_pattern_ops`, reads as a table)
        return SqlEffect("tables", Impact.LOW, [_name(on, default_schema)])
    if kind in ("INDEX", "TRIGGER") and tables:
        return SqlEffect("tables", Impact.LOW, tables[-1:] if kind == "INDEX" else tables[:1])
    if kind == "SCHEMA":
        name = (tree.this.db or tree.this.name) if isinstance(tree.this, exp.Table) else None
        if not name:
            return SqlEffect("database", Impact.LOW, forced_by=["CREATE SCHEMA"])
        return SqlEffect("schema", Impact.LOW, schema=name)
    if kind == "DATABASE":
        name = tree.this.name if isinstance(tree.this, exp.Table) else None
        if name:
            return SqlEffect("other-database", Impact.LOW, database=name)
    return _object_schema(tree.this, default_schema, Impact.LOW, f"CREATE {kind}", exp)


def _split(sql: str) -> list[str]:
    """Statements separated by ``;`` outside quotes, comments and dollar-quoted bodies."""
    out, buf, i, n = [], [], 0, len(sql)
    quote: str | None = None
    while i < n:
        c = sql[i]
        if quote:
            end = sql.find(quote, i)
            if end < 0:
                buf.append(sql[i:])
                break
            buf.append(sql[i:end + len(quote)])
            i = end + len(quote)
            quote = None
            continue
        if c in "'\"":
            quote = c
        elif c == "$":
            m = re.match(r"\$[A-Za-z_]*\$", sql[i:])
            if m:
                quote = m.group(0)
                buf.append(quote)
                i += len(quote)
                continue
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c == ";":
            out.append("".join(buf))
            buf = []
            i += 1
            continue
        buf.append(c)
        i += 1
    out.append("".join(buf))
    return [s for s in out if s.strip()]
