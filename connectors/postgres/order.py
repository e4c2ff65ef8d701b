"""Dependency order from the catalog, as ``pg_dump`` computes it.

Every captured object gets a catalog address (``classid``, ``objid``); the
edges of ``pg_depend`` between captured objects become each item's
``depends`` (natural keys), and the items are sorted so that nothing comes
before what it needs — a function ``RETURNS SETOF`` a table after the table,
a view after the aggregate it calls, a table after the domain of its column.

Which parts of an object count:

* a table's columns (types, collations) and its partition/inheritance
  parents; a default only when it calls no captured function — a default that
  does is set after everything is created (``late_defaults``), which breaks
  the cycle "table default → function → the table's row type" the way
  ``pg_dump`` does (it dumps such a default separately);
* constraints, indexes, triggers and policies are created after the rows, so
  their dependencies never order the objects before the rows;
* a view's ``_RETURN`` rule; a view that needs a constraint (``GROUP BY`` a
  primary key) is created after the constraints (``late``);
* an object's schema is not an edge (a schema has the first rank; the built-in
  ``public`` is pinned, so its edges exist only once it was re-created);
* function bodies are not checked on restore (``check_function_bodies =
  off``), so only a body written as SQL-standard ``BEGIN ATOMIC`` adds edges.

Cycles left after that are broken by taking the earliest remaining object in
capture order (:func:`sort_items`).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

from preimage.snapshot_schemas.postgres import (
    PgExtension,
    PgFunction,
    PgLargeObject,
    PgObject,
    PgSchema,
    PgSequence,
    PgTable,
    PgType,
    PgView,
)

Cursor = Any
Address = tuple[str, int]

# pg_dump's priority of kinds: ties in the dependency order go to the earlier kind.
RANK = {"database": 0, "schema": 1, "extension": 2, "type": 4, "function": 5, "sequence": 7,
        "table": 8, "view": 9}
OBJECT_RANK = {"collation": 3, "access method": 3, "foreign-data wrapper": 3, "server": 3,
               "shell type": 3, "language": 3, "base type": 4, "text search parser": 5,
               "text search template": 5, "operator family": 6, "operator class": 6,
               "transform": 6,
               "conversion": 6, "aggregate": 6, "operator": 6, "cast": 6,
               "text search dictionary": 6, "text search configuration": 6,
               "foreign table": 8}


def rank(item: Any) -> int:
    """Kind priority of an item (lower first)."""
    if isinstance(item, PgObject):
        return 10 if item.late else OBJECT_RANK.get(item.objtype, 6)
    return RANK.get(item.kind, 6)


def addresses(cur: Cursor, items: list[Any]) -> dict[Address, str]:
    """Catalog address → natural key of every captured item (row types included)."""
    out: dict[Address, str] = {}
    rels: dict[int, str] = {}
    for item in items:
        key = item.natural_key()
        if isinstance(item, PgTable | PgView | PgSequence) and item.oid:
            out[("pg_class", item.oid)] = key
            rels[item.oid] = key
        elif isinstance(item, PgType) and item.oid:
            out[("pg_type", item.oid)] = key
        elif isinstance(item, PgFunction) and item.oid:
            out[("pg_proc", item.oid)] = key
        elif isinstance(item, PgObject) and item.oid:
            from preimage.connectors.postgres.objects import CATALOG

            out[(CATALOG.get(item.objtype, "?"), item.oid)] = key
            if item.objtype == "foreign table":
                rels[item.oid] = key
        elif isinstance(item, PgSchema) and item.oid:
            out[("pg_namespace", item.oid)] = key
        elif isinstance(item, PgLargeObject):
            out[("pg_largeobject", item.loid)] = key
    names = [i.name for i in items if isinstance(i, PgExtension)]
    if names:
        cur.execute("SELECT oid, extname FROM pg_extension WHERE extname = ANY(%s)", (names,))
        for r in cur.fetchall():
            out[("pg_extension", r["oid"])] = PgExtension(
                name=r["extname"], namespace="", version="").natural_key()
    # Row types (and their arrays) of relations, arrays of captured types.
    typs = [o for (c, o) in out if c == "pg_type"]
    cur.execute(
        """SELECT t.oid, t.typrelid, e.oid AS elem, e.typrelid AS elem_rel FROM pg_type t
        LEFT JOIN pg_type e ON e.typarray = t.oid
        WHERE t.typrelid = ANY(%s) OR e.typrelid = ANY(%s) OR e.oid = ANY(%s)""",
        (list(rels), list(rels), typs),
    )
    for r in cur.fetchall():
        if r["typrelid"] in rels:
            out[("pg_type", r["oid"])] = rels[r["typrelid"]]
        elif r["elem"] is not None:
            owner = out.get(("pg_type", r["elem"])) or rels.get(r["elem_rel"])
            if owner is not None:
                out[("pg_type", r["oid"])] = owner
    return out


# Each dependent catalog row → (owning relation or type oid, part).  Parts: "body" counts
# for creation order; "default" is a column default; "post" is created after the rows;
# "constraint" marks a view's need for a table constraint.
_PARTS = """
SELECT 'pg_attrdef' AS cls, d.oid, 'pg_class' AS ocls, d.adrelid AS owner,
       CASE WHEN a.attgenerated <> '' THEN 'body' ELSE 'default' END AS part
  FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
 WHERE d.adrelid = ANY(%(rels)s)
UNION ALL
SELECT 'pg_constraint', c.oid,
       CASE WHEN c.conrelid <> 0 THEN 'pg_class' ELSE 'pg_type' END,
       CASE WHEN c.conrelid <> 0 THEN c.conrelid ELSE c.contypid END,
       CASE WHEN c.conrelid <> 0 THEN 'constraint' ELSE 'body' END
  FROM pg_constraint c WHERE c.conrelid = ANY(%(rels)s) OR c.contypid = ANY(%(types)s)
UNION ALL
SELECT 'pg_trigger', t.oid, 'pg_class', t.tgrelid, 'post' FROM pg_trigger t
 WHERE t.tgrelid = ANY(%(rels)s)
UNION ALL
SELECT 'pg_policy', p.oid, 'pg_class', p.polrelid, 'post' FROM pg_policy p
 WHERE p.polrelid = ANY(%(rels)s)
UNION ALL
SELECT 'pg_class', i.indexrelid, 'pg_class', i.indrelid, 'post' FROM pg_index i
 WHERE i.indrelid = ANY(%(rels)s)
UNION ALL
SELECT 'pg_rewrite', r.oid, 'pg_class', r.ev_class, 'body' FROM pg_rewrite r
 WHERE r.ev_class = ANY(%(rels)s) AND r.rulename = '_RETURN'
UNION ALL
SELECT d.classid::regclass::text, d.objid, d.refclassid::regclass::text, d.refobjid, 'body'
  FROM pg_depend d
 WHERE d.classid IN ('pg_amop'::regclass, 'pg_amproc'::regclass) AND d.objid >= 16384
   AND d.refclassid IN ('pg_opclass'::regclass, 'pg_opfamily'::regclass)
   AND d.deptype IN ('a', 'i')
"""


def dependencies(cur: Cursor, items: list[Any]) -> list[Any]:
    """``items`` with ``depends`` (and tables' ``late_defaults``, views' ``late``) filled in
    from ``pg_depend``, sorted in dependency order."""
    addr = addresses(cur, items)
    if not addr:
        return items
    rels = [o for (c, o) in addr if c == "pg_class"]
    types = [o for (c, o) in addr if c == "pg_type"]
    cur.execute(_PARTS, {"rels": rels, "types": types})
    parts: dict[Address, tuple[str, str]] = {}   # dependent row → (owner key, part)
    for r in cur.fetchall():
        owner = addr.get((r["ocls"], r["owner"]))
        if owner is not None and (r["cls"], r["oid"]) not in addr:
            parts[(r["cls"], r["oid"])] = (owner, r["part"])
    cur.execute(
        """SELECT classid::regclass::text AS cls, objid, objsubid,
            refclassid::regclass::text AS refcls, refobjid, deptype
        FROM pg_depend WHERE deptype IN ('n', 'a') AND objid >= 16384 AND refobjid >= 16384
          AND refclassid <> 'pg_namespace'::regclass""")
    deps: dict[str, set[str]] = {}
    late_defaults: dict[str, set[int]] = {}
    constraint_keys: set[str] = set()
    for r in cur.fetchall():
        target = addr.get((r["refcls"], r["refobjid"]))
        if target is None:
            held = parts.get((r["refcls"], r["refobjid"]))
            if held is None or held[1] != "constraint":
                continue
            target, ref_part = held[0], "constraint"
        else:
            ref_part = "body"
        src = addr.get((r["cls"], r["objid"]))
        part = "body"
        if src is None:
            found = parts.get((r["cls"], r["objid"]))
            if found is None:
                continue
            src, part = found
        if src == target or part in ("post", "constraint"):
            continue
        if r["cls"] == "pg_class" and r["deptype"] == "a" and r["refcls"] == "pg_class" \
                and src.startswith("kind=sequence"):
            continue  # OWNED BY: set after the table exists
        if ref_part == "constraint":
            constraint_keys.add(src)
            continue
        if part == "default" and r["refcls"] == "pg_proc":
            late_defaults.setdefault(src, set()).add(r["objid"])
            continue
        deps.setdefault(src, set()).add(target)
    _shells_first(items, deps)
    late_names: dict[str, list[str]] = {}
    if late_defaults:
        cur.execute(
            """SELECT d.oid, a.attname FROM pg_attrdef d JOIN pg_attribute a
               ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.oid = ANY(%s)""",
            ([o for v in late_defaults.values() for o in v],),
        )
        names = {r["oid"]: r["attname"] for r in cur.fetchall()}
        late_names = {key: sorted({names[i] for i in ids if i in names})
                      for key, ids in late_defaults.items()}
    # A view that needs a late view is late too.
    late_views = set(constraint_keys)
    changed = True
    while changed:
        changed = False
        for src, targets in deps.items():
            if src not in late_views and src.startswith("kind=view") and targets & late_views:
                late_views.add(src)
                changed = True
    out = []
    for item in items:
        key = item.natural_key()
        update: dict[str, Any] = {}
        if hasattr(item, "depends"):
            update["depends"] = sorted(deps.get(key, set()))
        if isinstance(item, PgTable) and key in late_names:
            update["late_defaults"] = late_names[key]
        if isinstance(item, PgView) and key in late_views:
            update["late"] = True
        out.append(item.model_copy(update=update) if update else item)
    return sort_items(out)


def _shells_first(items: list[Any], deps: dict[str, set[str]]) -> None:
    """Break the cycle between a base type and its input/output functions as pg_dump does:
    the shell type (which holds the type's catalog address) comes first, the functions
    after it, the full ``CREATE TYPE`` after them; everything else that uses the type
    waits for the full definition."""
    for item in items:
        if not (isinstance(item, PgObject) and item.objtype == "base type"):
            continue
        base = item.natural_key()
        shell = item.model_copy(update={"objtype": "shell type"}).natural_key()
        deps[base] = deps.pop(shell, set()) | {shell}
        for src, targets in deps.items():
            if shell in targets and src != base and not src.startswith("kind=function"):
                targets.discard(shell)
                targets.add(base)


def sort_items(items: Iterable[Any]) -> list[Any]:
    """Topological order by ``depends``; ties (and cycle breaks) by kind rank, then the
    given order.  Partition and inheritance children always follow their parents."""
    items = list(items)
    keys = {i.natural_key(): n for n, i in enumerate(items)}
    need: dict[int, set[int]] = {}
    for n, item in enumerate(items):
        wanted = set(getattr(item, "depends", []) or [])
        if isinstance(item, PgTable):
            parents = [item.partition_of] if item.partition_of else list(item.inherits)
            for p in parents:
                wanted |= {k for k, m in keys.items() if isinstance(items[m], PgTable)
                           and _quoted_name(items[m]) == p}
        need[n] = {keys[k] for k in wanted if k in keys and keys[k] != n}
    users: dict[int, list[int]] = {}
    for n, ns in need.items():
        for m in ns:
            users.setdefault(m, []).append(n)
    heap = [(rank(items[n]), n) for n in range(len(items)) if not need[n]]
    heapq.heapify(heap)
    done: set[int] = set()
    out: list[Any] = []
    while len(done) < len(items):
        if not heap:  # a cycle: take the earliest remaining object and go on
            n = min((rank(items[n]), n) for n in range(len(items)) if n not in done)[1]
            heapq.heappush(heap, (rank(items[n]), n))
            need[n] = set()
        _, n = heapq.heappop(heap)
        if n in done:
            continue
        done.add(n)
        out.append(items[n])
        for m in users.get(n, []):
            need[m].discard(n)
            if not need[m] and m not in done:
                heapq.heappush(heap, (rank(items[m]), m))
    return out


def _quoted_name(t: PgTable) -> str:
    from preimage.connectors.postgres.plan import quoted_table

    return quoted_table(t)
