"""Every other kind of object pg_dump knows, read as the statements that create it.

One reader per kind, each from the kind's own catalog, each returning
:class:`~preimage.snapshot_schemas.postgres.PgObject` items: aggregates,
operators, casts, collations, conversions, text-search dictionaries and
configurations, access methods, foreign-data wrappers, servers, foreign
tables, rules, extended statistics, event triggers, publications and default
privileges.  Statements are built the way ``pg_dump`` builds them, with every
name schema-qualified (the session's ``search_path`` is empty), so replaying
them gives back the same catalog rows.

Operator classes and families, text-search parsers and templates, base types,
languages and transforms are read by :mod:`.lowlevel`, large objects by
:mod:`.largeobjects`.  User mappings and subscriptions hold credentials and
are never read: :mod:`.audit` reports them as uncaptured.
"""

from __future__ import annotations

from typing import Any

from preimage.connectors.postgres.ddl import lit, q, qn
from preimage.snapshot_schemas.postgres import PgObject

Cursor = Any

# Which catalog each objtype lives in (for pg_depend and the completeness audit).
CATALOG = {
    "aggregate": "pg_proc", "operator": "pg_operator", "cast": "pg_cast",
    "collation": "pg_collation", "conversion": "pg_conversion",
    "text search dictionary": "pg_ts_dict", "text search configuration": "pg_ts_config",
    "access method": "pg_am", "foreign-data wrapper": "pg_foreign_data_wrapper",
    "server": "pg_foreign_server", "foreign table": "pg_class", "rule": "pg_rewrite",
    "statistics object": "pg_statistic_ext", "event trigger": "pg_event_trigger",
    "publication": "pg_publication", "default acl": "pg_default_acl",
    "operator family": "pg_opfamily", "operator class": "pg_opclass",
    "text search parser": "pg_ts_parser", "text search template": "pg_ts_template",
    "shell type": "pg_type", "language": "pg_language", "transform": "pg_transform",
}

# Kinds that carry grants (GRANT … ON FUNCTION / TABLE / FOREIGN DATA WRAPPER / SERVER).
ACL_KINDS = frozenset({"aggregate", "foreign table", "foreign-data wrapper", "server",
                       "base type", "language"})

_NOT_EXT = """NOT EXISTS (SELECT 1 FROM pg_depend dx WHERE dx.classid = '{cls}'::regclass
                        AND dx.objid = {oid} AND dx.deptype IN ('e', 'i'))"""


def _acl(column: str, kind: str, owner: str) -> str:
    return (f"ARRAY(SELECT x::text FROM unnest(coalesce({column}, acldefault('{kind}', {owner}))) x "
            "ORDER BY 1)")


def _options(opts: list[str] | None) -> str:
    """``OPTIONS (k 'v', …)`` from a ``{k=v}`` text array."""
    if not opts:
        return ""
    pairs = []
    for o in opts:
        k, _, v = o.partition("=")
        pairs.append(f"{q(k)} {lit(v)}")
    return f" OPTIONS ({', '.join(pairs)})"


def _obj(r: dict[str, Any], objtype: str, definition: list[str], ref: str, *,
         drop: str | None = None, late: bool = False, namespace: str | None = None) -> PgObject:
    return PgObject(
        objtype=objtype, namespace=namespace if namespace is not None else (r.get("nsp") or ""),
        name=r["ident"], definition=definition, ref=ref, drop=drop or f"DROP {ref}", late=late,
        owner=r.get("owner"), acl=list(r.get("acl") or []), comment=r.get("comment"),
        oid=r["oid"],
    )


# ---------------------------------------------------------------- per-kind readers
def aggregates(cur: Cursor, schemas: list[str]) -> list[PgObject]:
    """User-defined aggregates (``prokind = 'a'``) as ``CREATE AGGREGATE``."""
    cur.execute(
        f"""SELECT p.oid, n.nspname AS nsp, p.proname,
            pg_get_function_arguments(p.oid) AS args,
            pg_get_function_identity_arguments(p.oid) AS idargs,
            a.aggkind, a.aggtransfn::regproc::text AS sfunc,
            format_type(a.aggtranstype, NULL) AS stype, a.aggtransspace,
            nullif(a.aggfinalfn, 0)::regproc::text AS finalfunc, a.aggfinalextra,
            a.aggfinalmodify, nullif(a.aggcombinefn, 0)::regproc::text AS combinefunc,
            nullif(a.aggserialfn, 0)::regproc::text AS serialfunc,
            nullif(a.aggdeserialfn, 0)::regproc::text AS deserialfunc, a.agginitval,
            nullif(a.aggmtransfn, 0)::regproc::text AS msfunc,
            nullif(a.aggminvtransfn, 0)::regproc::text AS minvfunc,
            CASE WHEN a.aggmtranstype <> 0 THEN format_type(a.aggmtranstype, NULL) END AS mstype,
            a.aggmtransspace, nullif(a.aggmfinalfn, 0)::regproc::text AS mfinalfunc,
            a.aggmfinalextra, a.aggmfinalmodify, a.aggminitval,
            CASE WHEN a.aggsortop <> 0 THEN (SELECT format('OPERATOR(%%I.%%s)', on_.nspname,
                o.oprname) FROM pg_operator o JOIN pg_namespace on_ ON on_.oid = o.oprnamespace
                WHERE o.oid = a.aggsortop) END AS sortop,
            p.proparallel, pg_get_userbyid(p.proowner) AS owner,
            {_acl('p.proacl', 'f', 'p.proowner')} AS acl,
            obj_description(p.oid, 'pg_proc') AS comment
        FROM pg_proc p JOIN pg_aggregate a ON a.aggfnoid = p.oid
        JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE p.prokind = 'a' AND n.nspname = ANY(%s)
          AND {_NOT_EXT.format(cls='pg_proc', oid='p.oid')}
        ORDER BY p.oid""",
        (schemas,),
    )
    modify = {"r": "READ_ONLY", "s": "SHAREABLE", "w": "READ_WRITE"}
    out = []
    for r in cur.fetchall():
        name = qn(r["nsp"], r["proname"])
        opts = [f"SFUNC = {r['sfunc']}", f"STYPE = {r['stype']}"]
        if r["aggtransspace"]:
            opts.append(f"SSPACE = {r['aggtransspace']}")
        if r["finalfunc"]:
            opts.append(f"FINALFUNC = {r['finalfunc']}")
            if r["aggfinalextra"]:
                opts.append("FINALFUNC_EXTRA")
        opts.append(f"FINALFUNC_MODIFY = {modify[r['aggfinalmodify']]}")
        for word in ("combinefunc", "serialfunc", "deserialfunc"):
            if r[word]:
                opts.append(f"{word.upper()} = {r[word]}")
        if r["agginitval"] is not None:
            opts.append(f"INITCOND = {lit(r['agginitval'])}")
        if r["msfunc"]:
            opts += [f"MSFUNC = {r['msfunc']}", f"MINVFUNC = {r['minvfunc']}",
                     f"MSTYPE = {r['mstype']}"]
            if r["aggmtransspace"]:
                opts.append(f"MSSPACE = {r['aggmtransspace']}")
            if r["mfinalfunc"]:
                opts.append(f"MFINALFUNC = {r['mfinalfunc']}")
                if r["aggmfinalextra"]:
                    opts.append("MFINALFUNC_EXTRA")
            opts.append(f"MFINALFUNC_MODIFY = {modify[r['aggmfinalmodify']]}")
            if r["aggminitval"] is not None:
                opts.append(f"MINITCOND = {lit(r['aggminitval'])}")
        if r["sortop"]:
            opts.append(f"SORTOP = {r['sortop']}")
        opts.append("PARALLEL = " + {"s": "SAFE", "r": "RESTRICTED", "u": "UNSAFE"}[
            r["proparallel"]])
        if r["aggkind"] == "h":
            opts.append("HYPOTHETICAL")
        args = r["args"] or "*"
        r["ident"] = f"{r['proname']}({r['idargs'] or '*'})"
        out.append(_obj(r, "aggregate", [f"CREATE AGGREGATE {name}({args}) ({', '.join(opts)})"],
                        f"AGGREGATE {name}({r['idargs'] or '*'})"))
    return out


def operators(cur: Cursor, schemas: list[str]) -> list[PgObject]:
    """User-defined operators as ``CREATE OPERATOR``."""
    cur.execute(
        f"""SELECT o.oid, n.nspname AS nsp, o.oprname,
            CASE WHEN o.oprleft <> 0 THEN format_type(o.oprleft, NULL) END AS l,
            CASE WHEN o.oprright <> 0 THEN format_type(o.oprright, NULL) END AS r,
            o.oprcode::regproc::text AS fn, o.oprcanhash, o.oprcanmerge,
            (SELECT format('OPERATOR(%%I.%%s)', cn.nspname, c.oprname) FROM pg_operator c
             JOIN pg_namespace cn ON cn.oid = c.oprnamespace WHERE c.oid = o.oprcom) AS com,
            (SELECT format('OPERATOR(%%I.%%s)', cn.nspname, c.oprname) FROM pg_operator c
             JOIN pg_namespace cn ON cn.oid = c.oprnamespace WHERE c.oid = o.oprnegate) AS neg,
            nullif(o.oprrest, 0)::regproc::text AS rest, nullif(o.oprjoin, 0)::regproc::text AS j,
            pg_get_userbyid(o.oprowner) AS owner,
            obj_description(o.oid, 'pg_operator') AS comment
        FROM pg_operator o JOIN pg_namespace n ON n.oid = o.oprnamespace
        WHERE n.nspname = ANY(%s) AND {_NOT_EXT.format(cls='pg_operator', oid='o.oid')}
        ORDER BY o.oid""",
        (schemas,),
    )
    out = []
    for r in cur.fetchall():
        opts = [f"FUNCTION = {r['fn']}"]
        if r["l"]:
            opts.append(f"LEFTARG = {r['l']}")
        if r["r"]:
            opts.append(f"RIGHTARG = {r['r']}")
        for word, col in (("COMMUTATOR", "com"), ("NEGATOR", "neg"), ("RESTRICT", "rest"),
                          ("JOIN", "j")):
            if r[col]:
                opts.append(f"{word} = {r[col]}")
        if r["oprcanhash"]:
            opts.append("HASHES")
        if r["oprcanmerge"]:
            opts.append("MERGES")
        sig = f"({r['l'] or 'NONE'}, {r['r'] or 'NONE'})"
        name = f"{q(r['nsp'])}.{r['oprname']}"
        r["ident"] = f"{r['oprname']}{sig}"
        out.append(_obj(r, "operator", [f"CREATE OPERATOR {name} ({', '.join(opts)})"],
                        f"OPERATOR {name} {sig}"))
    return out


def casts(cur: Cursor, schemas: list[str]) -> list[PgObject]:
    """Casts whose function or either type lives in ``schemas``."""
    cur.execute(
        f"""SELECT c.oid, format_type(c.castsource, NULL) AS src,
            format_type(c.casttarget, NULL) AS tgt, c.castmethod, c.castcontext,
            CASE WHEN c.castfunc <> 0 THEN c.castfunc::regprocedure::text END AS fn,
            obj_description(c.oid, 'pg_cast') AS comment
        FROM pg_cast c
        WHERE c.oid >= 16384 AND {_NOT_EXT.format(cls='pg_cast', oid='c.oid')}
          AND EXISTS (SELECT 1 FROM pg_namespace n WHERE n.nspname = ANY(%s) AND n.oid IN (
              (SELECT typnamespace FROM pg_type WHERE oid = c.castsource),
              (SELECT typnamespace FROM pg_type WHERE oid = c.casttarget),
              (SELECT pronamespace FROM pg_proc WHERE oid = c.castfunc)))
        ORDER BY c.oid""",
        (schemas,),
    )
    out = []
    for r in cur.fetchall():
        how = {"f": f"WITH FUNCTION {r['fn']}", "b": "WITHOUT FUNCTION", "i": "WITH INOUT"}[
            r["castmethod"]]
        ctx = {"e": "", "a": " AS ASSIGNMENT", "i": " AS IMPLICIT"}[r["castcontext"]]
        r["ident"] = f"({r['src']} AS {r['tgt']})"
        out.append(_obj(r, "cast", [f"CREATE CAST {r['ident']} {how}{ctx}"],
                        f"CAST {r['ident']}", namespace=""))
    return out


def collations(cur: Cursor, schemas: list[str]) -> list[PgObject]:
    """User collations as ``CREATE COLLATION`` (ICU tailoring rules from 16 on, the builtin
    provider from 17 on, where ``colliculocale`` became ``colllocale``)."""
    major = cur.connection.info.server_version // 10000
    locale = "c.colllocale" if major >= 17 else "c.colliculocale"
    rules = "c.collicurules" if major >= 16 else "NULL::text"
    cur.execute(
        f"""SELECT c.oid, n.nspname AS nsp, c.collname, c.collprovider, c.collisdeterministic,
            c.collcollate, c.collctype, {locale} AS colliculocale, {rules} AS rules,
            pg_get_userbyid(c.collowner) AS owner,
            obj_description(c.oid, 'pg_collation') AS comment
        FROM pg_collation c JOIN pg_namespace n ON n.oid = c.collnamespace
        WHERE n.nspname = ANY(%s) AND {_NOT_EXT.format(cls='pg_collation', oid='c.oid')}
        ORDER BY c.oid""",
        (schemas,),
    )
    out = []
    for r in cur.fetchall():
        name = qn(r["nsp"], r["collname"])
        provider = {"i": "icu", "c": "libc", "d": "default", "b": "builtin"}[r["collprovider"]]
        opts = [f"provider = {provider}"]
        if r["collprovider"] in ("i", "b"):
            opts.append(f"locale = {lit(r['colliculocale'])}")
            if r["rules"] is not None:
                opts.append(f"rules = {lit(r['rules'])}")
        else:
            opts += [f"lc_collate = {lit(r['collcollate'])}", f"lc_ctype = {lit(r['collctype'])}"]
        if not r["collisdeterministic"]:
            opts.append("deterministic = false")
        r["ident"] = r["collname"]
        out.append(_obj(r, "collation", [f"CREATE COLLATION {name} ({', '.join(opts)})"],
                        f"COLLATION {name}"))
    return out


def conversions(cur: Cursor, schemas: list[str]) -> list[PgObject]:
    """User encoding conversions."""
    cur.execute(
        f"""SELECT c.oid, n.nspname AS nsp, c.conname, c.condefault,
            pg_encoding_to_char(c.conforencoding) AS src,
            pg_encoding_to_char(c.contoencoding) AS dst, c.conproc::regproc::text AS fn,
            pg_get_userbyid(c.conowner) AS owner,
            obj_description(c.oid, 'pg_conversion') AS comment
        FROM pg_conversion c JOIN pg_namespace n ON n.oid = c.connamespace
        WHERE n.nspname = ANY(%s) AND {_NOT_EXT.format(cls='pg_conversion', oid='c.oid')}
        ORDER BY c.oid""",
        (schemas,),
    )
    out = []
    for r in cur.fetchall():
        name = qn(r["nsp"], r["conname"])
        default = "DEFAULT " if r["condefault"] else ""
        r["ident"] = r["conname"]
        out.append(_obj(r, "conversion", [
            f"CREATE {default}CONVERSION {name} FOR {lit(r['src'])} TO {lit(r['dst'])} "
            f"FROM {r['fn']}"], f"CONVERSION {name}"))
    return out


def text_search(cur: Cursor, schemas: list[str]) -> list[PgObject]:
    """Text-search dictionaries and configurations (with their token mappings)."""
    cur.execute(
        f"""SELECT d.oid, n.nspname AS nsp, d.dictname,
            (SELECT format('%%I.%%I', tn.nspname, t.tmplname) FROM pg_ts_template t
             JOIN pg_namespace tn ON tn.oid = t.tmplnamespace WHERE t.oid = d.dicttemplate) AS tmpl,
            d.dictinitoption, pg_get_userbyid(d.dictowner) AS owner,
            obj_description(d.oid, 'pg_ts_dict') AS comment
        FROM pg_ts_dict d JOIN pg_namespace n ON n.oid = d.dictnamespace
        WHERE n.nspname = ANY(%s) AND {_NOT_EXT.format(cls='pg_ts_dict', oid='d.oid')}
        ORDER BY d.oid""",
        (schemas,),
    )
    out = []
    for r in cur.fetchall():
        name = qn(r["nsp"], r["dictname"])
        opts = f"TEMPLATE = {r['tmpl']}" + (f", {r['dictinitoption']}"
                                              if r["dictinitoption"] else "")
        r["ident"] = r["dictname"]
        out.append(_obj(r, "text search dictionary",
                        [f"CREATE TEXT SEARCH DICTIONARY {name} ({opts})"],
                        f"TEXT SEARCH DICTIONARY {name}"))
    cur.execute(
        f"""SELECT c.oid, n.nspname AS nsp, c.cfgname, c.cfgparser,
            (SELECT format('%%I.%%I', pn.nspname, p.prsname) FROM pg_ts_parser p
             JOIN pg_namespace pn ON pn.oid = p.prsnamespace WHERE p.oid = c.cfgparser) AS parser,
            pg_get_userbyid(c.cfgowner) AS owner,
            obj_description(c.oid, 'pg_ts_config') AS comment
        FROM pg_ts_config c JOIN pg_namespace n ON n.oid = c.cfgnamespace
        WHERE n.nspname = ANY(%s) AND {_NOT_EXT.format(cls='pg_ts_config', oid='c.oid')}
        ORDER BY c.oid""",
        (schemas,),
    )
    for r in cur.fetchall():
        name = qn(r["nsp"], r["cfgname"])
        stmts = [f"CREATE TEXT SEARCH CONFIGURATION {name} (PARSER = {r['parser']})"]
        cur.execute(
            """SELECT t.alias, string_agg(format('%%I.%%I', dn.nspname, d.dictname), ', '
                                         ORDER BY m.mapseqno) AS dicts
            FROM pg_ts_config_map m JOIN ts_token_type(%s::oid) t ON t.tokid = m.maptokentype
            JOIN pg_ts_dict d ON d.oid = m.mapdict JOIN pg_namespace dn ON dn.oid = d.dictnamespace
            WHERE m.mapcfg = %s GROUP BY t.alias ORDER BY t.alias""",
            (r["cfgparser"], r["oid"]),
        )
        for m in cur.fetchall():
            stmts.append(f"ALTER TEXT SEARCH CONFIGURATION {name} ADD MAPPING FOR {m['alias']} "
                         f"WITH {m['dicts']}")
        r["ident"] = r["cfgname"]
        out.append(_obj(r, "text search configuration", stmts,
                        f"TEXT SEARCH CONFIGURATION {name}"))
    return out


def rules(cur: Cursor, relations: list[int]) -> list[PgObject]:
    """Rules on tables and views (not a view's own ``_RETURN`` rule), created after the rows."""
    if not relations:
        return []
    cur.execute(
        """SELECT r.oid, n.nspname AS nsp, c.relname, r.rulename, r.ev_enabled,
            pg_get_ruledef(r.oid) AS def, obj_description(r.oid, 'pg_rewrite') AS comment
        FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE r.ev_class = ANY(%s) AND r.rulename <> '_RETURN' ORDER BY r.oid""",
        (relations,),
    )
    out = []
    for r in cur.fetchall():
        rel = qn(r["nsp"], r["relname"])
        stmts = [r["def"].strip().rstrip(";")]
        word = {"O": None, "D": "DISABLE", "R": "ENABLE REPLICA", "A": "ENABLE ALWAYS"}[
            r["ev_enabled"]]
        if word:
            stmts.append(f"ALTER TABLE {rel} {word} RULE {q(r['rulename'])}")
        r["ident"] = f"{r['rulename']} ON {r['relname']}"
        out.append(_obj(r, "rule", stmts, f"RULE {q(r['rulename'])} ON {rel}", late=True))
    return out


def statistics(cur: Cursor, relations: list[int]) -> list[PgObject]:
    """Extended statistics objects on the tables (``CREATE STATISTICS``)."""
    if not relations:
        return []
    cur.execute(
        f"""SELECT s.oid, n.nspname AS nsp, s.stxname, pg_get_statisticsobjdef(s.oid) AS def,
            coalesce(s.stxstattarget, -1) AS stxstattarget,  -- NULL for the default from 17 on
            pg_get_userbyid(s.stxowner) AS owner,
            obj_description(s.oid, 'pg_statistic_ext') AS comment
        FROM pg_statistic_ext s JOIN pg_namespace n ON n.oid = s.stxnamespace
        WHERE s.stxrelid = ANY(%s) AND {_NOT_EXT.format(cls='pg_statistic_ext', oid='s.oid')}
        ORDER BY s.oid""",
        (relations,),
    )
    out = []
    for r in cur.fetchall():
        name = qn(r["nsp"], r["stxname"])
        stmts = [r["def"]]
        if r["stxstattarget"] != -1:
            stmts.append(f"ALTER STATISTICS {name} SET STATISTICS {r['stxstattarget']}")
        r["ident"] = r["stxname"]
        out.append(_obj(r, "statistics object", stmts, f"STATISTICS {name}", late=True))
    return out


def foreign_tables(cur: Cursor, schemas: list[str]) -> list[PgObject]:
    """Foreign tables: columns, server and options (their rows live elsewhere)."""
    cur.execute(
        f"""SELECT c.oid, n.nspname AS nsp, c.relname, s.srvname, ft.ftoptions,
            pg_get_userbyid(c.relowner) AS owner, {_acl('c.relacl', 'r', 'c.relowner')} AS acl,
            obj_description(c.oid, 'pg_class') AS comment
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_foreign_table ft ON ft.ftrelid = c.oid
        JOIN pg_foreign_server s ON s.oid = ft.ftserver
        WHERE c.relkind = 'f' AND n.nspname = ANY(%s)
          AND {_NOT_EXT.format(cls='pg_class', oid='c.oid')} ORDER BY c.oid""",
        (schemas,),
    )
    out = []
    for r in cur.fetchall():
        cur.execute(
            """SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull,
                pg_get_expr(d.adbin, d.adrelid) AS def, a.attfdwoptions
            FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid
              AND d.adnum = a.attnum
            WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum""",
            (r["oid"],),
        )
        cols = []
        for a in cur.fetchall():
            col = f"{q(a['attname'])} {a['type']}{_options(a['attfdwoptions'])}"
            if a["def"] is not None:
                col += f" DEFAULT {a['def']}"
            if a["attnotnull"]:
                col += " NOT NULL"
            cols.append(col)
        name = qn(r["nsp"], r["relname"])
        r["ident"] = r["relname"]
        out.append(_obj(r, "foreign table", [
            f"CREATE FOREIGN TABLE {name} ({', '.join(cols)}) SERVER {q(r['srvname'])}"
            f"{_options(r['ftoptions'])}"], f"FOREIGN TABLE {name}"))
    return out


def database_objects(cur: Cursor) -> list[PgObject]:
    """Objects of the whole database that live in no schema: access methods, foreign-data
    wrappers, servers, event triggers, publications and default privileges."""
    out: list[PgObject] = []
    cur.execute(
        f"""SELECT a.oid, a.amname, a.amtype, a.amhandler::regproc::text AS handler,
            obj_description(a.oid, 'pg_am') AS comment
        FROM pg_am a WHERE a.oid >= 16384 AND {_NOT_EXT.format(cls='pg_am', oid='a.oid')}
        ORDER BY a.oid""")
    for r in cur.fetchall():
        r["ident"] = r["amname"]
        typ = "INDEX" if r["amtype"] == "i" else "TABLE"
        out.append(_obj(r, "access method", [
            f"CREATE ACCESS METHOD {q(r['amname'])} TYPE {typ} HANDLER {r['handler']}"],
            f"ACCESS METHOD {q(r['amname'])}", namespace=""))
    cur.execute(
        f"""SELECT w.oid, w.fdwname, nullif(w.fdwhandler, 0)::regproc::text AS handler,
            nullif(w.fdwvalidator, 0)::regproc::text AS validator, w.fdwoptions,
            pg_get_userbyid(w.fdwowner) AS owner, {_acl('w.fdwacl', 'F', 'w.fdwowner')} AS acl,
            obj_description(w.oid, 'pg_foreign_data_wrapper') AS comment
        FROM pg_foreign_data_wrapper w
        WHERE {_NOT_EXT.format(cls='pg_foreign_data_wrapper', oid='w.oid')} ORDER BY w.oid""")
    for r in cur.fetchall():
        stmt = f"CREATE FOREIGN DATA WRAPPER {q(r['fdwname'])}"
        stmt += f" HANDLER {r['handler']}" if r["handler"] else " NO HANDLER"
        stmt += f" VALIDATOR {r['validator']}" if r["validator"] else " NO VALIDATOR"
        r["ident"] = r["fdwname"]
        out.append(_obj(r, "foreign-data wrapper", [stmt + _options(r["fdwoptions"])],
                        f"FOREIGN DATA WRAPPER {q(r['fdwname'])}", namespace=""))
    cur.execute(
        f"""SELECT s.oid, s.srvname, s.srvtype, s.srvversion, s.srvoptions, w.fdwname,
            pg_get_userbyid(s.srvowner) AS owner, {_acl('s.srvacl', 'S', 's.srvowner')} AS acl,
            obj_description(s.oid, 'pg_foreign_server') AS comment
        FROM pg_foreign_server s JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw
        WHERE {_NOT_EXT.format(cls='pg_foreign_server', oid='s.oid')} ORDER BY s.oid""")
    for r in cur.fetchall():
        stmt = f"CREATE SERVER {q(r['srvname'])}"
        if r["srvtype"] is not None:
            stmt += f" TYPE {lit(r['srvtype'])}"
        if r["srvversion"] is not None:
            stmt += f" VERSION {lit(r['srvversion'])}"
        stmt += f" FOREIGN DATA WRAPPER {q(r['fdwname'])}{_options(r['srvoptions'])}"
        r["ident"] = r["srvname"]
        out.append(_obj(r, "server", [stmt], f"SERVER {q(r['srvname'])}", namespace=""))
    cur.execute(
        f"""SELECT e.oid, e.evtname, e.evtevent, e.evtenabled, e.evttags,
            e.evtfoid::regproc::text AS fn, pg_get_userbyid(e.evtowner) AS owner,
            obj_description(e.oid, 'pg_event_trigger') AS comment
        FROM pg_event_trigger e
        WHERE {_NOT_EXT.format(cls='pg_event_trigger', oid='e.oid')} ORDER BY e.oid""")
    for r in cur.fetchall():
        stmt = f"CREATE EVENT TRIGGER {q(r['evtname'])} ON {r['evtevent']}"
        if r["evttags"]:
            stmt += f" WHEN TAG IN ({', '.join(lit(t) for t in r['evttags'])})"
        stmts = [stmt + f" EXECUTE FUNCTION {r['fn']}()"]
        word = {"O": None, "D": "DISABLE", "R": "ENABLE REPLICA", "A": "ENABLE ALWAYS"}[
            r["evtenabled"]]
        if word:
            stmts.append(f"ALTER EVENT TRIGGER {q(r['evtname'])} {word}")
        r["ident"] = r["evtname"]
        out.append(_obj(r, "event trigger", stmts, f"EVENT TRIGGER {q(r['evtname'])}",
                        late=True, namespace=""))
    out += _publications(cur)
    out += _default_acls(cur)
    return out


def _publications(cur: Cursor) -> list[PgObject]:
    cur.execute(
        """SELECT p.oid, p.pubname, p.puballtables, p.pubinsert, p.pubupdate, p.pubdelete,
            p.pubtruncate, p.pubviaroot, pg_get_userbyid(p.pubowner) AS owner,
            obj_description(p.oid, 'pg_publication') AS comment
        FROM pg_publication p ORDER BY p.oid""")
    out = []
    for r in cur.fetchall():
        name = q(r["pubname"])
        publish = ", ".join(w for w, on in (("insert", r["pubinsert"]), ("update", r["pubupdate"]),
                                             ("delete", r["pubdelete"]),
                                             ("truncate", r["pubtruncate"])) if on)
        stmts = [f"CREATE PUBLICATION {name}{' FOR ALL TABLES' if r['puballtables'] else ''} "
                 f"WITH (publish = {lit(publish)}, publish_via_partition_root = "
                 f"{'true' if r['pubviaroot'] else 'false'})"]
        cur.execute(
            """SELECT format('%%I.%%I', n.nspname, c.relname) AS rel,
                pg_get_expr(pr.prqual, pr.prrelid) AS qual,
                (SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY k.i)
                 FROM unnest(pr.prattrs) WITH ORDINALITY k(n, i)
                 JOIN pg_attribute a ON a.attrelid = pr.prrelid AND a.attnum = k.n) AS cols
            FROM pg_publication_rel pr JOIN pg_class c ON c.oid = pr.prrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace WHERE pr.prpubid = %s ORDER BY 1""",
            (r["oid"],),
        )
        for t in cur.fetchall():
            stmt = f"ALTER PUBLICATION {name} ADD TABLE ONLY {t['rel']}"
            if t["cols"]:
                stmt += f" ({t['cols']})"
            if t["qual"]:
                stmt += f" WHERE ({t['qual']})"
            stmts.append(stmt)
        cur.execute(
            """SELECT quote_ident(n.nspname) AS nsp FROM pg_publication_namespace pn
            JOIN pg_namespace n ON n.oid = pn.pnnspid WHERE pn.pnpubid = %s ORDER BY 1""",
            (r["oid"],),
        )
        for s in cur.fetchall():
            stmts.append(f"ALTER PUBLICATION {name} ADD TABLES IN SCHEMA {s['nsp']}")
        r["ident"] = r["pubname"]
        out.append(_obj(r, "publication", stmts, f"PUBLICATION {name}", late=True,
                        namespace=""))
    return out


_DEFACL_WORDS = {"r": "TABLES", "S": "SEQUENCES", "f": "FUNCTIONS", "T": "TYPES",
                 "n": "SCHEMAS"}


_OWN_ROLE = "WHERE d.defaclrole = (SELECT oid FROM pg_roles WHERE rolname = current_user)"


def own_default_acls(cur: Cursor) -> list[PgObject]:
    """The default privileges of the current role: the ones that apply to what it creates."""
    return _default_acls(cur, own=True)


def _default_acls(cur: Cursor, *, own: bool = False) -> list[PgObject]:
    """``ALTER DEFAULT PRIVILEGES``: revoke what the built-in default gives, grant the rest."""
    from preimage.connectors.postgres.ddl import acl_grants

    cur.execute(
        f"""SELECT d.oid, pg_get_userbyid(d.defaclrole) AS role, d.defaclobjtype,
            (SELECT nspname FROM pg_namespace WHERE oid = d.defaclnamespace) AS nsp,
            ARRAY(SELECT x::text FROM unnest(d.defaclacl) x ORDER BY 1) AS acl,
            ARRAY(SELECT x::text FROM unnest(acldefault(
                CASE d.defaclobjtype WHEN 'S' THEN 's' ELSE d.defaclobjtype END,
                d.defaclrole)) x ORDER BY 1) AS builtin
        FROM pg_default_acl d {_OWN_ROLE if own else ""}
        ORDER BY d.oid""")
    out = []
    for r in cur.fetchall():
        word = _DEFACL_WORDS[r["defaclobjtype"]]
        head = f"ALTER DEFAULT PRIVILEGES FOR ROLE {q(r['role'])}"
        if r["nsp"]:
            head += f" IN SCHEMA {q(r['nsp'])}"
        base = [] if r["nsp"] else list(r["builtin"])
        stmts = [f"{head} {s}" for s in acl_grants(word, base, list(r["acl"]))]
        r["ident"] = f"{r['role']}{' IN SCHEMA ' + r['nsp'] if r['nsp'] else ''} ON {word}"
        reset = [f"{head} {s}" for s in acl_grants(word, list(r["acl"]), base)]
        out.append(PgObject(
            objtype="default acl", namespace=r["nsp"] or "", name=r["ident"], definition=stmts,
            ref="", drop="\n".join(reset), late=True, oid=r["oid"],
        ))
    return out
