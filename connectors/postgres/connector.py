"""``PostgresConnector``: capture, restore and diff of ``postgresql://`` targets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from preimage.connectors.postgres.apply import PgRestorer
from preimage.connectors.postgres.capture import audit_state, prepare_session, read_state
from preimage.connectors.postgres.connection import DatabaseMissingError, connect
from preimage.connectors.postgres.oracle import start as start_oracle
from preimage.connectors.postgres.scope import PgScope, parse_scope
from preimage.interface.blobs import BlobStore
from preimage.interface.connector import Capabilities, ConnectorBase, Granularity
from preimage.interface.dump_run import DumpRun
from preimage.interface.errors import InvalidTargetError, TerminalConnectorError
from preimage.interface.target import Target
from preimage.restoration import Relocation, RestorePolicy, RestoreReport
from preimage.snapshot_schemas import Snapshot
from preimage.snapshot_schemas.postgres import PgTable, PostgresSnapshot

if TYPE_CHECKING:
    from preimage.connectors.postgres.revert import PgReverter


class _Reverter:
    """The connector's reverter, made when first asked for (only ``undo`` needs it, and
    its merge machinery is not worth importing for every capture and restore)."""

    def __get__(self, obj: object, owner: type) -> PgReverter:
        from preimage.connectors.postgres.revert import PgReverter

        reverter = PgReverter()
        owner.reverter = reverter  # type: ignore[attr-defined]
        return reverter


class PostgresConnector(ConnectorBase):
    """A PostgreSQL database, schema, set of tables, or the rows a predicate selects.

    Capture reads everything in one ``REPEATABLE READ, READ ONLY`` transaction
    and streams rows with ``COPY`` into the blob store.  Named tables that do
    not exist, and a database that does not exist, are captured as absent so a
    restore removes what was created later.  A server that cannot be reached
    raises :class:`~preimage.TransientConnectorError`; refused credentials
    raise :class:`~preimage.TerminalConnectorError`.
    """

    scheme: ClassVar[str] = "postgresql"
    snapshot_type: ClassVar[type[Snapshot]] = PostgresSnapshot
    # A restore is one transaction over the whole target, ordered by dependencies:
    # narrow it by capturing a narrower target (?tables=, ?table=&where=), not --only.
    capabilities: ClassVar[Capabilities] = Capabilities(
        sub_scopes=False, server_identities=True, remote=True, audits_completeness=True,
        atomic_restore=True, relocates=True,
        undo=Granularity(
            "row by primary key (by value without one); table, object, counter", "column"),
    )
    reverter = _Reverter()

    def capture(self, target: Target, blobs: BlobStore) -> PostgresSnapshot:
        """Read the target's objects and rows as of one moment."""
        import psycopg
        from psycopg.rows import dict_row

        scope = parse_scope(target)
        base: dict[str, Any] = {
            "target": target.redacted, "database": scope.database, "scope": scope.scope,
            "scope_names": scope.names,
        }
        try:
            conn = connect(target, scope.database)
        except DatabaseMissingError:
            return PostgresSnapshot(
                **base, database_exists=False,
                notes=[f"database {scope.database} did not exist at capture time"],
            )
        try:
            with conn:
                conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
                conn.read_only = True
                cur = conn.cursor(row_factory=dict_row)
                prepare_session(cur)
                dump = start_oracle(cur, scope)
                try:
                    items = read_state(cur, scope, blobs)
                    if scope.scope == "rows" and _keyless(items):
                        # a changed row cannot be told from a new one: the whole table
                        scope = PgScope(scope.database, "tables", scope.names)
                        base.update(scope="tables")
                        items = read_state(cur, scope, blobs)
                    uncaptured = audit_state(cur, scope, items)
                    oracle = dump.finish(blobs) if isinstance(dump, DumpRun) else dump
                except ValueError as exc:
                    raise InvalidTargetError(target.redacted, str(exc)) from exc
                finally:
                    if isinstance(dump, DumpRun):
                        dump.close()
                version = conn.info.server_version
        except psycopg.errors.InsufficientPrivilege as exc:
            raise TerminalConnectorError(
                f"not allowed to read {target.redacted}: {exc} — connect as the tables' owner "
                "or a role that may SELECT them", target=target.redacted,
            ) from exc
        except psycopg.errors.Error as exc:
            if scope.scope == "rows" and isinstance(
                exc, psycopg.errors.SyntaxError | psycopg.errors.UndefinedColumn
                | psycopg.errors.DatatypeMismatch | psycopg.errors.UndefinedFunction
                | psycopg.errors.ReadOnlySqlTransaction
            ):
                raise InvalidTargetError(
                    target.redacted, f"the row predicate failed: {str(exc).splitlines()[0]}"
                ) from exc
            raise TerminalConnectorError(
                f"capture of {target.redacted} failed: {exc}", target=target.redacted
            ) from exc
        notes = []
        if base["scope"] != "rows" and target.param("where") is not None:
            notes.append(f"table {scope.names[0]} has no primary key, so a row scope could "
                         "not tell a changed row from a new one: the whole table was captured")
        tables = [i for i in items if isinstance(i, PgTable)]
        if scope.scope == "rows":
            table = tables[0] if tables else None
            if table is None or not table.exists:
                raise TerminalConnectorError(
                    f"table {scope.names[0]} does not exist in database {scope.database} — a "
                    "row-scope capture needs the table; capture ?tables= to record its absence",
                    target=target.redacted,
                )
        notes += [f"table {t.qualified} did not exist at capture time"
                  for t in tables if not t.exists]
        return PostgresSnapshot(
            **base, server_version=version, items=items, notes=notes, uncaptured=uncaptured,
            oracle=oracle if base["scope"] != "rows" else None,
        )

    def restore(
        self, snapshot: Snapshot, blobs: BlobStore, *, policy: RestorePolicy
    ) -> RestoreReport:
        """Bring the target back to ``snapshot`` in one transaction (see :mod:`.plan`)."""
        assert isinstance(snapshot, PostgresSnapshot)
        return PgRestorer(snapshot, blobs, policy).run()


    def relocate(
        self, snapshot: Snapshot, destination: Target, *, other: Snapshot | None = None,
        blobs: BlobStore | None = None,
    ) -> Relocation:
        """The capture re-addressed to another database (:mod:`.relocate`)."""
        from preimage.connectors.postgres.relocate import relocate_database

        assert isinstance(snapshot, PostgresSnapshot)
        return relocate_database(snapshot, destination, blobs)


def _keyless(items: list[Any]) -> bool:
    """Whether a row-scope read found its table without a primary key."""
    return any(isinstance(t, PgTable) and t.exists and not t.row_key for t in items)
