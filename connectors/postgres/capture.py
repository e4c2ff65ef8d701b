"""Reading a target's objects (and optionally rows) in one transaction."""

from __future__ import annotations

from typing import Any

from preimage._blobs import BlobStore
from preimage.connectors.postgres import catalog
from preimage.connectors.postgres.rows import copy_out
from preimage.connectors.postgres.scope import PgScope
from preimage.snapshot_schemas.postgres import PgSchema, PgTable

Cursor = Any


def prepare_session(cur: Cursor) -> None:
    """Empty ``search_path`` (definitions print schema-qualified), no function body checks.

    The role's own search_path is kept aside for evaluating row predicates.
    """
    cur.execute("SELECT pg_catalog.set_config('preimage.user_search_path', "
                "pg_catalog.current_setting('search_path'), true)")
    cur.execute("SELECT pg_catalog.set_config('search_path', '', true)")
    cur.execute("SET LOCAL check_function_bodies = off")


def read_state(cur: Cursor, scope: PgScope, blobs: BlobStore | None) -> list[Any]:
    """The items of ``scope`` in restore order; rows go to ``blobs`` when given.

    Order: database, schemas, extensions, types, functions, sequences, tables
    (parents first), views.
    """
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
    if scope.scope != "rows":
        items += catalog.read_types(cur, catalog.types_for(cur, table_oids, schemas))
        items += catalog.read_functions(cur, catalog.functions_for(cur, table_oids, schemas))
        items += catalog.read_sequences(cur, catalog.sequences_for(cur, table_oids, schemas))
    tables = catalog.read_tables(cur, table_oids)
    if blobs is not None:
        where = scope.where if scope.scope == "rows" else None
        tables = [copy_out(cur, t, blobs, where) for t in tables]
        if where is not None:
            tables = [t.model_copy(update={"row_filter": where}) for t in tables]
    items += tables
    items += [PgTable(namespace=s, name=n, exists=False) for s, n in absent]
    if scope.scope != "rows":
        items += catalog.read_views(cur, catalog.views_for(cur, table_oids, schemas))
    return items
