"""SQL statements that re-create captured objects.

Identifiers are always double-quoted; literals are quoted by :func:`lit`.  The
definitions PostgreSQL printed at capture (constraints, indexes, triggers,
functions, views) are replayed verbatim under an empty ``search_path``, which
is how they were printed.
"""

from __future__ import annotations

from preimage.snapshot_schemas.postgres import (
    PgColumn,
    PgFunction,
    PgObject,
    PgOwned,
    PgSequence,
    PgTable,
    PgType,
    PgView,
)

_PRIVILEGES = {
    "r": "SELECT", "w": "UPDATE", "a": "INSERT", "d": "DELETE", "D": "TRUNCATE",
    "x": "REFERENCES", "t": "TRIGGER", "X": "EXECUTE", "U": "USAGE", "C": "CREATE",
    "c": "CONNECT", "T": "TEMPORARY", "m": "MAINTAIN", "s": "SET", "A": "ALTER SYSTEM",
}


def q(name: str) -> str:
    """A double-quoted identifier."""
    return '"' + name.replace('"', '""') + '"'


def qn(schema: str, name: str) -> str:
    """A schema-qualified, quoted name."""
    return f"{q(schema)}.{q(name)}"


def lit(value: str | None) -> str:
    """A string literal (``NULL`` for ``None``)."""
    if value is None:
        return "NULL"
    return "'" + value.replace("'", "''") + "'"


# ---------------------------------------------------------------- object words
def object_ref(item: PgOwned) -> tuple[str, str]:
    """(keyword, name) as ALTER/COMMENT/GRANT spell the object."""
    if isinstance(item, PgTable):
        return "TABLE", qn(item.namespace, item.name)
    if isinstance(item, PgView):
        return ("MATERIALIZED VIEW" if item.materialized else "VIEW"), qn(item.namespace, item.name)
    if isinstance(item, PgSequence):
        return "SEQUENCE", qn(item.namespace, item.name)
    if isinstance(item, PgFunction):
        word = "PROCEDURE" if item.prokind == "p" else "FUNCTION"
        return word, f"{qn(item.namespace, item.name)}({item.arguments})"
    if isinstance(item, PgType):
        return ("DOMAIN" if item.typtype == "d" else "TYPE"), qn(item.namespace, item.name)
    if isinstance(item, PgObject):
        word, _, name = item.ref.partition(" ")
        for multi in ("TEXT SEARCH DICTIONARY", "TEXT SEARCH CONFIGURATION", "ACCESS METHOD",
                      "TEXT SEARCH PARSER", "TEXT SEARCH TEMPLATE", "OPERATOR CLASS",
                      "OPERATOR FAMILY", "LARGE OBJECT",
                      "FOREIGN DATA WRAPPER", "FOREIGN TABLE", "EVENT TRIGGER"):
            if item.ref.startswith(multi + " "):
                return multi, item.ref[len(multi) + 1:]
        return word, name
    raise TypeError(type(item).__name__)


def grant_word(keyword: str) -> str:
    """The object word GRANT uses (views and matviews are granted as tables)."""
    if keyword in ("VIEW", "MATERIALIZED VIEW", "FOREIGN TABLE"):
        return "TABLE"
    if keyword == "AGGREGATE":
        return "FUNCTION"
    if keyword == "SERVER":
        return "FOREIGN SERVER"
    return keyword


def drop_statement(item: PgOwned) -> str:
    """DROP for an object created after the capture (no CASCADE: dependents stop it)."""
    word, name = object_ref(item)
    return f"DROP {word} {name}"


# ---------------------------------------------------------------- ACLs
def parse_aclitem(item: str) -> tuple[str, str, str]:
    """``grantee=privs/grantor`` → (grantee or PUBLIC, privs, grantor)."""
    body, _, grantor = item.rpartition("/")
    grantee, _, privs = body.rpartition("=")
    return (_unquote_role(grantee) if grantee else "PUBLIC"), privs, _unquote_role(grantor)


def _unquote_role(name: str) -> str:
    if name.startswith('"') and name.endswith('"'):
        return name[1:-1].replace('""', '"')
    return name


def _role(name: str) -> str:
    return "PUBLIC" if name == "PUBLIC" else q(name)


def acl_statements(keyword: str, name: str, want: list[str], have: list[str]) -> list[str]:
    """REVOKE/GRANT statements turning ACL ``have`` into ``want`` (both sorted aclitems)."""
    if sorted(want) == sorted(have):
        return []
    return acl_grants(f"{grant_word(keyword)} {name}", have, want)


def acl_grants(on: str, have: list[str], want: list[str]) -> list[str]:
    """``REVOKE ALL ON <on> FROM`` every grantee of ``have``, then ``GRANT … ON <on>`` each
    entry of ``want`` (``on`` is ``TABLE "s"."t"``, or ``TABLES`` for default privileges)."""
    out = []
    for grantee in sorted({parse_aclitem(a)[0] for a in have}):
        out.append(f"REVOKE ALL ON {on} FROM {_role(grantee)} CASCADE")
    for entry in want:
        grantee, privs, _grantor = parse_aclitem(entry)
        plain, with_option = _privilege_words(privs)
        if plain:
            out.append(f"GRANT {', '.join(plain)} ON {on} TO {_role(grantee)}")
        if with_option:
            out.append(f"GRANT {', '.join(with_option)} ON {on} TO {_role(grantee)} "
                       "WITH GRANT OPTION")
    return out


def _privilege_words(privs: str) -> tuple[list[str], list[str]]:
    """aclitem privilege letters → (privileges, privileges held WITH GRANT OPTION)."""
    plain: list[str] = []
    with_option: list[str] = []
    i = 0
    while i < len(privs):
        letter = privs[i]
        option = i + 1 < len(privs) and privs[i + 1] == "*"
        (with_option if option else plain).append(_PRIVILEGES.get(letter, letter))
        i += 2 if option else 1
    return plain, with_option


def owner_statement(keyword: str, name: str, owner: str | None) -> list[str]:
    """ALTER … OWNER TO (nothing when the owner is unknown)."""
    return [f"ALTER {keyword} {name} OWNER TO {q(owner)}"] if owner else []


# Settings whose value is a list the server keeps quoted element by element (GUC_LIST_QUOTE,
# as pg_dump's variable_is_guc_list_quote lists them): set again as a list, not one string.
LIST_SETTINGS = frozenset({"search_path", "temp_tablespaces", "session_preload_libraries",
                           "shared_preload_libraries", "local_preload_libraries"})


def setting_value(var: str, value: str) -> str:
    """A stored ``setconfig`` value as ``SET var = …`` takes it back: a list setting as its
    elements (``'public', 'pg_catalog'``), any other one literal."""
    if var.lower() not in LIST_SETTINGS:
        return lit(value)
    items, current, quoted = [], [], False
    for ch in value + ",":
        if ch == '"':
            quoted = not quoted
            current.append(ch)
        elif ch == "," and not quoted:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    out = []
    for item in items:
        if len(item) >= 2 and item.startswith('"') and item.endswith('"'):
            item = item[1:-1].replace('""', '"')
        out.append(lit(item))
    return ", ".join(out) if out else "''"


def comment_statement(what: str, comment: str | None) -> str:
    """COMMENT ON ``what`` IS …"""
    return f"COMMENT ON {what} IS {lit(comment)}"


# ---------------------------------------------------------------- tables
def identity_clause(col: PgColumn, seq: PgSequence | None) -> str:
    """``GENERATED … AS IDENTITY (…)`` with the captured sequence name and settings."""
    mode = "ALWAYS" if col.identity == "a" else "BY DEFAULT"
    if seq is None:
        return f" GENERATED {mode} AS IDENTITY"
    opts = (
        f"SEQUENCE NAME {qn(seq.namespace, seq.name)} START WITH {seq.start} "
        f"INCREMENT BY {seq.increment} MINVALUE {seq.min_value} MAXVALUE {seq.max_value} "
        f"CACHE {seq.cache}{' CYCLE' if seq.cycle else ' NO CYCLE'}"
    )
    return f" GENERATED {mode} AS IDENTITY ({opts})"


def create_table(table: PgTable, identity_seqs: dict[str, PgSequence]) -> str:
    """CREATE TABLE with columns, defaults, identity, generated columns and partitioning.

    Constraints, indexes, triggers and policies are added after the rows.
    """
    name = qn(table.namespace, table.name)
    unlogged = "UNLOGGED " if table.unlogged else ""
    if table.partition_of:
        # partition_of, inherits, collation and owned_by are captured already quoted (%I).
        sql = f"CREATE {unlogged}TABLE {name} PARTITION OF {table.partition_of} "
        sql += str(table.partition_bound)
    else:
        defs = []
        for col in table.columns:
            if not col.local:
                continue
            d = f"{q(col.name)} {col.type}"
            if col.collation:
                d += f" COLLATE {col.collation}"
            if col.generated is not None:
                d += f" GENERATED ALWAYS AS ({col.generated}) STORED"
            elif col.identity:
                d += identity_clause(col, identity_seqs.get(col.name))
            elif col.default is not None and col.name not in table.late_defaults:
                d += f" DEFAULT {col.default}"
            if col.not_null:
                d += " NOT NULL"
            defs.append(d)
        sql = f"CREATE {unlogged}TABLE {name} ({', '.join(defs)})"
        if table.inherits:
            sql += f" INHERITS ({', '.join(table.inherits)})"
    if table.partition_key:
        sql += f" PARTITION BY {table.partition_key}"
    if table.access_method:
        sql += f" USING {q(table.access_method)}"
    if table.options:
        sql += f" WITH ({', '.join(table.options)})"
    return sql


_STORAGE = {"p": "PLAIN", "e": "EXTERNAL", "m": "MAIN", "x": "EXTENDED"}


def column_settings(table: PgTable, live: dict[str, PgColumn] | None,
                    parent: dict[str, PgColumn] | None = None) -> list[str]:
    """Statistics targets, options, storage and compression of the columns: every one that
    is not what a new table gets (the default, or the storage and compression a partition
    or child takes from ``parent`` when created), or that differs from ``live``."""
    name = qn(table.namespace, table.name)
    out = []
    for col in table.columns:
        have = (live or {}).get(col.name)
        if have is None:
            from_parent = (parent or {}).get(col.name)
            have = PgColumn(name=col.name, type=col.type,
                            storage=from_parent.storage if from_parent else None,
                            compression=from_parent.compression if from_parent else None)
        alter = f"ALTER TABLE {name} ALTER COLUMN {q(col.name)}"
        if col.statistics != have.statistics:
            out.append(f"{alter} SET STATISTICS {col.statistics}")
        if sorted(col.options) != sorted(have.options):
            if have.options:
                out.append(f"{alter} RESET ({', '.join(o.split('=', 1)[0] for o in have.options)})")
            if col.options:
                out.append(f"{alter} SET ({', '.join(col.options)})")
        if col.storage != have.storage:
            if col.storage is not None:
                out.append(f"{alter} SET STORAGE {_STORAGE[col.storage]}")
            else:  # back to the type's own storage, whatever that is
                body = (f"ALTER TABLE {name} ALTER COLUMN {q(col.name)} SET STORAGE %s")
                out.append(
                    "DO $preimage$ BEGIN EXECUTE format(" + lit(body) + ", (SELECT CASE "
                    "t.typstorage WHEN 'p' THEN 'PLAIN' WHEN 'e' THEN 'EXTERNAL' WHEN 'm' THEN "
                    "'MAIN' ELSE 'EXTENDED' END FROM pg_catalog.pg_attribute a JOIN "
                    "pg_catalog.pg_type t ON t.oid = a.atttypid WHERE a.attrelid = "
                    f"{lit(name)}::regclass AND a.attname = {lit(col.name)})); END $preimage$")
        if col.compression != have.compression:
            out.append(f"{alter} SET COMPRESSION {col.compression or 'DEFAULT'}")
    return out


def column_acl_statements(table: PgTable, live: dict[str, PgColumn] | None) -> list[str]:
    """REVOKE/GRANT turning each column's privileges into the captured ones."""
    name = qn(table.namespace, table.name)
    out = []
    for col in table.columns:
        have = (live or {}).get(col.name)
        have_acl = have.acl if have is not None else []
        if sorted(col.acl) == sorted(have_acl):
            continue
        for grantee in sorted({parse_aclitem(a)[0] for a in have_acl}):
            out.append(f"REVOKE ALL ({q(col.name)}) ON TABLE {name} FROM {_role(grantee)}")
        for entry in col.acl:
            grantee, privs, _grantor = parse_aclitem(entry)
            plain, with_option = _privilege_words(privs)
            cols = f"({q(col.name)})"
            if plain:
                out.append(f"GRANT {', '.join(p + ' ' + cols for p in plain)} ON TABLE {name} "
                           f"TO {_role(grantee)}")
            if with_option:
                out.append(f"GRANT {', '.join(p + ' ' + cols for p in with_option)} ON TABLE "
                           f"{name} TO {_role(grantee)} WITH GRANT OPTION")
    return out


def inherited_column_statements(table: PgTable) -> list[str]:
    """Defaults and NOT NULL that a child sets on columns it inherits."""
    out = []
    name = qn(table.namespace, table.name)
    for col in table.columns:
        if col.local or col.identity or col.generated is not None:
            continue
        if col.default is not None:
            out.append(f"ALTER TABLE {name} ALTER COLUMN {q(col.name)} SET DEFAULT {col.default}")
        if col.not_null:
            out.append(f"ALTER TABLE {name} ALTER COLUMN {q(col.name)} SET NOT NULL")
    return out


def create_sequence(seq: PgSequence) -> str:
    """CREATE SEQUENCE with every setting."""
    return (
        f"CREATE SEQUENCE {qn(seq.namespace, seq.name)} AS {seq.data_type} "
        f"INCREMENT BY {seq.increment} MINVALUE {seq.min_value} MAXVALUE {seq.max_value} "
        f"START WITH {seq.start} CACHE {seq.cache}{' CYCLE' if seq.cycle else ' NO CYCLE'}"
    )


def alter_sequence(seq: PgSequence) -> str:
    """ALTER SEQUENCE back to the captured settings."""
    return (
        f"ALTER SEQUENCE {qn(seq.namespace, seq.name)} AS {seq.data_type} "
        f"INCREMENT BY {seq.increment} MINVALUE {seq.min_value} MAXVALUE {seq.max_value} "
        f"START WITH {seq.start} CACHE {seq.cache}{' CYCLE' if seq.cycle else ' NO CYCLE'}"
    )


def owned_by_statement(seq: PgSequence) -> str:
    """ALTER SEQUENCE … OWNED BY the captured column (or NONE)."""
    owner = seq.owned_by or "NONE"
    return f"ALTER SEQUENCE {qn(seq.namespace, seq.name)} OWNED BY {owner}"


def setval_statement(seq: PgSequence) -> str:
    """``setval`` so the next ``nextval`` returns what it would have at capture."""
    regclass = lit(qn(seq.namespace, seq.name))
    called = "true" if seq.is_called else "false"
    return f"SELECT pg_catalog.setval({regclass}, {seq.last_value}, {called})"


def create_view(view: PgView, *, with_data: bool = True) -> str:
    """CREATE [MATERIALIZED] VIEW … AS <captured definition> (a materialized view empty
    unless ``with_data`` and it was populated)."""
    name = qn(view.namespace, view.name)
    body = view.definition.rstrip().rstrip(";")
    opts = f" WITH ({', '.join(view.options)})" if view.options else ""
    if view.materialized:
        data = "WITH DATA" if view.populated and with_data else "WITH NO DATA"
        return f"CREATE MATERIALIZED VIEW {name}{opts} AS {body} {data}"
    return f"CREATE VIEW {name}{opts} AS {body}"


def inherited_trigger_statement(table: str, trigger: str, enabled: str) -> str:
    """Set the state of a partition's copy of its parent's trigger, when the copy exists
    (it is there while the parent's trigger is: a restore of the partition alone, after the
    parent's trigger was dropped, has none to set)."""
    stmt = trigger_enable_statement(table, trigger, enabled, only=True)
    return (f"DO $preimage$ BEGIN IF EXISTS (SELECT 1 FROM pg_catalog.pg_trigger "
            f"WHERE tgrelid = {lit(table)}::regclass AND tgname = {lit(trigger)}) "
            f"THEN EXECUTE {lit(stmt)}; END IF; END $preimage$")


def view_default_statements(view: PgView, live: dict[str, str]) -> list[str]:
    """``ALTER VIEW … ALTER COLUMN … SET/DROP DEFAULT`` from the ``live`` defaults to the
    captured ones."""
    name = qn(view.namespace, view.name)
    out = [f"ALTER VIEW {name} ALTER COLUMN {q(col)} SET DEFAULT {expr}"
           for col, expr in sorted(view.column_defaults.items()) if live.get(col) != expr]
    out += [f"ALTER VIEW {name} ALTER COLUMN {q(col)} DROP DEFAULT"
            for col in sorted(live) if col not in view.column_defaults]
    return out


def trigger_enable_statement(table: str, trigger: str, enabled: str, *,
                             only: bool = False) -> str:
    """ALTER TABLE … ENABLE/DISABLE TRIGGER as captured (O, D, R, A); ``only``: not the
    partitions' copies of the trigger, whose states are set one by one."""
    word = {"O": "ENABLE", "D": "DISABLE", "R": "ENABLE REPLICA", "A": "ENABLE ALWAYS"}[enabled]
    return f"ALTER TABLE {'ONLY ' if only else ''}{table} {word} TRIGGER {q(trigger)}"
