"""Snapshot schema of the PostgreSQL connector (v2).

A snapshot holds one item per object in scope — the database itself (whole-
database targets), schemas, extensions, types, functions, sequences, tables and
views — read in one ``REPEATABLE READ`` transaction.  Table rows are streamed
with ``COPY`` into one blob per table; :meth:`PostgresSnapshot.scoring_items`
expands them into one :class:`~preimage.snapshot_schemas.sql.TableRow` per row
(natural key: the primary key, else the whole row) so rows are scored one by one.

Definitions are kept as PostgreSQL itself prints them (``pg_get_constraintdef``,
``pg_get_indexdef``, ``pg_get_triggerdef``, ``pg_get_functiondef``,
``pg_get_viewdef``, ``format_type``) with an empty ``search_path``, so every
name in them is schema-qualified.  By class:

* content  — row values, row counts and digests; columns (name, type); type,
  function and view definitions; whether a named object exists;
* metadata — NOT NULL, defaults, identity and generated columns, collations;
  constraints, indexes, triggers (and whether each is enabled), RLS flags and
  policies; sequence settings and state (``last_value``, ``is_called``,
  increment, min/max, cache, cycle, owned-by); partition keys and bounds,
  inheritance parents, storage options, replica identity; owners, grants
  (ACLs, ``NULL`` read as the type's default ACL) and comments; the database's
  owner, encoding, collation, connection limit and settings;

Version 2 adds :class:`PgObject` (every other kind pg_dump knows: aggregates,
operators, casts, rules, statistics, publications, …), ``depends`` on every
object (the natural keys it needs created first, read from ``pg_depend``), and
rows kept in physical (storage) order; a v1 document loads unchanged.
Version 3 adds per-column privileges, options, statistics targets, storage and
compression, a table's access method, large objects, and the object kinds v2
recorded as uncaptured (operator classes and families, text-search parsers and
templates, base types, languages, transforms).
Version 4 adds the settings v3 missed (a key's index clustered or commented, index
statistics targets, comments on view columns, composite attributes and extensions, role
settings in the database) and ``oracle``: ``pg_dump --schema-only`` of the target in the capture's own
snapshot, normalized and kept as a blob (:mod:`preimage.snapshot_schemas.oracle`).

* server   — OIDs and ``relfilenode``: assigned by the server, different after
  any re-create; per row, ``ctid`` and ``xmin`` (kept in a second blob, line for
  line with the rows): they change on every update and no client can set them.
"""

from __future__ import annotations

import itertools
import struct
from collections import Counter
from collections.abc import Iterator
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from preimage.snapshot_schemas._base import (
    Item,
    Record,
    Snapshot,
    content,
    key,
    metadata,
    register_migration,
    register_snapshot_type,
    server,
)
from preimage.snapshot_schemas.oracle import SchemaOracle
from preimage.snapshot_schemas.sql import TableRow, row_key


class PgRow(TableRow):
    """A table row as scored, with the physical identity the server gave it."""

    ctid: str | None = server(
        None, description="physical location; changes on update",
        reason="PostgreSQL places every row version itself; a re-inserted row lands elsewhere",
    )
    xmin: str | None = server(
        None, description="inserting transaction id",
        reason="the id of the transaction that wrote the row; a restore is a new transaction",
    )


_OID = "PostgreSQL assigns an OID to every object it creates; a re-created one gets a new OID"


class PgColumn(Record):
    """A column of a table (inherited columns included, flagged ``local=False``)."""

    name: str = content()
    type: str = content(description="format_type(), schema-qualified")
    not_null: bool = metadata(False)
    default: str | None = metadata(None, description="default expression (not for generated)")
    identity: Literal["", "a", "d"] = metadata("", description="a=ALWAYS, d=BY DEFAULT")
    generated: str | None = metadata(None, description="expression of a STORED generated column")
    collation: str | None = metadata(None, description="only when not the type's default")
    local: bool = metadata(True, description="declared on this table, not only inherited")
    comment: str | None = metadata(None)
    acl: list[str] = metadata(default_factory=list, description="column privileges (aclitems)",
                              unordered=True)
    options: list[str] = metadata(default_factory=list, description="attoptions (n_distinct, …)",
                                  unordered=True)
    statistics: int = metadata(-1, description="statistics target; -1 is the default")
    storage: str | None = metadata(None, description="p/e/m/x, only when not the type's")
    compression: str | None = metadata(None, description="pglz or lz4, only when set")


class PgConstraint(Record):
    """A table constraint: primary key, unique, foreign key, check, exclusion."""

    name: str = metadata()
    type: Literal["p", "u", "f", "c", "x"] = metadata()
    definition: str = metadata(description="pg_get_constraintdef()")
    comment: str | None = metadata(None)
    attached_to: str | None = metadata(
        None, description="a partition's copy of its parent's key: the parent's index, %I.%I"
    )
    clustered: bool = metadata(False, description="the table is CLUSTERed ON its index")
    index_comment: str | None = metadata(None, description="comment on the key's index")


class PgIndex(Record):
    """An index not created by a constraint."""

    name: str = metadata()
    definition: str = metadata(description="pg_get_indexdef()")
    attached_to: str | None = metadata(None, description="partitioned parent index, %I.%I")
    clustered: bool = metadata(False)
    comment: str | None = metadata(None)
    statistics: dict[str, int] = metadata(
        default_factory=dict,
        description="index column number → statistics target (ALTER INDEX … ALTER COLUMN n "
        "SET STATISTICS), only where set",
    )


class PgTrigger(Record):
    """A user trigger (not the internal triggers of foreign keys)."""

    name: str = metadata()
    definition: str = metadata(description="pg_get_triggerdef()")
    enabled: Literal["O", "D", "R", "A"] = metadata("O")
    comment: str | None = metadata(None)


class PgPolicy(Record):
    """A row-level-security policy."""

    name: str = metadata()
    definition: str = metadata(description="the CREATE POLICY statement")
    comment: str | None = metadata(None)


class PgOwned(Item):
    """What every schema object has: a place, an owner, grants, a comment and an OID."""

    namespace: str = key(description="the schema")
    name: str = key()
    exists: bool = content(True)
    owner: str | None = metadata(None)
    acl: list[str] = metadata(default_factory=list, description="aclitems, sorted", unordered=True)
    comment: str | None = metadata(None)
    depends: list[str] = metadata(
        default_factory=list,
        description="natural keys of captured objects this one needs first (pg_depend)",
        unordered=True,
    )
    oid: int | None = server(None, reason=_OID)

    @property
    def qualified(self) -> str:
        """``schema.name`` as written in a target URI."""
        return f"{self.namespace}.{self.name}"


class PgTable(PgOwned):
    """A table (ordinary or partitioned), its attached objects and a digest of its rows."""

    kind: Literal["table"] = key("table")
    relkind: Literal["r", "p"] = content("r")
    unlogged: bool = metadata(False)
    columns: list[PgColumn] = content(default_factory=list)
    inherits: list[str] = metadata(default_factory=list, description="parents, in order")
    partition_of: str | None = metadata(None)
    partition_bound: str | None = metadata(None)
    partition_key: str | None = metadata(None)
    constraints: list[PgConstraint] = metadata(default_factory=list, keyed_by=("name",))
    indexes: list[PgIndex] = metadata(default_factory=list, keyed_by=("name",))
    triggers: list[PgTrigger] = metadata(default_factory=list, keyed_by=("name",))
    inherited_triggers: dict[str, str] | None = metadata(
        None,
        description="trigger → enabled state (O, D, R, A) of the partition's copies of its "
        "parent's triggers (pg_trigger.tgparentid); None: not recorded (older captures)",
    )
    inherited_keys: list[PgConstraint] | None = metadata(
        None,
        description="the partition's copies of its parent's primary key, unique and exclusion "
        "constraints, each attached to the parent's index; None: not recorded (older captures)",
        keyed_by=("name",),
    )
    policies: list[PgPolicy] = metadata(default_factory=list, keyed_by=("name",))
    rls_enabled: bool = metadata(False)
    rls_forced: bool = metadata(False)
    options: list[str] = metadata(default_factory=list, description="reloptions", unordered=True)
    replica_identity: Literal["d", "n", "f", "i"] = metadata("d")
    row_key: list[str] = metadata(default_factory=list, description="primary-key columns")
    copy_columns: list[str] = content(
        default_factory=list, description="columns in the rows blob (generated ones excluded)"
    )
    late_defaults: list[str] = metadata(
        default_factory=list,
        description="columns whose default calls a captured function: set after creation",
        unordered=True,
    )
    row_count: int = content(0, derived=True)
    rows_digest: str | None = content(
        None, description="COPY text of the rows, in storage order (v1: key order)", derived=True
    )
    row_filter: str | None = content(None, description="row scope: the normalised predicate")
    row_system_digest: str | None = server(
        None, description="per row, in the rows' order: ctid and xmin (COPY text)",
        reason="ctid and xmin say where a row version lives and which transaction wrote it",
        derived=True,
    )
    relfilenode: int | None = server(
        None, reason="PostgreSQL names a table's file anew when it is re-created or rewritten"
    )
    access_method: str | None = metadata(None, description="table access method, when not heap")


class PgSequence(PgOwned):
    """A sequence with its settings and state (identity sequences included)."""

    kind: Literal["sequence"] = key("sequence")
    data_type: str = metadata("bigint")
    start: int = metadata(1)
    increment: int = metadata(1)
    min_value: int = metadata(1)
    max_value: int = metadata(9223372036854775807)
    cache: int = metadata(1)
    cycle: bool = metadata(False)
    last_value: int = metadata(1)
    is_called: bool = metadata(False)
    owned_by: str | None = metadata(None, description="schema.table.column")
    identity: bool = metadata(False, description="belongs to an identity column")


class PgFunction(PgOwned):
    """A function or procedure (trigger functions included)."""

    kind: Literal["function"] = key("function")
    arguments: str = key(description="pg_get_function_identity_arguments()")
    prokind: Literal["f", "p", "w"] = content("f")
    definition: str = content(description="pg_get_functiondef()")
    temporary: list[str] = metadata(
        default_factory=list,
        description="temporary objects of a session it uses (a temp table's row type): it "
        "cannot be made again from outside that session, so it is recorded as uncaptured",
        unordered=True,
    )


class PgDomain(Record):
    """What ``ALTER DOMAIN`` changes in place."""

    base: str = metadata(description="format_type() of the base type")
    default: str | None = metadata(None)
    not_null: bool = metadata(False)
    constraints: list[PgConstraint] = metadata(default_factory=list, keyed_by=("name",))


class PgType(PgOwned):
    """A user type: enum, domain, composite or range."""

    kind: Literal["type"] = key("type")
    typtype: Literal["e", "d", "c", "r"] = content()
    labels: list[str] = content(default_factory=list, description="enum labels, in order")
    definition: str = content(description="the CREATE TYPE / CREATE DOMAIN statement")
    domain: PgDomain | None = metadata(
        None, description="a domain's base type, default, NOT NULL and CHECK constraints, "
        "each as the server prints it (NOT VALID ones too); None: not a domain, or an older "
        "capture"
    )
    attribute_comments: dict[str, str] = metadata(
        default_factory=dict, description="a composite type's attribute → its comment"
    )


class PgView(PgOwned):
    """A view or materialized view (for table targets: those depending on the tables)."""

    kind: Literal["view"] = key("view")
    materialized: bool = content(False)
    definition: str = content(description="pg_get_viewdef()")
    options: list[str] = metadata(default_factory=list, unordered=True)
    populated: bool = metadata(True)
    indexes: list[PgIndex] = metadata(default_factory=list, keyed_by=("name",))
    late: bool = metadata(
        False, description="depends on a constraint (GROUP BY a key): created after constraints"
    )
    column_defaults: dict[str, str] = metadata(
        default_factory=dict,
        description="column → default expression (ALTER VIEW … ALTER COLUMN … SET DEFAULT: "
        "what an INSERT through the view fills in)",
    )
    column_comments: dict[str, str] = metadata(
        default_factory=dict, description="column → comment (COMMENT ON COLUMN)"
    )


class PgObject(PgOwned):
    """Any other object pg_dump knows, kept as the statements that create it.

    ``objtype`` is PostgreSQL's own word for the kind (``pg_identify_object``:
    ``aggregate``, ``operator``, ``cast``, ``rule``, ``statistics object``,
    ``publication``, ``text search configuration``, ``server``, …); ``name``
    its identity within the schema (with argument types where they identify
    it).  ``late`` objects (rules, statistics, publications, event triggers,
    default privileges) are created after the rows and constraints.
    """

    kind: Literal["object"] = key("object")
    objtype: str = key()
    definition: list[str] = content(description="the statements that create it")
    ref: str = metadata(description="how COMMENT ON / ALTER … OWNER TO name it")
    drop: str = metadata(description="the statement that drops it")
    late: bool = metadata(False)


class PgLargeObject(Item):
    """A large object (whole-database targets): its bytes in a blob, owner, grants, comment.
    Its OID is how applications name it, so it is the key and comes back the same."""

    kind: Literal["large object"] = key("large object")
    loid: int = key(description="the large object's OID")
    size: int = content(0)
    sha256: str = content(description="sha256 of its bytes, as the server computes it")
    data_digest: str | None = content(None, description="blob of its bytes")
    owner: str | None = metadata(None)
    acl: list[str] = metadata(default_factory=list, unordered=True)
    comment: str | None = metadata(None)


class PgSchema(Item):
    """A schema (schema and whole-database targets)."""

    kind: Literal["schema"] = key("schema")
    name: str = key()
    exists: bool = content(True)
    owner: str | None = metadata(None)
    acl: list[str] = metadata(default_factory=list, unordered=True)
    comment: str | None = metadata(None)
    oid: int | None = server(None, reason=_OID)


class PgExtension(Item):
    """An installed extension (whole-database targets); its own objects are not captured."""

    kind: Literal["extension"] = key("extension")
    name: str = key()
    namespace: str = metadata(description="the schema it is installed in")
    version: str = metadata()
    depends: list[str] = metadata(default_factory=list, unordered=True)
    comment: str | None = metadata(None, description="None: not recorded (older captures)")


class PgDatabase(Item):
    """The database itself (whole-database targets), so ``DROP DATABASE`` can be undone."""

    kind: Literal["database"] = key("database")
    name: str = key()
    owner: str = metadata()
    encoding: str = metadata()
    collate: str = metadata()
    ctype: str = metadata()
    connection_limit: int = metadata(-1)
    acl: list[str] = metadata(default_factory=list, unordered=True)
    comment: str | None = metadata(None)
    settings: list[str] = metadata(
        default_factory=list, description="ALTER DATABASE SET …", unordered=True
    )
    role_settings: dict[str, list[str]] = metadata(
        default_factory=dict, description="role → its settings in this database (ALTER ROLE … "
        "IN DATABASE … SET …)",
    )
    oid: int | None = server(None, reason=_OID)


PgItem = Annotated[
    PgDatabase | PgSchema | PgExtension | PgType | PgFunction | PgSequence | PgTable | PgView
    | PgObject | PgLargeObject,
    Field(discriminator="kind"),
]

Scope = Literal["database", "schema", "tables", "rows"]


@register_snapshot_type
class PostgresSnapshot(Snapshot):
    """Objects and rows of one PostgreSQL database, in one consistent read."""

    schema_name: ClassVar[str] = "postgres"
    schema_version: int = 4
    connector: str = "postgresql"
    database: str
    database_exists: bool = True
    scope: Scope = "database"
    scope_names: list[str] = Field(
        default_factory=list, description="schemas (schema scope) or schema.table names"
    )
    server_version: int = 0
    items: list[PgItem] = Field(default_factory=list)
    oracle: SchemaOracle | None = Field(
        None, description="pg_dump --schema-only of the target, normalized (None: a row "
        "scope, or an older capture)",
    )

    def tables(self) -> list[PgTable]:
        """The table items, in capture (dependency) order."""
        return [i for i in self.items if isinstance(i, PgTable)]

    def scoring_items(self, blobs: Any | None = None) -> Iterator[Item]:
        """Every object, then every captured row (read from ``blobs``)."""
        yield from self.items
        if blobs is None:
            return
        for table in self.tables():
            if table.rows_digest is None:
                continue
            seen: Counter[str] = Counter()  # occurrences of duplicate keyless rows
            rows = iter_copy_rows(blobs.chunks(table.rows_digest), table.copy_columns)
            system: Iterator[dict[str, Any]] = iter(())
            if table.row_system_digest is not None:
                system = iter_row_positions(blobs.chunks(table.row_system_digest))
            for values in rows:
                phys = next(system, {})
                yield PgRow(
                    table=table.qualified,
                    row=row_key(values, table.row_key, seen),
                    values=values,
                    ctid=phys.get("ctid"),
                    xmin=phys.get("xmin"),
                )


@register_migration("postgres", 1)
def _v1_to_v2(document: dict[str, Any]) -> dict[str, Any]:
    """v2 only adds fields with defaults (``depends``, ``late``, :class:`PgObject`)."""
    return {**document, "schema_version": 2}


@register_migration("postgres", 2)
def _v2_to_v3(document: dict[str, Any]) -> dict[str, Any]:
    """v3 adds per-column settings (privileges, options, statistics target, storage,
    compression) and more object kinds, all with defaults."""
    return {**document, "schema_version": 3}


@register_migration("postgres", 3)
def _v3_to_v4(document: dict[str, Any]) -> dict[str, Any]:
    """v4 adds the schema oracle's record, ``None`` for older captures."""
    return {**document, "schema_version": 4}


# A binary COPY stream's signature, and one ``(ctid, xmin)`` row of it: a field count of 2,
# then each field's length and value (a tid is a block number and a line pointer).
BINARY_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_POSITION = struct.Struct(">hiIHiI")
_POSITION_SHAPE = (2, 6, 4)


def iter_row_positions(chunks: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    """Each row's ``{"ctid": "(block,line)", "xmin": "…"}`` from a ctid/xmin record, in
    either form it is stored in: ``COPY`` text (two columns), or ``COPY (FORMAT binary)``
    (what the ``psql`` reader stores: the server writes it in half the time)."""
    chunks = iter(chunks)
    first = b""
    for chunk in chunks:
        first += bytes(chunk)
        if len(first) >= len(BINARY_COPY_SIGNATURE):
            break
    if not first.startswith(BINARY_COPY_SIGNATURE):
        yield from iter_copy_rows(itertools.chain([first], chunks), ["ctid", "xmin"])
        return
    buffer, at = first, -1
    for chunk in itertools.chain([b""], chunks):
        buffer += bytes(chunk)
        if at < 0:
            if len(buffer) < 19:
                continue
            at = 19 + int.from_bytes(buffer[15:19], "big")  # past the header and its extension
            if len(buffer) < at:
                at = -1
                continue
            buffer = buffer[at:]
        whole = len(buffer) - len(buffer) % _POSITION.size
        for count, tlen, block, line, xlen, xmin in _POSITION.iter_unpack(buffer[:whole]):
            if (count, tlen, xlen) != _POSITION_SHAPE:
                raise ValueError("a ctid/xmin record that is not (tid, xid) rows")
            yield {"ctid": f"({block},{line})", "xmin": str(xmin)}
        buffer = buffer[whole:]


def binary_positions_count(size: int, head: bytes, tail: bytes) -> int | None:
    """How many rows a binary ctid/xmin record of ``size`` bytes holds, from its first 19
    and last 2 bytes; ``None`` when it is not one whole record."""
    if len(head) < 19 or not head.startswith(BINARY_COPY_SIGNATURE) or tail != b"\xff\xff":
        return None
    body = size - 19 - int.from_bytes(head[15:19], "big") - 2
    if body < 0 or body % _POSITION.size:
        return None
    return body // _POSITION.size


def iter_copy_rows(chunks: Iterator[bytes], columns: list[str]) -> Iterator[dict[str, Any]]:
    """Rows of a ``COPY … TO STDOUT`` text stream as ``{column: text or None}``.

    Values stay in COPY's escaped text form (``\\N`` becomes ``None``): two
    values are equal exactly when their escaped forms are.
    """
    buffer = b""
    for chunk in chunks:
        buffer += bytes(chunk)
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            fields = line.decode("utf-8").split("\t")
            yield {
                col: (None if val == "\\N" else val)
                for col, val in zip(columns, fields, strict=False)
            }
    if buffer:
        fields = buffer.decode("utf-8").split("\t")
        yield {col: (None if v == "\\N" else v) for col, v in zip(columns, fields, strict=False)}
