"""Reading a target's objects (and optionally rows) in one transaction."""

from __future__ import annotations

from typing import Any

from preimage.connectors.postgres import catalog, lowlevel, objects
from preimage.connectors.postgres.audit import audit
from preimage.connectors.postgres.largeobjects import read_large_objects
from preimage.connectors.postgres.order import addresses, dependencies
from preimage.connectors.postgres.psql_copy import big_tables, open_session
from preimage.connectors.postgres.rows import copy_out
from preimage.connectors.postgres.rows_beside import read_rows_beside
from preimage.connectors.postgres.scope import PgScope
from preimage.interface.blobs import BlobStore
from preimage.snapshot_schemas import Uncaptured
from preimage.snapshot_schemas.postgres import PgFunction, PgObject, PgSchema, PgTable, PgView

Cursor = Any


def prepare_session(cur: Cursor) -> None:
    """Empty ``search_path`` (definitions print schema-qualified), no function body checks.

    The role's own search_path is kept aside for evaluating row predicates.
    """
    cur.execute("SELECT pg_catalog.set_config('preimage.user_search_path', "
                "pg_catalog.current_setting('search_path'), true)")
    cur.execute("SELECT pg_catalog.set_config('search_path', '', true)")
    cur.execute("SET LOCAL check_function_bodies = off")
    # Rows are read in storage order, as pg_dump reads them: one plain scan from the start.
    cur.execute("SET LOCAL synchronize_seqscans = off")
    cur.execute("SET LOCAL max_parallel_workers_per_gather = 0")


def read_state(cur: Cursor, scope: PgScope, blobs: BlobStore | None) -> list[Any]:
    """The items of ``scope`` in dependency order (:mod:`.order`); rows go to ``blobs``
    when given."""
    items: list[Any] = []
    schemas: list[str] | None = None
    if scope.scope == "database":
        items.append(catalog.read_database(cur, scope.database))
        schemas = catalog.user_schemas(cur)
    elif scope.scope == "schema":
        schemas = list(scope.names)
    if schemas is not None:
        schema_items = catalog.read_schemas(cur, schemas)
        items += schema_items
        if scope.scope == "database":
            items += catalog.read_extensions(cur)
        present = [s.name for s in schema_items if isinstance(s, PgSchema) and s.exists]
        table_oids = catalog.tables_of_schemas(cur, present)
        absent: list[tuple[str, str]] = []
        schemas = present
    else:
        table_oids, absent = catalog.named_tables(cur, scope.names)
    # The tables first: their rows are read beside the rest of the catalog (.rows_beside).
    tables = catalog.read_tables(cur, table_oids)
    where = scope.where if scope.scope == "rows" else None

    def rest() -> tuple[list[Any], list[PgView], list[Any]]:
        return _read_rest(cur, scope, table_oids, schemas)

    if blobs is None:
        before, views, after = rest()
    elif where is not None:
        tables = [copy_out(cur, t, blobs, where).model_copy(update={"row_filter": where})
                  for t in tables]
        before, views, after = rest()
    else:
        # a big whole table is read by psql sessions in this transaction's snapshot
        big = big_tables(cur, [t.oid for t in tables if t.oid])
        psql = open_session(cur) if big else None
        tables, (before, views, after) = read_rows_beside(cur, tables, blobs, big, psql, rest)
    items += before
    items += tables
    items += [PgTable(namespace=s, name=n, exists=False) for s, n in absent]
    if scope.scope == "rows":
        return items
    items += views
    items += after
    if scope.scope == "database":
        items += read_large_objects(cur, blobs)
    relations = [t.oid for t in tables if t.oid] + [v.oid for v in views if v.oid]
    items += objects.rules(cur, relations)
    items += objects.statistics(cur, relations)
    return dependencies(cur, items)


def _read_rest(cur: Cursor, scope: PgScope, table_oids: list[int], schemas: list[str] | None
               ) -> tuple[list[Any], list[PgView], list[Any]]:
    """What the tables' rows are not needed for: the types, functions and sequences the
    tables use; the views; the other objects of the schemas and of the database."""
    if scope.scope == "rows":
        return [], [], []
    before: list[Any] = catalog.read_types(cur, catalog.types_for(cur, table_oids, schemas))
    before += catalog.read_functions(cur, catalog.functions_for(cur, table_oids, schemas))
    before += catalog.read_sequences(cur, catalog.sequences_for(cur, table_oids, schemas))
    views = catalog.read_views(cur, catalog.views_for(cur, table_oids, schemas))
    items: list[Any] = []
    if schemas is not None:
        for read in (objects.aggregates, objects.operators, objects.casts, objects.collations,
                     objects.conversions, lowlevel.text_search_machinery, objects.text_search,
                     objects.foreign_tables, lowlevel.operator_classes, lowlevel.base_types):
            items += read(cur, schemas)
    if scope.scope == "database":
        items += objects.database_objects(cur)
        items += lowlevel.languages_and_transforms(cur)
    return before, views, items


def audit_state(cur: Cursor, scope: PgScope, items: list[Any]) -> list[Uncaptured]:
    """What lies in ``scope`` that ``items`` (as :func:`read_state` read them) lack."""
    if scope.scope == "rows":
        return []  # a row scope holds rows only; their table is the caller's to capture
    if scope.scope == "database":
        schemas: list[str] | None = [i.name for i in items if isinstance(i, PgSchema) and i.exists]
    elif scope.scope == "schema":
        schemas = [i.name for i in items if isinstance(i, PgSchema) and i.exists]
    else:
        schemas = None
    relations = [i.oid for i in items if isinstance(i, PgTable | PgView) and i.oid]
    relations += [i.oid for i in items
                  if isinstance(i, PgObject) and i.objtype == "foreign table" and i.oid]
    temporary = [Uncaptured(
        name=f"{f.namespace}.{f.name}({f.arguments})", kind="function",
        reason=f"uses {', '.join(f.temporary)}, a temporary object of another session: it "
               "cannot be made again from outside that session (a restore leaves it as it is)")
        for f in items if isinstance(f, PgFunction) and f.temporary]
    return temporary + audit(cur, set(addresses(cur, items)), schemas=schemas,
                             whole_database=scope.scope == "database", relations=relations)
