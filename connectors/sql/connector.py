"""``SQLAlchemyConnector``: any SQLAlchemy database, SQLite first.

Targets are SQLAlchemy URLs: ``sqlite:////abs/path.db`` (``sqlite:///rel.db``
is made absolute), ``mysql+pymysql://user@host/db``; ``?tables=a,b`` narrows
the capture to those tables (names that do not exist are captured as absent);
``?table=t&where=<predicate>`` to the rows a statement touches (MySQL/MariaDB;
elsewhere, and for a table without a primary key, widened to the table).

Capture runs in one transaction and reflects tables, columns, keys,
constraints and indexes; rows stream into a blob in storage order (a plain
scan) for SQLite and MySQL/MariaDB, in key order elsewhere — as the server's
own value tuples for MySQL/MariaDB (:mod:`.mysql_rows`), as JSON lines
otherwise.  MySQL/MariaDB captures and restores go through the driver alone where
they can, without SQLAlchemy's start-up (:mod:`.mysql_direct`).
SQLite also keeps the exact DDL of every table, index, view and trigger from
``sqlite_master``, the ``sqlite_sequence`` counters and ``user_version`` /
``application_id``; MySQL/MariaDB keep ``SHOW CREATE`` of every table, view,
trigger, routine and event and of the database (:mod:`.mysql`); other
dialects keep SQLAlchemy's compiled ``CREATE TABLE``.  Every capture audits
the database for objects it did not read (:mod:`.audit`).

Restore, with foreign-key checks off: objects created since the capture are
dropped, changed tables are dropped and re-created from their DDL, rows of
tables whose digest differs are replaced, then counters and pragmas are set.
SQLite does it in one transaction.  MySQL commits every DDL statement at once,
so there the restore is a journal of steps: a failure names the steps already
done, and running the same restore again finishes the rest.  A SQLite file
that was deleted is created again, and so is a dropped MySQL database.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from preimage.connectors.sql import mysql, mysql_direct, mysql_rows
from preimage.connectors.sql.address import SCOPE_PARAMS, scope_tables
from preimage.connectors.sql.audit import sqlite_audit
from preimage.connectors.sql.grants import audit_grants, read_grants
from preimage.connectors.sql.oracle import start as start_oracle
from preimage.connectors.sql.revert import SqlReverter
from preimage.connectors.sql.rows import encode_rows, put_while_reading
from preimage.connectors.sql.tables import inspector, reflect
from preimage.interface.blobs import BlobStore
from preimage.interface.connector import Capabilities, ConnectorBase, Granularity
from preimage.interface.dump_run import DumpRun
from preimage.interface.errors import (
    InvalidTargetError,
    RestoreConflictError,
    RestoreError,
    TerminalConnectorError,
    TransientConnectorError,
)
from preimage.interface.target import Target
from preimage.restoration import ConflictMode, Outcome, Relocation, RestorePolicy, RestoreReport
from preimage.snapshot_schemas import Snapshot
from preimage.snapshot_schemas.oracle import SchemaOracle
from preimage.snapshot_schemas.sql import SqlColumn, SqlCounter, SqlObject, SqlSnapshot, SqlTable

_PRAGMAS = ("user_version", "application_id")


def engine_url(target: Target) -> tuple[str, str]:
    """(SQLAlchemy URL with the password, redacted target URI) for ``target``."""
    from sqlalchemy.engine import URL

    query = {k: v[-1] for k, v in target.query.items() if k not in SCOPE_PARAMS}
    names = scope_tables(target)
    if target.scheme == "sqlite":
        if target.host not in (None, "", "localhost"):
            raise InvalidTargetError(target.redacted, "sqlite targets are local files")
        raw = target.path[1:] if target.path.startswith("/") else target.path
        if not raw or raw == ":memory:":
            raise InvalidTargetError(target.redacted, "name a database file: sqlite:////abs/x.db")
        path = str(Path(raw).absolute())
        redacted = f"sqlite:///{path}"
        if names:
            redacted += f"?tables={','.join(names)}"
        return f"sqlite:///{path}", redacted
    url = URL.create(
        drivername=target.scheme, username=target.username,
        password=target.resolve_password(), host=target.host, port=target.port,
        database=target.path.lstrip("/") or None, query=query,
    )
    return url.render_as_string(hide_password=False), target.redacted


def _start_oracle(conn: Any, target: Target, names: list[str]) -> DumpRun | SchemaOracle:
    """The server's dump tool started on the same database (:mod:`.oracle`)."""
    version = str(conn.exec_driver_sql("SELECT VERSION()").scalar())
    return start_oracle(target, mysql.database_name(conn), names or None,
                        mariadb="mariadb" in version.lower())


def _sqlite_path(url: str) -> str | None:
    return url[len("sqlite:///"):] if url.startswith("sqlite:///") else None


class SQLAlchemyConnector(ConnectorBase):
    """Tables and rows of any database SQLAlchemy reaches (SQLite with its exact DDL)."""

    scheme: ClassVar[str] = "sqlite"
    snapshot_type: ClassVar[type[Snapshot]] = SqlSnapshot
    # A restore is one transaction over the whole target: narrow it by capturing a
    # narrower target (?tables=, ?table=&where=), not --only.
    capabilities: ClassVar[Capabilities] = Capabilities(
        sub_scopes=False, remote=True, audits_completeness=True, relocates=True, undo=Granularity(
            "row by primary key (by value without one); table, object, counter", "column"),
    )
    reverter: ClassVar[SqlReverter] = SqlReverter()

    # ------------------------------------------------------------ engine
    def _engine(self, url: str, *, load: bool = False) -> Any:
        """An engine for ``url``; ``load``: a restore's, whose MySQL connections may send
        rows with LOAD DATA LOCAL (:func:`.mysql_rows.load_lines`)."""
        from sqlalchemy import create_engine, event
        from sqlalchemy.pool import NullPool

        url = mysql.pick_driver(url)
        dialect, _, driver = url.split("://", 1)[0].partition("+")
        args: dict[str, Any] = {}
        if load and dialect in mysql.MYSQL_DIALECTS:
            args = mysql_rows.connect_args(driver)
        try:
            engine = create_engine(url, poolclass=NullPool, connect_args=args)
        except ImportError as exc:
            hint = ("install preimage[mysql-c] (mysqlclient; it builds against libmariadb-dev "
                    "and pkg-config), or name PyMySQL in the URL: mysql+pymysql://"
                    if driver == "mysqldb" else f"install the {driver or 'default'} driver")
            raise TerminalConnectorError(f"the {driver or 'default'} driver is not installed "
                                         f"({exc}) — {hint}",
                                         target=url.split("://", 1)[0]) from exc
        if args.get("local_infile") and driver == "pymysql":
            @event.listens_for(engine, "connect")
            def _local_files(dbapi_conn: Any, _record: Any) -> None:
                dbapi_conn._local_infile = False  # switched on for our own LOAD only
        if engine.dialect.name == "sqlite":
            # Let SQLite's own BEGIN/COMMIT work (pysqlite's implicit transactions do not).
            @event.listens_for(engine, "connect")
            def _connect(dbapi_conn: Any, _record: Any) -> None:
                dbapi_conn.isolation_level = None

            @event.listens_for(engine, "begin")
            def _begin(conn: Any) -> None:
                conn.exec_driver_sql("BEGIN")

        return engine

    def _connect(self, engine: Any, redacted: str) -> Any:
        from sqlalchemy import exc as sa_exc

        try:
            return engine.connect()
        except sa_exc.OperationalError as exc:
            raise _connection_failed(redacted, str(exc.orig)) from exc

    # ------------------------------------------------------------ capture
    def capture(self, target: Target, blobs: BlobStore) -> SqlSnapshot:
        """Read tables, rows and every schema object in one transaction, then audit what
        the database holds that was not read."""
        # MySQL/MariaDB through the driver alone where it can (no SQLAlchemy start-up).
        direct = mysql_direct.connect_params(target)
        url, redacted = ("", target.redacted) if direct is not None else engine_url(target)
        names = scope_tables(target)
        where = row_scope(target)
        dialect = target.scheme.split("+", 1)[0]
        notes: list[str] = []
        if where is not None:
            names = [str(target.param("table")).strip()]
            if dialect not in mysql.MYSQL_DIALECTS:
                # No row scope here: the whole table is a before-image of the rows too.
                notes.append(f"row scope widened to the whole table {names[0]} (row scopes are "
                             "for PostgreSQL and MySQL/MariaDB)")
                where = None
        scope = "rows" if where is not None else "tables" if names else "database"
        path = _sqlite_path(url)
        if path is not None and not os.path.exists(path):
            return SqlSnapshot(target=redacted, dialect="sqlite", database_exists=False,
                               scope=scope, notes=[f"{path} did not exist at capture time"])
        if direct is not None:
            snap = self._capture_direct(direct, target, redacted, names, where, scope, notes,
                                        blobs)
            if snap is not None:
                return snap
            url, redacted = engine_url(target)
        engine = self._engine(url)
        try:
            try:
                conn = self._connect(engine, redacted)
            except TransientConnectorError as exc:
                if _unknown_database(exc):
                    return SqlSnapshot(target=redacted, dialect=dialect, database_exists=False,
                                       scope=scope,
                                       notes=["the database did not exist at capture time"])
                raise
            with conn, conn.begin():
                if mysql.is_mysql(conn):
                    conn.exec_driver_sql(
                        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    # As mysqldump: TIMESTAMP values and defaults read in UTC.
                    conn.exec_driver_sql("SET SESSION time_zone = '+00:00'")
                if where is not None:
                    rows = self._capture_rows(conn, target, redacted, names[0], where, blobs)
                    if rows is not None:
                        return rows
                    # Rows that cannot go back by key: the whole table is their before-image.
                    scope = "tables"
                    notes.append(f"row scope widened to the whole table {names[0]} (a row "
                                 "scope needs a primary key and no BIT, spatial or JSON column)")
                dump = _start_oracle(conn, target, names) if mysql.is_mysql(conn) else None
                try:
                    items = list(self._read(conn, blobs, names))
                    oracle = dump.finish(blobs) if isinstance(dump, DumpRun) else dump
                finally:
                    if isinstance(dump, DumpRun):
                        dump.close()
                if mysql.is_mysql(conn):
                    uncaptured = mysql.audit(conn, items, names or None) + audit_grants(conn)
                elif conn.dialect.name == "sqlite":
                    uncaptured = sqlite_audit(conn, items, names or None)
                else:
                    uncaptured = []
                dialect = conn.dialect.name
        finally:
            engine.dispose()
        return SqlSnapshot(target=redacted, dialect=dialect, scope=scope, items=items,
                           uncaptured=uncaptured, notes=notes, oracle=oracle)

    def _capture_direct(self, direct: tuple[str, str, dict[str, Any]], target: Target,
                        redacted: str, names: list[str], where: str | None, scope: str,
                        notes: list[str], blobs: BlobStore) -> SqlSnapshot | None:
        """MySQL/MariaDB through the driver alone (:mod:`.mysql_direct`): the same snapshot
        as through SQLAlchemy, without its start-up; ``None`` when a table needs SQLAlchemy
        (checked before any row is read)."""
        dialect, module, kw = direct
        try:
            dbapi = mysql_direct.connect(module, kw)
        except Exception as exc:
            if type(exc).__module__.split(".")[0] not in ("pymysql", "MySQLdb"):
                raise
            code = exc.args[0] if exc.args else None
            msg = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
            if code == 1049:  # unknown database
                return SqlSnapshot(target=redacted, dialect=dialect, database_exists=False,
                                   scope=scope,
                                   notes=[*notes, "the database did not exist at capture time"])
            raise _connection_failed(redacted, msg) from exc
        conn = mysql_direct.Connection(dbapi, dialect)
        try:
            conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            conn.exec_driver_sql("SET SESSION time_zone = '+00:00'")
            if not _direct_ready(conn, names):
                return None
            if where is not None:
                rows = self._capture_rows(conn, target, redacted, names[0], where, blobs)
                if rows is not None:
                    dbapi.commit()
                    return rows
                return None  # widened to the table: SQLAlchemy's way, with its note
            dump = _start_oracle(conn, target, names)
            try:
                items = list(self._read(conn, blobs, names))
                oracle = dump.finish(blobs) if isinstance(dump, DumpRun) else dump
            finally:
                if isinstance(dump, DumpRun):
                    dump.close()
            uncaptured = mysql.audit(conn, items, names or None) + audit_grants(conn)
            dbapi.commit()
        finally:
            conn.close()
        return SqlSnapshot(target=redacted, dialect=dialect, scope=scope, items=items,
                           uncaptured=uncaptured, notes=notes, oracle=oracle)

    def _capture_rows(self, conn: Any, target: Target, redacted: str, name: str, where: str,
                      blobs: BlobStore) -> SqlSnapshot | None:
        """Row scope: a before-image of the rows ``where`` selects (MySQL/MariaDB);
        ``None`` when the table has no primary key or a column the tuples cannot carry."""
        insp = inspector(conn)
        if name not in insp.get_table_names():
            raise TerminalConnectorError(
                f"table {name} does not exist in {redacted} — a row-scope capture needs the "
                "table; capture ?tables= to record its absence", target=redacted)
        pk = insp.get_pk_constraint(name).get("constrained_columns")
        if not pk or mysql_rows.tuple_columns(conn, name) is None:
            return None
        try:
            item = self._table(conn, insp, name, blobs, {}, where=where)
        except Exception as exc:  # the driver's error, or SQLAlchemy's around it (.orig)
            cause = getattr(exc, "orig", None) or exc
            if type(cause).__module__.split(".")[0] not in ("pymysql", "MySQLdb"):
                raise
            raise InvalidTargetError(target.redacted, f"the row predicate failed: {cause}") \
                from exc
        # Its triggers too: they are dropped while the rows go back, and made again.
        return SqlSnapshot(target=redacted, dialect=conn.dialect.name, scope="rows",
                           items=[item, *mysql.read_objects(conn, [name])])

    def _read(self, conn: Any, blobs: BlobStore | None, names: list[str]) -> Iterator[Any]:
        insp = inspector(conn)
        present = [t for t in insp.get_table_names() if t != "sqlite_sequence"]
        wanted = names or present
        sqlite = conn.dialect.name == "sqlite"
        master: dict[tuple[str, str], tuple[str, str]] = {}
        if sqlite:
            for typ, name, tbl, sql in conn.exec_driver_sql(
                "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid"
            ):
                master[(typ, name)] = (tbl, sql)
        objects = mysql.read_objects(conn, names or None) if mysql.is_mysql(conn) else []
        # MySQL/MariaDB: the columns the rows are read by, of every table in one query.
        known = mysql_rows.table_columns(conn) if blobs is not None and mysql.is_mysql(conn) \
            else {}
        yield from (o for o in objects if o.kind == "database")
        for name in wanted:
            if name not in present:
                yield SqlTable(name=name, exists=False)
                continue
            yield self._table(conn, insp, name, blobs, master, known=known.get(name))
        yield from (o for o in objects if o.kind != "database")
        if mysql.is_mysql(conn):
            yield from read_grants(conn, names or None)
        if sqlite:
            for (typ, name), (tbl, sql) in master.items():
                if typ == "table" or (names and tbl not in names) or typ not in (
                    "index", "view", "trigger"
                ):
                    continue
                yield SqlObject(kind=typ, name=name, table=tbl, ddl=sql)
            has_seq = conn.exec_driver_sql(
                "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").first()
            if has_seq:
                for name, seq in conn.exec_driver_sql("SELECT name, seq FROM sqlite_sequence"):
                    if name in wanted:
                        yield SqlCounter(kind="counter", name=name, value=int(seq))
            if not names:
                from sqlalchemy import text

                for pragma in _PRAGMAS:
                    value = conn.execute(text(f"PRAGMA {pragma}")).scalar()
                    yield SqlCounter(kind="pragma", name=pragma, value=int(value or 0))

    def _table(self, conn: Any, insp: Any, name: str, blobs: Any,
               master: dict[tuple[str, str], tuple[str, str]],
               where: str | None = None,
               known: list[mysql_rows.Column] | None = None) -> SqlTable:
        cols = insp.get_columns(name)
        pk = list(insp.get_pk_constraint(name).get("constrained_columns") or [])
        fks = [f"({', '.join(f['constrained_columns'])}) -> {f['referred_table']}"
               f"({', '.join(f['referred_columns'])})" for f in insp.get_foreign_keys(name)]
        uniques = sorted(",".join(u["column_names"]) for u in insp.get_unique_constraints(name))
        try:
            checks = sorted(c["sqltext"] for c in insp.get_check_constraints(name))
        except NotImplementedError:
            checks = []
        indexes = sorted(f"{i['name']}({','.join(c or '' for c in i['column_names'])})"
                         f"{' unique' if i.get('unique') else ''}" for i in insp.get_indexes(name))
        table = None  # reflected again only where it is needed (SQLAlchemy's own DDL, rows)
        if conn.dialect.name == "sqlite":
            ddl = master.get(("table", name), ("", ""))[1]
        elif mysql.is_mysql(conn):
            ddl = conn.exec_driver_sql(f"SHOW CREATE TABLE {mysql.quote(name)}").one()[1]
        else:
            from sqlalchemy import MetaData, Table
            from sqlalchemy.schema import CreateTable

            table = Table(name, MetaData(), autoload_with=conn, resolve_fks=False)
            ddl = str(CreateTable(table).compile(dialect=conn.dialect)).strip()
        columns = [SqlColumn(
            name=c["name"], type=str(c["type"]), nullable=bool(c.get("nullable", True)),
            default=None if c.get("default") is None else str(c["default"]),
            autoincrement=c.get("autoincrement") is True,
        ) for c in cols]
        item = SqlTable(name=name, columns=columns, primary_key=pk, foreign_keys=sorted(fks),
                        unique_constraints=uniques, check_constraints=checks, indexes=indexes,
                        ddl=ddl)
        if blobs is None:
            return item
        tuples = None
        if mysql.is_mysql(conn):
            if known is None:
                known = mysql_rows.columns_of(conn, name)
            tuples = mysql_rows.tuple_columns(conn, name, known)
        if tuples is not None:
            # MySQL/MariaDB: each row as the server renders it, straight into the blob.
            lines = _LineCounter()
            sql = mysql_rows.select_sql(name, tuples, where, mysql_rows.plain_columns(known or []))
            digest = put_while_reading(blobs, lines.through(mysql_rows.read_lines(conn, sql)))
            return item.model_copy(update={
                "rows_digest": digest, "row_count": lines.rows, "rows_format": "tuples",
                "copy_columns": tuples, "row_filter": where})
        from sqlalchemy import select

        if table is None:
            table = reflect(conn, name)
        stmt = select(*table.c)
        if conn.dialect.name != "sqlite" and not mysql.is_mysql(conn):
            stmt = stmt.order_by(*([table.c[c] for c in pk] or list(table.c)))
        # SQLite and MySQL/MariaDB: a plain scan, in storage order (rowid / clustered key),
        # the order their dump tools print and a re-created table gets back.
        counter = [0]

        def rows() -> Iterator[Any]:
            for row in conn.execution_options(yield_per=1000).execute(stmt):
                counter[0] += 1
                yield tuple(row)

        digest = blobs.put_chunks(encode_rows([c.name for c in table.c], rows()))
        return item.model_copy(update={"rows_digest": digest, "row_count": counter[0]})

    # ------------------------------------------------------------ restore
    def restore(
        self, snapshot: Snapshot, blobs: BlobStore, *, policy: RestorePolicy
    ) -> RestoreReport:
        """Bring the database back to ``snapshot`` in one transaction."""
        assert isinstance(snapshot, SqlSnapshot)
        report = RestoreReport(target=snapshot.target, connector="sqlalchemy",
                               dry_run=policy.dry_run)
        target = Target.parse(snapshot.target)
        direct = mysql_direct.connect_params(target) if snapshot.database_exists and all(
            t.rows_format == "tuples" or not t.rows_digest
            for t in snapshot.items if isinstance(t, SqlTable)) else None
        url = "" if direct is not None else engine_url(target)[0]
        path = _sqlite_path(url)
        for t in snapshot.items:
            if isinstance(t, SqlTable) and t.rows_digest and not blobs.exists(t.rows_digest):
                from preimage.interface.errors import BlobMissingError

                raise BlobMissingError(t.rows_digest, path=t.name)
        if not snapshot.database_exists:
            if path is not None and os.path.exists(path):
                if policy.conflict is not ConflictMode.OVERWRITE:
                    report.add(path, Outcome.SKIPPED, reason="absent at capture; policy keeps it")
                elif policy.dry_run:
                    report.add(path, Outcome.PLANNED, "delete the database file")
                else:
                    os.unlink(path)
                    report.add(path, Outcome.REMOVED, "absent at capture")
            return report
        if path is not None and not os.path.exists(path):
            if policy.conflict is ConflictMode.REFUSE:
                raise RestoreConflictError(snapshot.target, [path])
            if policy.dry_run:
                for item in snapshot.items:
                    report.add(item.natural_key(), Outcome.PLANNED, "create")
                return report
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            report.notes.append(f"{path} re-created")
        if direct is not None and self._restore_direct(direct, snapshot, blobs, policy, report):
            return report
        if not url:
            url = engine_url(target)[0]
        engine = self._engine(url, load=snapshot.dialect in mysql.MYSQL_DIALECTS)
        try:
            if snapshot.dialect in mysql.MYSQL_DIALECTS:
                self._restore_mysql(engine, url, snapshot, blobs, policy, report)
                return report
            with self._connect(engine, snapshot.target) as conn:
                # Foreign-key checks off for the restore's session (SQLite ignores the
                # pragma inside a transaction, so it goes straight to the driver).
                if conn.dialect.name == "sqlite":
                    conn.connection.dbapi_connection.execute("PRAGMA foreign_keys = OFF")
                try:
                    with conn.begin():
                        from preimage.connectors.sql.apply import SqlRestorer

                        SqlRestorer(conn, snapshot, blobs, policy, report, self).run()
                except (RestoreError, RestoreConflictError):
                    raise
                except Exception as exc:
                    from sqlalchemy import exc as sa_exc

                    if isinstance(exc, sa_exc.SQLAlchemyError):
                        raise RestoreError(
                            f"restore of {snapshot.target} failed and was rolled back, nothing "
                            f"was changed: {getattr(exc, 'orig', exc)}"
                        ) from exc
                    raise
        finally:
            engine.dispose()
        return report

    def _restore_direct(self, direct: tuple[str, str, dict[str, Any]], snapshot: SqlSnapshot,
                        blobs: BlobStore, policy: RestorePolicy, report: RestoreReport) -> bool:
        """MySQL/MariaDB through the driver alone (:mod:`.mysql_direct`), as
        :meth:`_restore_mysql`; ``False`` (nothing read or written) where SQLAlchemy is
        needed: a live table this way does not read, a database to create, a failed
        connection (SQLAlchemy's way reports it)."""
        dialect, module, kw = direct
        if policy.keys is not None or policy.conflict is ConflictMode.MERGE:
            return False  # rows put back one by one: SQLAlchemy's statements
        try:
            dbapi = mysql_direct.connect(module, kw | mysql_rows.connect_args(module))
        except Exception as exc:
            if type(exc).__module__.split(".")[0] not in ("pymysql", "MySQLdb"):
                raise
            return False
        if module == "pymysql":
            dbapi._local_infile = False  # switched on for our own LOAD only
        conn = mysql_direct.Connection(dbapi, dialect)
        names = [t.name for t in snapshot.items if isinstance(t, SqlTable)] \
            if snapshot.scope in ("tables", "rows") else []
        if not _direct_ready(conn, names):
            conn.close()
            return False
        self._restore_mysql_on(conn, snapshot, blobs, policy, report)
        return True

    def _restore_mysql(self, engine: Any, url: str, snapshot: SqlSnapshot, blobs: BlobStore,
                       policy: RestorePolicy, report: RestoreReport) -> None:
        """MySQL/MariaDB: every step commits on its own (DDL does anyway); the steps done
        are journalled in the report and in any error, and a re-run finishes the rest."""
        try:
            conn = self._connect(engine, snapshot.target)
        except TransientConnectorError as exc:
            if not _unknown_database(exc):
                raise
            conn = self._create_mysql_database(url, snapshot, policy, report)
            if conn is None:
                return
        self._restore_mysql_on(conn, snapshot, blobs, policy, report)

    def _restore_mysql_on(self, conn: Any, snapshot: SqlSnapshot, blobs: BlobStore,
                          policy: RestorePolicy, report: RestoreReport) -> None:
        from preimage.connectors.sql.apply import SqlRestorer, StepsFailedError, restore_rows

        with conn:
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            conn.exec_driver_sql("SET SESSION FOREIGN_KEY_CHECKS = 0")
            conn.exec_driver_sql("SET SESSION UNIQUE_CHECKS = 0")
            # As mysqldump restores: a 0 in an AUTO_INCREMENT column is a 0, not a new id.
            conn.exec_driver_sql(
                "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')")
            # TIMESTAMP values were read in UTC (as mysqldump reads them): written alike.
            conn.exec_driver_sql("SET SESSION time_zone = '+00:00'")
            try:
                if snapshot.scope == "rows" and policy.keys is None:
                    restore_rows(conn, snapshot, blobs, policy, report)
                else:
                    SqlRestorer(conn, snapshot, blobs, policy, report, self).run()
            except StepsFailedError as exc:
                done = "; ".join(exc.done) if exc.done else "none"
                raise RestoreError(
                    f"restore of {snapshot.target} failed at {exc.step}: {exc.error} — MySQL "
                    f"commits each step at once, so the {len(exc.done)} step(s) before it stay "
                    f"done ({done}); fix the cause and run the same restore again to finish "
                    "(it redoes only what still differs)"
                ) from exc

    def _create_mysql_database(self, url: str, snapshot: SqlSnapshot, policy: RestorePolicy,
                               report: RestoreReport) -> Any:
        """Create the dropped database from its captured ``SHOW CREATE DATABASE``."""
        from sqlalchemy.engine import make_url

        db = next((o for o in snapshot.items if isinstance(o, SqlObject)
                   and o.kind == "database"), None)
        if db is None or snapshot.scope != "database":
            raise RestoreError(
                f"the database of {snapshot.target} no longer exists and this backup holds only "
                "some of its tables — restore a whole-database backup; nothing was written")
        if policy.conflict is ConflictMode.REFUSE:
            raise RestoreConflictError(snapshot.target, ["database dropped"])
        if policy.dry_run:
            for item in snapshot.items:
                report.add(item.natural_key(), Outcome.PLANNED, "create")
            return None
        server = self._engine(make_url(url)._replace(database=None).render_as_string(
            hide_password=False))
        try:
            with self._connect(server, snapshot.target) as admin:
                admin.exec_driver_sql(db.ddl)
                admin.commit()
        finally:
            server.dispose()
        report.notes.append(f"database {db.name} re-created")
        return self._connect(self._engine(url, load=True), snapshot.target)

    def relocate(
        self, snapshot: Snapshot, destination: Target, *, other: Snapshot | None = None,
        blobs: BlobStore | None = None,
    ) -> Relocation:
        """The database re-addressed to another file or database (:mod:`.relocate`)."""
        from preimage.connectors.sql.relocate import relocate_database

        assert isinstance(snapshot, SqlSnapshot)
        return relocate_database(snapshot, destination, blobs)

    def live_items(self, conn: Any, names: list[str]) -> list[Any]:
        """The live objects (no rows) in the same scope."""
        return list(self._read(conn, None, names))


class _LineCounter:
    """Counts the lines of the chunks passing through."""

    def __init__(self) -> None:
        self.rows = 0

    def through(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            self.rows += chunk.count(b"\n")
            yield chunk


def row_scope(target: Target) -> str | None:
    """The re-rendered predicate of ``?table=…&where=…`` (``None`` without one); raise
    :class:`InvalidTargetError` for a bad one."""
    from preimage.connectors.sql.predicate import check_predicate

    where = target.param("where")
    if where is None:
        if target.param("table") is not None:
            raise InvalidTargetError(target.redacted, "'table' needs 'where' (or use ?tables=)")
        return None
    if not (target.param("table") or "").strip():
        raise InvalidTargetError(target.redacted, "'where' needs 'table=<name>'")
    if target.param("tables") is not None:
        raise InvalidTargetError(target.redacted, "give only one of tables, table")
    dialect = "mysql" if target.scheme.split("+", 1)[0] in mysql.MYSQL_DIALECTS else "sqlite"
    return check_predicate(where, target.redacted, dialect=dialect)


def _direct_ready(conn: Any, names: list[str]) -> bool:
    """Whether every table of ``names`` (empty: all) is read by :mod:`.mysql_direct` as
    SQLAlchemy reads it, its rows as lines — checked before anything is read or written."""
    try:
        mysql_direct.check_tables(conn, names)
        known = mysql_rows.table_columns(conn)
        return all(mysql_rows.tuple_columns(conn, name, known[name]) is not None
                   for name in (names or known) if name in known)
    except mysql_direct.Unsupported:
        return False


def _connection_failed(redacted: str, msg: str) -> Exception:
    """The error for a connection the server did not open: refused credentials are
    terminal, anything else (unreachable, overloaded) transient."""
    if "denied" in msg.lower() or "password" in msg.lower():
        return TerminalConnectorError(f"{redacted} refused the credentials: {msg}",
                                      target=redacted)
    return TransientConnectorError(f"cannot reach {redacted}: {msg}", target=redacted)


def _unknown_database(exc: BaseException) -> bool:
    """Whether a connection failed because the named database does not exist (MySQL 1049)."""
    cause = exc.__cause__
    orig = getattr(cause, "orig", None)
    args: tuple[Any, ...] = tuple(getattr(orig, "args", ()))
    return bool(args) and args[0] == 1049
