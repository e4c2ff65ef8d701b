"""Object kinds built on the server's own machinery, read as the statements that create them.

Operator families and classes (with their operators and support functions),
text-search parsers and templates, base types (with a shell type first, so
their input/output functions can name them), procedural languages and
transforms.  Their functions are usually written in C; the statements name
them, so a restore needs the same functions (an extension's, or ones the
target holds) — as ``pg_dump`` does.  Each reader returns
:class:`~preimage.snapshot_schemas.postgres.PgObject` items.

Operator families are always created explicitly and their classes name the
family (``FAMILY``), which gives the same catalog rows as a class that made
its family implicitly; operators and functions that belong to the family but
to no class are added with it (``ALTER OPERATOR FAMILY … ADD``).
"""

from __future__ import annotations

from typing import Any

from preimage.connectors.postgres.ddl import lit, q, qn
from preimage.snapshot_schemas.postgres import PgObject

Cursor = Any

_NOT_EXT = """NOT EXISTS (SELECT 1 FROM pg_depend dx WHERE dx.classid = '{cls}'::regclass
                        AND dx.objid = {oid} AND dx.deptype IN ('e', 'i'))"""


def _obj(r: dict[str, Any], objtype: str, definition: list[str], ref: str, *,
         drop: str | None = None, namespace: str | None = None, late: bool = False) -> PgObject:
    return PgObject(
        objtype=objtype, namespace=namespace if namespace is not None else (r.get("nsp") or ""),
        name=r["ident"], definition=definition, ref=ref, drop=drop if drop is not None
        else f"DROP {ref}", late=late, owner=r.get("owner"), acl=list(r.get("acl") or []),
        comment=r.get("comment"), oid=r["oid"],
    )


# ---------------------------------------------------------------- operator families, classes
_MEMBERS = """
SELECT 'OPERATOR ' || o.amopstrategy || ' ' || format('%%I.%%s', on_.nspname, op.oprname)
       || '(' || format_type(o.amoplefttype, NULL) || ', ' || format_type(o.amoprighttype, NULL)
       || ')' || CASE WHEN o.amoppurpose = 's' THEN ''
                 ELSE ' FOR ORDER BY ' || (SELECT format('%%I.%%I', sn.nspname, sf.opfname)
                      FROM pg_opfamily sf JOIN pg_namespace sn ON sn.oid = sf.opfnamespace
                      WHERE sf.oid = o.amopsortfamily) END AS item,
       d.refclassid = 'pg_opclass'::regclass AS in_class, d.refobjid AS owner, 0 AS kind,
       o.amopstrategy AS num, o.amoplefttype AS lt, o.amoprighttype AS rt
  FROM pg_amop o JOIN pg_operator op ON op.oid = o.amopopr
  JOIN pg_namespace on_ ON on_.oid = op.oprnamespace
  JOIN pg_depend d ON d.classid = 'pg_amop'::regclass AND d.objid = o.oid
   AND d.refclassid IN ('pg_opclass'::regclass, 'pg_opfamily'::regclass)
 WHERE d.refobjid = ANY(%(owners)s)
UNION ALL
SELECT 'FUNCTION ' || p.amprocnum || ' (' || format_type(p.amproclefttype, NULL) || ', '
       || format_type(p.amprocrighttype, NULL) || ') ' || p.amproc::regprocedure::text,
       d.refclassid = 'pg_opclass'::regclass, d.refobjid, 1, p.amprocnum, p.amproclefttype,
       p.amprocrighttype
  FROM pg_amproc p
  JOIN pg_depend d ON d.classid = 'pg_amproc'::regclass AND d.objid = p.oid
   AND d.refclassid IN ('pg_opclass'::regclass, 'pg_opfamily'::regclass)
 WHERE d.refobjid = ANY(%(owners)s)
ORDER BY kind, num, lt, rt
"""


def operator_classes(cur: Cursor, schemas: list[str]) -> list[PgObject]:
    """Operator families (with the members no class holds) and operator classes."""
    cur.execute(
        f"""SELECT f.oid, n.nspname AS nsp, f.opfname, am.amname,
            pg_get_userbyid(f.opfowner) AS owner,
            obj_description(f.oid, 'pg_opfamily') AS comment
        FROM pg_opfamily f JOIN pg_namespace n ON n.oid = f.opfnamespace
        JOIN pg_am am ON am.oid = f.opfmethod
        WHERE n.nspname = ANY(%s) AND {_NOT_EXT.format(cls='pg_opfamily', oid='f.oid')}
        ORDER BY f.oid""",
        (schemas,),
    )
    families = cur.fetchall()
    cur.execute(
        f"""SELECT c.oid, n.nspname AS nsp, c.opcname, am.amname, c.opcdefault,
            format_type(c.opcintype, NULL) AS intype,
            CASE WHEN c.opckeytype <> 0 THEN format_type(c.opckeytype, NULL) END AS keytype,
            (SELECT format('%%I.%%I', fn.nspname, f.opfname) FROM pg_opfamily f
             JOIN pg_namespace fn ON fn.oid = f.opfnamespace WHERE f.oid = c.opcfamily) AS family,
            pg_get_userbyid(c.opcowner) AS owner,
            obj_description(c.oid, 'pg_opclass') AS comment
        FROM pg_opclass c JOIN pg_namespace n ON n.oid = c.opcnamespace
        JOIN pg_am am ON am.oid = c.opcmethod
        WHERE n.nspname = ANY(%s) AND {_NOT_EXT.format(cls='pg_opclass', oid='c.oid')}
        ORDER BY c.oid""",
        (schemas,),
    )
    classes = cur.fetchall()
    members: dict[tuple[bool, int], list[str]] = {}
    owners = [r["oid"] for r in families] + [r["oid"] for r in classes]
    if owners:
        cur.execute(_MEMBERS, {"owners": owners})
        for m in cur.fetchall():
            members.setdefault((m["in_class"], m["owner"]), []).append(m["item"])
    out = []
    for r in families:
        name = qn(r["nsp"], r["opfname"])
        using = f"USING {q(r['amname'])}"
        stmts = [f"CREATE OPERATOR FAMILY {name} {using}"]
        loose = members.get((False, r["oid"]), [])
        if loose:  # operators and functions of the family that no class holds
            stmts.append(f"ALTER OPERATOR FAMILY {name} {using} ADD {', '.join(loose)}")
        r["ident"] = f"{r['opfname']} USING {r['amname']}"
        out.append(_obj(r, "operator family", stmts, f"OPERATOR FAMILY {name} {using}"))
    for r in classes:
        name = qn(r["nsp"], r["opcname"])
        items = list(members.get((True, r["oid"]), []))
        if r["keytype"]:
            items.append(f"STORAGE {r['keytype']}")
        if not items:
            items.append(f"STORAGE {r['intype']}")
        default = "DEFAULT " if r["opcdefault"] else ""
        using = f"USING {q(r['amname'])}"
        r["ident"] = f"{r['opcname']} USING {r['amname']}"
        out.append(_obj(r, "operator class", [
            f"CREATE OPERATOR CLASS {name} {default}FOR TYPE {r['intype']} {using} "
            f"FAMILY {r['family']} AS {', '.join(items)}"], f"OPERATOR CLASS {name} {using}"))
    return out


# ---------------------------------------------------------------- text search
def text_search_machinery(cur: Cursor, schemas: list[str]) -> list[PgObject]:
    """Text-search parsers and templates (their functions are C; the statements name them)."""
    cur.execute(
        f"""SELECT p.oid, n.nspname AS nsp, p.prsname, p.prsstart::regproc::text AS start,
            p.prstoken::regproc::text AS gettoken, p.prsend::regproc::text AS "end",
            p.prslextype::regproc::text AS lextypes,
            nullif(p.prsheadline, 0)::regproc::text AS headline,
            obj_description(p.oid, 'pg_ts_parser') AS comment
        FROM pg_ts_parser p JOIN pg_namespace n ON n.oid = p.prsnamespace
        WHERE n.nspname = ANY(%s) AND {_NOT_EXT.format(cls='pg_ts_parser', oid='p.oid')}
        ORDER BY p.oid""",
        (schemas,),
    )
    out = []
    for r in cur.fetchall():
        name = qn(r["nsp"], r["prsname"])
        opts = [f"START = {r['start']}", f"GETTOKEN = {r['gettoken']}", f"END = {r['end']}",
                f"LEXTYPES = {r['lextypes']}"]
        if r["headline"]:
            opts.append(f"HEADLINE = {r['headline']}")
        r["ident"] = r["prsname"]
        out.append(_obj(r, "text search parser",
                        [f"CREATE TEXT SEARCH PARSER {name} ({', '.join(opts)})"],
                        f"TEXT SEARCH PARSER {name}"))
    cur.execute(
        f"""SELECT t.oid, n.nspname AS nsp, t.tmplname,
            nullif(t.tmplinit, 0)::regproc::text AS init, t.tmpllexize::regproc::text AS lexize,
            obj_description(t.oid, 'pg_ts_template') AS comment
        FROM pg_ts_template t JOIN pg_namespace n ON n.oid = t.tmplnamespace
        WHERE n.nspname = ANY(%s) AND {_NOT_EXT.format(cls='pg_ts_template', oid='t.oid')}
        ORDER BY t.oid""",
        (schemas,),
    )
    for r in cur.fetchall():
        name = qn(r["nsp"], r["tmplname"])
        opts = ([f"INIT = {r['init']}"] if r["init"] else []) + [f"LEXIZE = {r['lexize']}"]
        r["ident"] = r["tmplname"]
        out.append(_obj(r, "text search template",
                        [f"CREATE TEXT SEARCH TEMPLATE {name} ({', '.join(opts)})"],
                        f"TEXT SEARCH TEMPLATE {name}"))
    return out


# ---------------------------------------------------------------- base and shell types
_ALIGN = {"c": "char", "s": "int2", "i": "int4", "d": "double"}
_STORE = {"p": "plain", "e": "external", "x": "extended", "m": "main"}


def base_types(cur: Cursor, schemas: list[str]) -> list[PgObject]:
    """Base types as a shell type (``CREATE TYPE s.t``, which their input/output functions
    can name) plus the full ``CREATE TYPE s.t (INPUT = …)``; shell types on their own."""
    cur.execute(
        f"""SELECT t.oid, n.nspname AS nsp, t.typname, t.typtype, t.typisdefined,
            t.typinput::regproc::text AS input, t.typoutput::regproc::text AS output,
            nullif(t.typreceive, 0)::regproc::text AS receive,
            nullif(t.typsend, 0)::regproc::text AS send,
            nullif(t.typmodin, 0)::regproc::text AS typmod_in,
            nullif(t.typmodout, 0)::regproc::text AS typmod_out,
            nullif(t.typanalyze, 0)::regproc::text AS analyze,
            nullif(t.typsubscript, 0)::regproc::text AS subscript,
            t.typlen, t.typbyval, t.typalign, t.typstorage, t.typcategory, t.typispreferred,
            t.typdefault, CASE WHEN t.typelem <> 0 THEN format_type(t.typelem, NULL) END AS elem,
            t.typdelim, t.typcollation <> 0 AS collatable,
            pg_get_userbyid(t.typowner) AS owner,
            ARRAY(SELECT x::text FROM unnest(coalesce(t.typacl, acldefault('T', t.typowner))) x
                  ORDER BY 1) AS acl,
            obj_description(t.oid, 'pg_type') AS comment
        FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE n.nspname = ANY(%s) AND (t.typtype = 'b' AND t.typcategory <> 'A'
                                       OR t.typtype = 'p' AND NOT t.typisdefined)
          AND {_NOT_EXT.format(cls='pg_type', oid='t.oid')}
        ORDER BY t.oid""",
        (schemas,),
    )
    out = []
    for r in cur.fetchall():
        name = qn(r["nsp"], r["typname"])
        r["ident"] = r["typname"]
        if not r["typisdefined"]:
            out.append(_obj(r, "shell type", [f"CREATE TYPE {name}"], f"TYPE {name}"))
            continue
        opts = [f"INPUT = {r['input']}", f"OUTPUT = {r['output']}"]
        for word in ("receive", "send", "typmod_in", "typmod_out", "analyze", "subscript"):
            if r[word]:
                opts.append(f"{word.upper()} = {r[word]}")
        opts.append(f"INTERNALLENGTH = {'VARIABLE' if r['typlen'] < 0 else r['typlen']}")
        if r["typbyval"]:
            opts.append("PASSEDBYVALUE")
        opts += [f"ALIGNMENT = {_ALIGN[r['typalign']]}", f"STORAGE = {_STORE[r['typstorage']]}",
                 f"CATEGORY = {lit(r['typcategory'])}"]
        if r["typispreferred"]:
            opts.append("PREFERRED = true")
        if r["typdefault"] is not None:
            opts.append(f"DEFAULT = {lit(r['typdefault'])}")
        if r["elem"]:
            opts.append(f"ELEMENT = {r['elem']}")
        opts += [f"DELIMITER = {lit(r['typdelim'])}",
                 f"COLLATABLE = {'true' if r['collatable'] else 'false'}"]
        # The shell carries the type's catalog address (functions are created against it);
        # the full definition comes after the functions (see order.py), and so do owner,
        # comment and grants (a shell has none of its own).
        shell = _obj(r, "shell type", [f"CREATE TYPE {name}"], f"TYPE {name}", drop="")
        out.append(shell.model_copy(update={"owner": None, "acl": [], "comment": None}))
        full = _obj(r, "base type", [f"CREATE TYPE {name} ({', '.join(opts)})"], f"TYPE {name}",
                    drop=f"DROP TYPE {name}")
        out.append(full.model_copy(update={"oid": None}))
    return out


# ---------------------------------------------------------------- languages, transforms
def languages_and_transforms(cur: Cursor) -> list[PgObject]:
    """Procedural languages outside an extension, and transforms (whole-database targets)."""
    cur.execute(
        f"""SELECT l.oid, l.lanname, l.lanpltrusted,
            l.lanplcallfoid::regprocedure::text AS handler,
            nullif(l.laninline, 0)::regprocedure::text AS inline,
            nullif(l.lanvalidator, 0)::regprocedure::text AS validator,
            pg_get_userbyid(l.lanowner) AS owner,
            ARRAY(SELECT x::text FROM unnest(coalesce(l.lanacl, acldefault('l', l.lanowner))) x
                  ORDER BY 1) AS acl,
            obj_description(l.oid, 'pg_language') AS comment
        FROM pg_language l WHERE l.oid >= 16384 AND l.lanispl
          AND {_NOT_EXT.format(cls='pg_language', oid='l.oid')} ORDER BY l.oid""")
    out = []
    for r in cur.fetchall():
        stmt = (f"CREATE {'TRUSTED ' if r['lanpltrusted'] else ''}LANGUAGE {q(r['lanname'])} "
                f"HANDLER {r['handler'].split('(')[0]}")
        if r["inline"]:
            stmt += f" INLINE {r['inline'].split('(')[0]}"
        if r["validator"]:
            stmt += f" VALIDATOR {r['validator'].split('(')[0]}"
        r["ident"] = r["lanname"]
        out.append(_obj(r, "language", [stmt], f"LANGUAGE {q(r['lanname'])}", namespace=""))
    cur.execute(
        f"""SELECT t.oid, format_type(t.trftype, NULL) AS type, l.lanname,
            nullif(t.trffromsql, 0)::regprocedure::text AS fromsql,
            nullif(t.trftosql, 0)::regprocedure::text AS tosql,
            obj_description(t.oid, 'pg_transform') AS comment
        FROM pg_transform t JOIN pg_language l ON l.oid = t.trflang
        WHERE t.oid >= 16384 AND {_NOT_EXT.format(cls='pg_transform', oid='t.oid')}
        ORDER BY t.oid""")
    for r in cur.fetchall():
        what = f"FOR {r['type']} LANGUAGE {q(r['lanname'])}"
        parts = []
        if r["fromsql"]:
            parts.append(f"FROM SQL WITH FUNCTION {r['fromsql']}")
        if r["tosql"]:
            parts.append(f"TO SQL WITH FUNCTION {r['tosql']}")
        r["ident"] = f"{r['type']} {r['lanname']}"
        out.append(_obj(r, "transform", [f"CREATE TRANSFORM {what} ({', '.join(parts)})"],
                        f"TRANSFORM {what}", namespace=""))
    return out
