"""Carrying out a restore: one transaction, all or nothing.

A whole-database snapshot whose database is gone first re-creates the
database (``CREATE DATABASE`` cannot run inside a transaction); if the restore
into it then fails, the new database is dropped again, so a failure leaves
the server as it was.  Everything else happens in one transaction with an
empty ``search_path`` and a lock timeout, and is rolled back on any error.
"""

from __future__ import annotations

from typing import Any

from preimage.connectors.postgres.capture import prepare_session, read_state
from preimage.connectors.postgres.catalog import read_same_names
from preimage.connectors.postgres.connection import MAINTENANCE_DB, DatabaseMissingError, connect
from preimage.connectors.postgres.ddl import lit, q, qn
from preimage.connectors.postgres.largeobjects import plan_large_objects
from preimage.connectors.postgres.objects import own_default_acls
from preimage.connectors.postgres.plan import PHASES, Planner, Step, quoted_table
from preimage.connectors.postgres.rows import (
    copy_in,
    live_digest,
    merge_rows_in_order,
    rewrite_rows,
    sync_rows,
)
from preimage.connectors.postgres.scope import PgScope
from preimage.interface.blobs import BlobStore
from preimage.interface.errors import RestoreConflictError, RestoreError
from preimage.interface.target import Target
from preimage.restoration import ConflictMode, IdRemap, Outcome, RestorePolicy, RestoreReport
from preimage.snapshot_schemas.postgres import PgDatabase, PgTable, PostgresSnapshot

Cursor = Any
LOCK_TIMEOUT = "30s"


class PgRestorer:
    """Restore one :class:`PostgresSnapshot` as ``policy`` says."""

    def __init__(self, snapshot: PostgresSnapshot, blobs: BlobStore, policy: RestorePolicy):
        self.snap = snapshot
        self.blobs = blobs
        self.policy = policy
        self.target = Target.parse(snapshot.target)
        self.scope = PgScope(snapshot.database, snapshot.scope, list(snapshot.scope_names))
        self.report = RestoreReport(
            target=snapshot.target, connector="postgresql", dry_run=policy.dry_run
        )
        self.statement = ""

    # ------------------------------------------------------------ entry
    def run(self) -> RestoreReport:
        """Restore, or plan only (dry run); raise :class:`RestoreError` on failure."""
        for t in self.snap.tables():
            # Only present: each blob is verified as it is read, inside the transaction.
            if t.rows_digest and not self.blobs.present(t.rows_digest):
                from preimage.interface.errors import BlobMissingError

                raise BlobMissingError(t.rows_digest, path=t.qualified)
        created = False
        try:
            conn = connect(self.target, self.snap.database)
        except DatabaseMissingError:
            if not self.snap.database_exists:
                self.report.add(f"database={self.snap.database}", Outcome.UNCHANGED,
                                reason="absent at capture and absent now")
                return self.report
            if self.snap.scope != "database":
                raise RestoreError(
                    f"database {self.snap.database!r} no longer exists; this backup holds only "
                    f"part of it ({self.snap.scope} scope) — restore a whole-database backup "
                    "or create the database first; nothing was written"
                ) from None
            if self.policy.conflict is ConflictMode.REFUSE:
                raise RestoreConflictError(self.snap.target, ["database dropped"]) from None
            if self.policy.dry_run:
                for item in self.snap.items:
                    self.report.add(item.natural_key(), Outcome.PLANNED, "create")
                return self.report
            self._create_database()
            created = True
            conn = connect(self.target, self.snap.database)
        if not self.snap.database_exists:
            conn.close()
            return self._drop_database()
        try:
            with conn:
                self._restore_in(conn)
        except Exception as exc:
            if created:
                self._drop_created_database()
            if isinstance(exc, RestoreError | RestoreConflictError):
                raise
            import psycopg

            if isinstance(exc, psycopg.Error):
                doing = f" (while running: {self.statement[:300]})" if self.statement else ""
                state = getattr(exc, "sqlstate", None) or ""
                if self.policy.keys is not None and state in ("23505", "23P01") and \
                        "write rows by key" in self.statement:
                    doing += (" — rows the call removed collide with a row or a unique index "
                              "made since the call: remove it and undo again, or restore the "
                              "backup to bring the table back as it was")
                elif self.policy.keys is not None and state.startswith("22") and \
                        " USING " in self.statement and " TYPE " in self.statement:
                    doing += (" — a row written since holds a value the column's type before "
                              "the call cannot take: change that row, or restore the backup "
                              "to bring the table back whole")
                raise RestoreError(
                    f"restore of {self.snap.target} failed and was rolled back, nothing was "
                    f"changed: {_pg_message(exc)}{doing}"
                ) from exc
            raise
        return self.report

    # ------------------------------------------------------------ database
    def _database_item(self) -> PgDatabase:
        for item in self.snap.items:
            if isinstance(item, PgDatabase):
                return item
        raise RestoreError("whole-database snapshot without its database item")

    def _create_database(self) -> None:
        db = self._database_item()
        with connect(self.target, MAINTENANCE_DB, autocommit=True) as admin:
            admin.execute(
                f"CREATE DATABASE {q(db.name)} WITH TEMPLATE template0 "
                f"ENCODING {lit(db.encoding)} LC_COLLATE {lit(db.collate)} "
                f"LC_CTYPE {lit(db.ctype)}".encode()
            )
        self.report.notes.append(f"database {db.name} re-created")

    def _drop_created_database(self) -> None:
        try:
            with connect(self.target, MAINTENANCE_DB, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {q(self.snap.database)}".encode())
        except Exception as exc:  # the original error matters more; say what is left
            self.report.notes.append(f"could not drop the half-restored database: {exc}")

    def _drop_database(self) -> RestoreReport:
        key = f"database={self.snap.database}"
        if self.policy.conflict is not ConflictMode.OVERWRITE:
            self.report.add(key, Outcome.SKIPPED, reason="absent at capture; policy keeps it")
            return self.report
        if self.policy.dry_run:
            self.report.add(key, Outcome.PLANNED, "drop database (absent at capture)")
            return self.report
        with connect(self.target, MAINTENANCE_DB, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {q(self.snap.database)}".encode())
        self.report.add(key, Outcome.REMOVED, "drop database (absent at capture)")
        return self.report

    # ------------------------------------------------------------ transaction
    def _restore_in(self, conn: Any) -> None:
        from psycopg.rows import dict_row

        cur = conn.cursor(row_factory=dict_row)
        prepare_session(cur)
        cur.execute(f"SET LOCAL lock_timeout = {lit(LOCK_TIMEOUT)}")
        live = read_state(cur, self.scope, None)
        known = {i.natural_key() for i in live}
        live += [i for i in read_same_names(cur, list(self.snap.items))
                 if i.natural_key() not in known]
        if self.snap.scope == "rows":
            self._restore_rows(cur, live)
            return
        planner = Planner(list(self.snap.items), live,
                          whole_schemas=self.snap.scope in ("schema", "database"),
                          own_defaults=own_default_acls(cur),
                          merge=self.policy.conflict is ConflictMode.MERGE,
                          columns_in_place=self.policy.keys is not None)
        plan = planner.build(data_step=lambda t, have: self._data_step(cur, t, have))
        if self.snap.scope == "database":
            plan_large_objects(plan, list(self.snap.items), live, self.blobs)
        if self.policy.keys is not None:
            self._refuse_reshaping(planner)
            self._row_steps(plan, planner.recreate)
        steps = [s for s in plan.steps(PHASES) if s.bracket or self.policy.in_scope(s.key)]
        mode = self.policy.conflict
        if mode is ConflictMode.MERGE:
            steps = [s for s in steps if not s.destructive]
        if not any(not s.bracket for s in steps):
            steps = []  # nothing to create: the default privileges need no holding back
        if mode is ConflictMode.REFUSE and steps:
            raise RestoreConflictError(self.snap.target, sorted({s.key for s in steps}))
        touched: dict[str, list[str]] = {}
        batch = _Batch(self, cur)
        for step in steps:
            if step.bracket:  # switched off and back on: no change to report
                batch.extend([] if self.policy.dry_run else step.sql)
                continue
            if self.policy.dry_run:
                touched.setdefault(step.key, []).append(step.action)
                continue
            batch.extend(step.sql)
            detail = ""
            if step.run:
                batch.flush()
                self.statement = f"{step.action} of {step.key}"
                detail = step.run(cur)
            touched.setdefault(step.key, []).append(step.action + (f" ({detail})" if detail else ""))
        batch.flush()
        removed = {s.key for s in steps if s.removes}
        for key, actions in touched.items():
            outcome = Outcome.PLANNED if self.policy.dry_run else (
                Outcome.REMOVED if key in removed else Outcome.RESTORED)
            self.report.add(key, outcome, "; ".join(actions))
        for item in self.snap.items:
            if item.natural_key() not in touched and self.policy.in_scope(item.natural_key()):
                self.report.add(item.natural_key(), Outcome.UNCHANGED)
        self.report.notes.extend(note for key, note in planner.notes if key in touched)
        if not self.policy.dry_run:
            self._remaps(cur, planner.recreate)
            if mode is ConflictMode.MERGE:
                self.report.notes.append(
                    "merge: only missing objects and rows were put back; changed ones were kept")

    def _refuse_reshaping(self, planner: Planner) -> None:
        """Under exact keys (an undo): a table that is there and whose columns must change
        back in a way ``ADD COLUMN`` and ``ALTER COLUMN … TYPE`` cannot (an identity,
        generated or sequence-backed column, columns in another order, partitioning) is
        refused before anything is written.  The planner would re-create it from the
        backup (``DROP TABLE``, ``CREATE TABLE``, its captured rows), losing what was
        written to it since the call and the sequences it owns; a restore of the backup
        is the way to bring it back whole.  Lost and retyped plain columns come back in
        place (:func:`~preimage.connectors.postgres.plan.columns_back`)."""
        names = sorted(
            quoted_table(t) for t in self.snap.tables()
            if t.natural_key() in planner.recreate and self.policy.in_scope(t.natural_key())
            and (have := planner.live_of(t)) is not None and have.exists)
        if names:
            raise RestoreError(
                f"undo cannot yet change the columns of {', '.join(names)} back in place (an "
                "identity, generated or sequence-backed column, or columns in another order: "
                "it would re-create the table from the backup and lose what was written to it "
                "since); nothing was changed — restore the call's backup "
                f"(`preimage restore ID --only {self.snap.target}`) to bring the table back "
                "whole")

    def _row_steps(self, plan: Any, recreated: set[str]) -> None:
        """Exact keys (an undo): one step per table writing exactly its named rows.

        Each step carries the key of every row it writes (the first keeps the step's
        own key), so the report names each row; a table re-created whole gets its
        rows with it instead."""
        from preimage.connectors.postgres.revert import revert_rows, row_prefix

        keys = self.policy.keys or frozenset()
        for table in self.snap.tables():
            prefix = row_prefix(table)
            named = sorted(k for k in keys if k.startswith(prefix))
            if not named or table.natural_key() in recreated or not table.exists:
                continue

            def run(c: Cursor, t: PgTable = table) -> str:
                return revert_rows(c, t, keys, self.blobs)

            plan.add("rows", Step(named[0], "write rows by key", run=run))
            for k in named[1:]:
                plan.add("rows", Step(k, "write rows by key (with the rows above)"))

    def _data_step(self, cur: Cursor, table: PgTable, have: PgTable | None) -> Step | None:
        key = table.natural_key()
        if have is None:
            if table.rows_digest is None or table.row_count == 0:
                return None

            def load(c: Cursor) -> str:
                copy_in(c, table, self.blobs)
                return f"{table.row_count} rows"

            return Step(key, "copy rows", run=load)
        if table.rows_digest is None:
            return None
        digest, _count = live_digest(cur, table, None)
        if digest == table.rows_digest:
            return None
        merge = self.policy.conflict is ConflictMode.MERGE
        always = {c.name for c in table.columns if c.identity == "a"}

        def sync(c: Cursor) -> str:
            name = qn(table.namespace, table.name)
            if table.triggers:
                c.execute(f"ALTER TABLE {name} DISABLE TRIGGER USER".encode())
            if not merge:
                # Rewrite in the captured order, so the rows sit where they sat.
                why = rewrite_rows(c, table, self.blobs)
                if why is None:
                    return f"rewritten in storage order ({table.row_count} rows)"
                self.report.notes.append(
                    f"{table.qualified}: rows synced by key; their storage order (the order "
                    f"pg_dump prints) differs from the capture: {why}")
            n = sync_rows(c, table, self.blobs, delete_extra=not merge,
                          update_changed=not merge, identity_always=always)
            return f"{n.deleted} deleted, {n.updated} reverted, {n.inserted} inserted"

        # Rows are synced before constraints come back; merge only inserts.
        return Step(key, "sync rows by primary key" if table.row_key else "replace rows",
                    run=sync, destructive=False)

    def _restore_rows(self, cur: Cursor, live: list[Any]) -> None:
        """Row scope: put back the captured rows of the table (and of each partition or
        inheritance child): missing ones inserted with their keys, changed ones reverted;
        rows outside the capture are left alone.  Under ``overwrite`` the table is rewritten
        so every row is back at its captured place in storage order."""
        live_tables = {t.natural_key(): t for t in live if isinstance(t, PgTable)}
        if self.policy.keys is not None:
            self._rows_by_key(cur, live_tables)
            return
        plans: list[tuple[PgTable, PgTable]] = []
        for table in self.snap.tables():
            key = table.natural_key()
            have = live_tables.get(key)
            if have is None or not have.exists:
                raise RestoreError(
                    f"table {table.qualified} no longer exists; a row-scope backup holds only "
                    "some rows — restore a backup of the whole table; nothing was written"
                )
            if table.rows_digest is None or table.row_count == 0:
                continue  # a partitioned parent, or no row matched: nothing to put back
            if [c.name for c in have.columns if c.generated is None] != table.copy_columns:
                raise RestoreError(
                    f"the columns of {table.qualified} changed since the capture; nothing was "
                    "written"
                )
            digest, _ = live_digest(cur, table, table.row_filter)
            if digest == table.rows_digest:
                self.report.add(key, Outcome.UNCHANGED)
                continue
            plans.append((table, have))
        if plans and self.policy.conflict is ConflictMode.REFUSE:
            raise RestoreConflictError(self.snap.target, [t.natural_key() for t, _ in plans])
        for table, have in plans:
            key = table.natural_key()
            if self.policy.dry_run:
                self.report.add(key, Outcome.PLANNED, "put back captured rows")
                continue
            self.report.add(key, Outcome.RESTORED, self._put_rows_back(cur, table, have))

    def _rows_by_key(self, cur: Cursor, live_tables: dict[str, PgTable]) -> None:
        """Row scope under exact keys (an undo): write exactly the named rows."""
        from preimage.connectors.postgres.revert import revert_rows, row_prefix

        keys = self.policy.keys or frozenset()
        for table in self.snap.tables():
            named = sorted(k for k in keys if k.startswith(row_prefix(table)))
            if not named:
                continue
            if table.natural_key() not in live_tables:
                raise RestoreError(f"table {table.qualified} no longer exists; nothing was "
                                   "written")
            if self.policy.dry_run:
                for k in named:
                    self.report.add(k, Outcome.PLANNED, "write rows by key")
                continue
            done = revert_rows(cur, table, keys, self.blobs)
            for k in named:
                self.report.add(k, Outcome.RESTORED, f"write rows by key ({done})")

    def _put_rows_back(self, cur: Cursor, table: PgTable, have: PgTable) -> str:
        from preimage.connectors.postgres.ddl import trigger_enable_statement

        name = qn(table.namespace, table.name)
        states = [(t.name, t.enabled) for t in have.triggers]
        if states:
            cur.execute(f"ALTER TABLE {name} DISABLE TRIGGER USER".encode())
        done = ""
        if self.policy.conflict is ConflictMode.OVERWRITE:
            why = merge_rows_in_order(cur, table, self.blobs)
            if why is None:
                done = f"{table.row_count} rows put back in storage order"
            else:
                self.report.notes.append(
                    f"{table.qualified}: rows put back by key; their storage order (the order "
                    f"pg_dump prints) differs from the capture: {why}")
        if not done:
            counts = sync_rows(
                cur, table, self.blobs, delete_extra=False,
                update_changed=self.policy.conflict is ConflictMode.OVERWRITE,
                identity_always={c.name for c in table.columns if c.identity == "a"},
            )
            done = f"{counts.inserted} rows put back, {counts.updated} rows reverted"
        for trg, enabled in states:
            cur.execute(trigger_enable_statement(name, trg, enabled).encode())
        return done

    def _remaps(self, cur: Cursor, recreated: set[str]) -> None:
        """Report the new OIDs of re-created tables (server-assigned, so they changed)."""
        tables = [t for t in self.snap.tables()
                  if t.natural_key() in recreated and t.oid is not None]
        if not tables:
            return
        # one round trip for all of them
        cur.execute("SELECT to_regclass(n)::oid AS oid FROM unnest(%s::text[]) "
                    "WITH ORDINALITY AS x(n, i) ORDER BY i",
                    ([qn(t.namespace, t.name) for t in tables],))
        for t, row in zip(tables, cur.fetchall(), strict=True):
            if row["oid"] and row["oid"] != t.oid:
                self.report.remaps.append(
                    IdRemap(key=t.natural_key(), field="oid", old=t.oid, new=row["oid"]))


class _Batch:
    """Statements sent to the server together, in one round trip per run of them.

    A whole-database restore runs hundreds of short statements; one round trip
    each costs more than running them.  They are joined and sent as one simple
    query (all inside the restore's transaction, so an error still rolls all of
    it back); a step that runs code (a ``COPY``) sends what is held first.
    """

    LIMIT = 1 << 20  # bytes of SQL held before they are sent anyway

    def __init__(self, restorer: PgRestorer, cur: Cursor) -> None:
        self.restorer = restorer
        self.cur = cur
        self.held: list[str] = []
        self.size = 0

    def extend(self, statements: list[str]) -> None:
        for sql in statements:
            self.held.append(sql)
            self.size += len(sql)
        if self.size >= self.LIMIT:
            self.flush()

    def flush(self) -> None:
        if not self.held:
            return
        if len(self.held) == 1:
            self.restorer.statement = self.held[0]
        else:  # which one failed the server does not say: name the run of them
            self.restorer.statement = "one of: " + "; ".join(self.held)
        # a line break before each ';': a statement may end in a -- comment
        self.cur.execute("\n;\n".join(self.held).encode())
        self.held, self.size = [], 0


def _pg_message(exc: Exception) -> str:
    diag = getattr(exc, "diag", None)
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    detail = getattr(diag, "message_detail", None) if diag else None
    hint = getattr(diag, "message_hint", None) if diag else None
    return msg + (f" — {detail}" if detail else "") + (f" ({hint})" if hint else "")
