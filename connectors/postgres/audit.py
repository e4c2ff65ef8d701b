"""The completeness audit: what in the target's scope the capture did not read.

After the capture has read everything it models, the audit enumerates every
user object in scope straight from the system catalogs — every kind
``pg_dump`` dumps — and every per-column or per-table setting the snapshot
does not model.  Whatever the capture did not take becomes an
:class:`~preimage.snapshot_schemas.Uncaptured` entry with its reason, so the
score stays below 1.0 and ``diff`` names it: the meter can never report a
silent 1.0 over state it never saw.

Objects that belong to an extension are the extension's (its name, schema and
version are captured); OIDs below 16384 are PostgreSQL's own.
"""

from __future__ import annotations

from typing import Any

from preimage.connectors.postgres.order import Address
from preimage.snapshot_schemas import Uncaptured

Cursor = Any

# Every top-level object kind with a schema: (catalog, oid column, namespace column, filter).
_IN_SCHEMA = [
    ("pg_class", "relnamespace", "relkind IN ('r', 'p', 'v', 'm', 'S', 'f')"),
    ("pg_type", "typnamespace",
     "typtype IN ('b', 'p') AND typcategory <> 'A' OR typtype IN ('d', 'e', 'r') "
     "OR typtype = 'c' AND (SELECT relkind FROM pg_class WHERE oid = typrelid) = 'c'"),
    ("pg_proc", "pronamespace", "true"),
    ("pg_operator", "oprnamespace", "true"),
    ("pg_opclass", "opcnamespace", "true"),
    ("pg_opfamily", "opfnamespace", "true"),
    ("pg_collation", "collnamespace", "true"),
    ("pg_conversion", "connamespace", "true"),
    ("pg_ts_config", "cfgnamespace", "true"),
    ("pg_ts_dict", "dictnamespace", "true"),
    ("pg_ts_parser", "prsnamespace", "true"),
    ("pg_ts_template", "tmplnamespace", "true"),
    ("pg_statistic_ext", "stxnamespace", "true"),
]
# Objects of the whole database (no schema).
_GLOBAL = [
    ("pg_cast", "true"), ("pg_event_trigger", "true"), ("pg_publication", "true"),
    ("pg_foreign_data_wrapper", "true"), ("pg_foreign_server", "true"),
("pg_default_acl", "true"), ("pg_language", "true"),
    ("pg_am", "true"), ("pg_transform", "true"),
    ("pg_subscription", "subdbid = (SELECT oid FROM pg_database "
                        "WHERE datname = current_database())"),
]

REASONS = {
    "pg_user_mapping": "user mappings hold credentials; they are never stored",
    "pg_subscription": "subscriptions hold connection strings; they are never stored",
}


def _not_ext(catalog: str) -> str:
    # Extension members are the extension's; objects the server made as part of another
    # (a range type's constructors, multirange and casts; an identity sequence) come with it.
    return (f"NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.classid = '{catalog}'::regclass "
            f"AND e.objid = x.oid AND e.deptype IN ('e', 'i'))")


def audit(cur: Cursor, captured: set[Address], *, schemas: list[str] | None,
          whole_database: bool, relations: list[int]) -> list[Uncaptured]:
    """Uncaptured entries for every object in scope whose address is not in ``captured``.

    ``schemas`` are the schemas in scope (``None`` for a table target), ``relations``
    the OIDs of captured tables (their per-column and per-table settings are checked).
    """
    parts: list[str] = []
    if schemas:
        for catalog, nsp_col, filt in _IN_SCHEMA:
            parts.append(
                f"SELECT '{catalog}' AS cls, x.oid FROM {catalog} x JOIN pg_namespace n "
                f"ON n.oid = x.{nsp_col} WHERE n.nspname = ANY(%(schemas)s) AND x.oid >= 16384 "
                f"AND ({filt}) AND {_not_ext(catalog)}")
    if whole_database:
        for catalog, filt in _GLOBAL:
            parts.append(f"SELECT '{catalog}', x.oid FROM {catalog} x WHERE x.oid >= 16384 "
                         f"AND ({filt}) AND {_not_ext(catalog)}")
    if whole_database:
        # pg_user_mapping itself is for superusers only; the view shows every mapping.
        parts.append("SELECT 'pg_user_mapping', x.umid FROM pg_user_mappings x")
        # Large objects are identified by pg_largeobject, listed in its metadata catalog.
        parts.append("SELECT 'pg_largeobject', x.oid FROM pg_largeobject_metadata x")
    if relations:
        # Objects attached to captured tables that are modelled as objects of their own.
        parts.append("SELECT 'pg_rewrite', x.oid FROM pg_rewrite x "
                     "WHERE x.ev_class = ANY(%(rels)s) AND x.rulename <> '_RETURN'")
        parts.append("SELECT 'pg_statistic_ext', x.oid FROM pg_statistic_ext x "
                     "WHERE x.stxrelid = ANY(%(rels)s)")
    out: list[Uncaptured] = []
    if parts:
        cur.execute(
            f"""SELECT u.cls, u.oid, o.type, o.identity FROM ({' UNION '.join(parts)}) u(cls, oid),
                LATERAL pg_identify_object(u.cls::regclass, u.oid, 0) o ORDER BY 1, 2""",
            {"schemas": schemas or [], "rels": relations},
        )
        for r in cur.fetchall():
            if (r["cls"], r["oid"]) in captured:
                continue
            reason = REASONS.get(r["cls"], f"this {r['type']} was not read by the capture")
            out.append(Uncaptured(name=r["identity"], kind=r["type"], reason=reason))
    out += _settings(cur, relations)
    return out


def _settings(cur: Cursor, relations: list[int]) -> list[Uncaptured]:
    """Per-table settings of captured tables that the snapshot does not model: the
    tablespace (a cluster-wide object) of a table or of its indexes, and TOAST storage
    options."""
    if not relations:
        return []
    cur.execute(
        """SELECT format('%%I.%%I', n.nspname, c.relname) AS rel,
            c.reltablespace <> 0 AS tablespace,
            coalesce((SELECT reloptions IS NOT NULL FROM pg_class WHERE oid = c.reltoastrelid),
                     false) AS toast
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.oid = ANY(%s) AND (c.reltablespace <> 0 OR EXISTS (
            SELECT 1 FROM pg_class t WHERE t.oid = c.reltoastrelid AND t.reloptions IS NOT NULL))
        ORDER BY 1""",
        (relations,),
    )
    words = {"tablespace": "tablespace", "toast": "TOAST storage options"}
    out = []
    for r in cur.fetchall():
        for field, word in words.items():
            if r[field]:
                out.append(Uncaptured(name=r["rel"], kind=word, fidelity="metadata",
                                      reason=f"a table's {word} is not captured"))
    # An index's tablespace (its own, not the table's): cluster-wide, like a table's.
    cur.execute(
        """SELECT format('%%I.%%I', n.nspname, c.relname) AS idx
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE i.indrelid = ANY(%s) AND c.reltablespace <> 0 ORDER BY 1""",
        (relations,),
    )
    out += [Uncaptured(name=r["idx"], kind="index tablespace", fidelity="metadata",
                       reason="an index's tablespace is not captured (tablespaces are "
                       "cluster-wide)") for r in cur.fetchall()]
    # PostgreSQL 18's virtual generated columns and NOT VALID NOT NULL constraints: the
    # snapshot's column has no field for either (it would bring back a STORED column and a
    # validated NOT NULL), so they are named here rather than restored differently unseen.
    cur.execute(
        """SELECT format('%%I.%%I.%%I', n.nspname, c.relname, a.attname) AS col
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE a.attrelid = ANY(%s) AND a.attgenerated = 'v' AND NOT a.attisdropped
        ORDER BY 1""",
        (relations,),
    )
    out += [Uncaptured(name=r["col"], kind="virtual generated column", fidelity="metadata",
                       reason="a VIRTUAL generated column is not captured (it would come "
                       "back STORED)") for r in cur.fetchall()]
    cur.execute(
        """SELECT format('%%I.%%I', n.nspname, c.relname) AS rel, x.conname
        FROM pg_constraint x JOIN pg_class c ON c.oid = x.conrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE x.conrelid = ANY(%s) AND x.contype = 'n' AND NOT x.convalidated ORDER BY 1, 2""",
        (relations,),
    )
    out += [Uncaptured(name=f"{r['rel']}.{r['conname']}", kind="not-valid NOT NULL",
                       fidelity="metadata", reason="a NOT VALID NOT NULL constraint is not "
                       "captured (it would come back validated)") for r in cur.fetchall()]
    return out
