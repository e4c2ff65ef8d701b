"""Restoring a :class:`SqlSnapshot`: SQLite inside one open transaction, MySQL step by step.

Order: the database's character set (MySQL); drop views, triggers and
routines that differ or are new (and the triggers of tables whose rows are
replaced, so they do not fire); drop tables that are new (or, for a table
target, were absent at capture) or whose DDL changed; create tables from
their DDL and insert their rows in captured order; replace the rows of kept
tables whose digest differs; create indexes, views (a view that needs a view
not yet made waits for it), routines, triggers and events; set
``sqlite_sequence`` counters and pragmas.

On MySQL every step commits on its own; a failing step raises
:class:`StepsFailedError` naming the steps done before it.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from preimage.connectors.sql import mysql
from preimage.connectors.sql.grants import grant_statements
from preimage.interface.blobs import BlobStore
from preimage.interface.errors import RestoreConflictError, RestoreError
from preimage.restoration import ConflictMode, Outcome, RestorePolicy, RestoreReport
from preimage.snapshot_schemas.sql import SqlCounter, SqlGrant, SqlObject, SqlSnapshot, SqlTable


class _Kept:
    """A blob sink that keeps the chunks in memory (live rows read to compare)."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def put_chunks(self, chunks: Iterable[bytes]) -> str:
        self.chunks.extend(bytes(c) for c in chunks)
        return ""


class _HashOnly:
    """A blob sink that only hashes: the digest a capture would store, nothing kept."""

    def put_chunks(self, chunks: Iterable[bytes]) -> str:
        hasher = hashlib.sha256()
        for chunk in chunks:
            hasher.update(chunk)
        return hasher.hexdigest()


@dataclass
class _Step:
    key: str
    action: str
    run: Callable[[], None]
    destructive: bool = False
    removes: bool = False
    retry: bool = False  # a view may need another view made later: try it again at the end
    quiet: bool = False  # switched off and on again around other steps: not a change
    table: str | None = None  # a row step's table


class StepsFailedError(Exception):
    """A step failed after others were done and committed (MySQL)."""

    def __init__(self, step: str, error: BaseException, done: list[str]) -> None:
        super().__init__(f"{step}: {error}")
        self.step = step
        self.error = getattr(error, "orig", error)
        self.done = done


class SqlRestorer:
    """Plans and (unless a dry run) carries out one restore."""

    def __init__(self, conn: Any, snap: SqlSnapshot, blobs: BlobStore, policy: RestorePolicy,
                 report: RestoreReport, connector: Any) -> None:
        self.conn = conn
        self.snap = snap
        self.blobs = blobs
        self.policy = policy
        self.report = report
        self.connector = connector
        self.quote = conn.dialect.identifier_preparer.quote
        self._insp: Any = None

    def _exec(self, sql: str, params: dict[str, Any] | None = None) -> Callable[[], None]:
        if not params and hasattr(self.conn, "inspector"):  # the driver alone (.mysql_direct)
            return lambda: self.conn.exec_driver_sql(sql) and None
        from sqlalchemy import text

        return lambda: self.conn.execute(text(sql), params or {}) and None

    def run(self) -> None:
        snap = self.snap
        names = [t.name for t in snap.items if isinstance(t, SqlTable)] \
            if snap.scope in ("tables", "rows") else []
        live = {i.natural_key(): i for i in self.connector.live_items(self.conn, names)}
        captured = {i.natural_key(): i for i in snap.items}
        drops: list[_Step] = []
        creates: list[_Step] = []
        loads: list[_Step] = []
        late: list[_Step] = []
        tables = [t for t in snap.items if isinstance(t, SqlTable)]
        objects = [o for o in snap.items if isinstance(o, SqlObject)]
        recreate: set[str] = set()
        replaced: set[str] = set()   # kept tables whose rows are replaced
        is_mysql = mysql.is_mysql(self.conn)
        merge = self.policy.conflict is ConflictMode.MERGE
        merged: list[SqlTable] = []  # kept tables some of whose captured rows are missing
        # Neither MySQL nor SQLite can switch a trigger off: one on a table whose rows are
        # replaced is dropped meanwhile and made again after, so the restore does not fire it.
        no_switch = is_mysql or self.conn.dialect.name == "sqlite"
        for t in tables:
            have = live.get(t.natural_key())
            if not t.exists:
                if have is not None and have.exists:
                    drops.append(_Step(t.natural_key(), "drop table (absent at capture)",
                                       self._exec(f"DROP TABLE {self.quote(t.name)}"),
                                       destructive=True, removes=True))
                continue
            if merge and have is not None and have.exists:
                # merge keeps the table as the agent left it and puts back missing rows
                if have.columns != t.columns:
                    self.report.add(t.natural_key(), Outcome.SKIPPED,
                                    reason="its columns changed since the capture; merge "
                                           "keeps the table and its rows as they are")
                elif self._live_digest(t) != t.rows_digest:
                    merged.append(t)
                continue
            if have is None or not have.exists or have.ddl != t.ddl or have.columns != t.columns:
                recreate.add(t.name)
                if have is not None and have.exists:
                    drops.append(_Step(t.natural_key(), "drop table to re-create it",
                                       self._exec(f"DROP TABLE {self.quote(t.name)}"),
                                       destructive=True))
                creates.append(_Step(t.natural_key(), "create table", self._create(t)))
                if t.row_count:
                    loads.append(_Step(t.natural_key(), f"insert {t.row_count} rows",
                                       self._insert(t)))
                continue
            digest = self._live_digest(t)
            if digest != t.rows_digest:
                q = self.quote(t.name)
                replaced.add(t.name)
                loads.append(_Step(t.natural_key(), "replace rows",
                                   self._replace_rows(t, q), destructive=True))
        # Objects: drop what is new or differs (and everything on a re-created table).
        for key, have in live.items():
            if isinstance(have, SqlObject):
                want = captured.get(key)
                assert want is None or isinstance(want, SqlObject)
                if have.kind == "database":
                    continue
                if want is None and snap.scope == "tables" and have.table not in names:
                    continue
                trigger_off = no_switch and have.kind == "trigger" and have.table in replaced
                if want is None or want.ddl != have.ddl or have.table in recreate or \
                        trigger_off or want.settings != have.settings:
                    drops.insert(0, _Step(key, "drop (created since)" if want is None
                                          else "drop to re-create",
                                          self._exec(f"DROP {have.kind.upper()} IF EXISTS "
                                                     f"{self.quote(have.name)}"),
                                          destructive=True, removes=want is None))
            elif isinstance(have, SqlTable) and key not in captured and snap.scope == "database":
                drops.append(_Step(key, "drop table (created since)",
                                   self._exec(f"DROP TABLE {self.quote(have.name)}"),
                                   destructive=True, removes=True))
        for o in objects:
            have = live.get(o.natural_key())
            if o.kind == "database":
                if have is not None and have.ddl != o.ddl:
                    drops.insert(0, _Step(o.natural_key(), "character set and collation",
                                          self._alter_database(o), destructive=True))
                continue
            if merge and have is not None:
                continue  # merge keeps what exists as the agent left it
            if have is None or have.ddl != o.ddl or o.table in recreate or (
                no_switch and o.kind == "trigger" and o.table in replaced
            ) or have.settings != o.settings:
                run = self._replay(o) if is_mysql else self._exec(o.ddl)
                late.append(_Step(o.natural_key(), f"create {o.kind}", run,
                                  retry=o.kind == "view"))
        if is_mysql and snap.scope != "rows":
            late += self._grant_steps(captured, live, merge)
        for c in snap.items:
            if isinstance(c, SqlCounter):
                have = live.get(c.natural_key())
                if merge and have is not None:
                    continue
                if have is None or have.value != c.value or (
                    c.kind == "counter" and c.name in recreate
                ):
                    late.append(_Step(c.natural_key(), f"set {c.kind}", self._counter(c)))
        for key, have in live.items():
            if isinstance(have, SqlCounter) and have.kind == "counter" and key not in captured \
                    and (not names or have.name in names):
                late.append(_Step(key, "reset counter", self._exec(
                    "DELETE FROM sqlite_sequence WHERE name = :n", {"n": have.name}),
                    destructive=True, removes=True))
        early = [s for s in drops + creates + loads if self.policy.in_scope(s.key)]
        rows: list[_Step] = []
        if self.policy.keys is not None:
            rows = self._row_steps(tables, recreate, self.policy.keys)
        if merge:
            early = [s for s in early if not s.destructive]
            for t in merged:
                if self.policy.in_scope(t.natural_key()):
                    rows += self._missing_rows(t)
        if no_switch and rows:
            rows = self._triggers_off(rows, live, {s.key for s in early})
        # Row writes before indexes, triggers and counters are made again, so a trigger
        # put back by this restore does not fire on them either.
        steps = early + rows + [s for s in late if self.policy.in_scope(s.key)
                                and not (merge and s.destructive)]
        if self.policy.conflict is ConflictMode.REFUSE and steps:
            raise RestoreConflictError(snap.target, sorted({s.key for s in steps}))
        done: dict[str, list[str]] = {}
        journal: list[str] = []
        queue = list(steps)
        retried: set[int] = set()
        while queue:
            step = queue.pop(0)
            if not self.policy.dry_run:
                try:
                    step.run()
                except Exception as exc:
                    if step.retry and id(step) not in retried and queue:
                        retried.add(id(step))
                        queue.append(step)
                        continue
                    if is_mysql:
                        raise StepsFailedError(f"{step.action} of {step.key}", exc,
                                               journal) from exc
                    raise
            journal.append(f"{step.action} of {step.key}")
            if not step.quiet:
                done.setdefault(step.key, []).append(step.action)
        removed = {s.key for s in steps if s.removes}
        for key, actions in done.items():
            outcome = Outcome.PLANNED if self.policy.dry_run else (
                Outcome.REMOVED if key in removed else Outcome.RESTORED)
            self.report.add(key, outcome, "; ".join(actions))
        for key in captured:
            if key not in done and self.policy.in_scope(key):
                self.report.add(key, Outcome.UNCHANGED)

    def _grant_steps(self, captured: dict[str, Any], live: dict[str, Any],
                     merge: bool) -> list[_Step]:
        """GRANT what the capture had and the live database lacks; REVOKE what was added
        (not on merge), once the objects exist (:mod:`.grants`)."""
        database = mysql.database_name(self.conn)
        steps = []
        for key in sorted(set(captured) | set(live)):
            want, have = captured.get(key), live.get(key)
            if not isinstance(want or have, SqlGrant):
                continue
            sql = grant_statements(want, have, database, merge=merge)
            if sql:
                steps.append(_Step(key, "grant" if want is not None else "revoke (granted since)",
                                   self._statements(sql), destructive=any(
                                       s.startswith("REVOKE") for s in sql),
                                   removes=want is None))
        return steps

    def _statements(self, sql: list[str]) -> Callable[[], None]:
        runs = [self._exec(statement) for statement in sql]

        def run() -> None:
            for each in runs:
                each()

        return run

    def _live_digest(self, t: SqlTable) -> str | None:
        """The digest the live rows of ``t`` would get in a capture."""
        if t.rows_format == "tuples":
            from preimage.connectors.sql import mysql_rows

            if mysql_rows.tuple_columns(self.conn, t.name) == t.copy_columns:
                return _HashOnly().put_chunks(mysql_rows.read_lines(
                    self.conn, mysql_rows.select_sql(t.name, t.copy_columns)))
        if self._insp is None:
            self._insp = _inspect(self.conn)
        return self.connector._table(  # type: ignore[no-any-return]
            self.conn, self._insp, t.name, _HashOnly(), {}).rows_digest

    def _captured_rows(self, t: SqlTable) -> Iterable[tuple[dict[str, Any], dict[str, Any]]]:
        """Each captured row of ``t`` as (its values as the row key reads them, the values
        to write)."""
        if not t.rows_digest:
            return
        if t.rows_format == "tuples":
            from preimage.snapshot_schemas.sql import iter_tuple_rows, tuple_raw

            for values in iter_tuple_rows(self.blobs.chunks(t.rows_digest, path=t.name),
                                          t.copy_columns):
                yield values, {c: tuple_raw(v) for c, v in values.items()}
            return
        from preimage.connectors.sql.rows import decode_rows

        for decoded in decode_rows(self.blobs.chunks(t.rows_digest, path=t.name)):
            yield _raw(decoded), decoded

    def _missing_rows(self, t: SqlTable) -> list[_Step]:
        """merge: a write for each captured row of ``t`` the live table lacks — by primary
        key, or for a keyless table by value and occurrence, so a deleted copy of two equal
        rows counts as missing."""
        from preimage.snapshot_schemas.sql import iter_tuple_rows, row_key

        if t.rows_format == "tuples":
            from preimage.connectors.sql import mysql_rows

            lines = mysql_rows.read_lines(self.conn, mysql_rows.select_sql(t.name, t.copy_columns))
            live_rows: Iterable[dict[str, Any]] = iter_tuple_rows(lines, t.copy_columns)
        else:
            from preimage.connectors.sql.rows import decode_rows

            if self._insp is None:
                self._insp = _inspect(self.conn)
            kept = _Kept()
            self.connector._table(self.conn, self._insp, t.name, kept, {})
            live_rows = (_raw(d) for d in decode_rows(kept.chunks))
        seen: Counter[str] = Counter()
        have = {row_key(values, t.primary_key, seen) for values in live_rows}
        seen = Counter()
        prefix = f"kind=row|table={t.name}|row="
        steps = []
        for values, written in self._captured_rows(t):
            key = row_key(values, t.primary_key, seen)
            if key not in have:
                steps.append(_Step(prefix + key, "write row", self._row(t, key, written),
                                   table=t.name))
        return steps

    def _triggers_off(self, rows: list[_Step], live: dict[str, Any],
                      planned: set[str]) -> list[_Step]:
        """``rows`` between dropping the live triggers of their tables and making them
        again (MySQL and SQLite cannot switch a trigger off), so writing a row back does
        not fire one.  Triggers this restore drops itself are left to it."""
        tables = {s.table for s in rows}
        triggers = [o for o in live.values() if isinstance(o, SqlObject)
                    and o.kind == "trigger" and o.table in tables
                    and o.natural_key() not in planned]
        off = [_Step(o.natural_key(), "drop while rows go back",
                     self._exec(f"DROP TRIGGER IF EXISTS {self.quote(o.name)}"), quiet=True)
               for o in triggers]
        on = [_Step(o.natural_key(), "create again",
                    self._replay(o) if mysql.is_mysql(self.conn) else self._exec(o.ddl),
                    quiet=True) for o in triggers]
        return off + rows + on

    def _row_steps(self, tables: list[SqlTable], recreated: set[str],
                   keys: frozenset[str]) -> list[_Step]:
        """Exact row keys (an undo, or merge's missing rows): update, insert or delete
        exactly those rows."""
        from preimage.snapshot_schemas.sql import row_key

        steps: list[_Step] = []
        for t in tables:
            prefix = f"kind=row|table={t.name}|row="
            wanted = {k for k in keys if k.startswith(prefix)}
            if not wanted or not t.exists or t.name in recreated:
                continue  # a re-created table gets all its rows with it
            rows: dict[str, dict[str, Any]] = {}
            seen: Counter[str] = Counter()
            for values, written in self._captured_rows(t):
                k = prefix + row_key(values, t.primary_key, seen)
                if k in wanted:  # each value as captured
                    rows[k] = written
            # deletions first, then writes in the rows' captured order (storage order)
            for k in sorted(wanted - set(rows)) + list(rows):
                got = rows.get(k)
                what = "delete row" if got is None else "write row"
                steps.append(_Step(k, what, self._row(t, k[len(prefix):], got),
                                   destructive=got is None, removes=got is None, table=t.name))
        return steps

    def _row(self, t: SqlTable, key: str, values: dict[str, Any] | None) -> Callable[[], None]:
        from sqlalchemy import and_, func, select

        def run() -> None:
            live = reflect(self.conn, t.name)
            if t.primary_key:
                ident = _decoded(dict(zip(t.primary_key, json.loads(key), strict=True)))
                where = and_(*[live.c[c] == v for c, v in ident.items()])
                exists = self.conn.execute(select(func.count()).select_from(live).where(where))
                if values is None:
                    self.conn.execute(live.delete().where(where))
                elif exists.scalar():
                    self.conn.execute(live.update().where(where).values(values))
                else:
                    self.conn.execute(live.insert().values(values))
                return
            whole, _, _occurrence = key.rpartition("#")
            if values is not None:  # a keyless row the call deleted: insert it again
                self.conn.execute(live.insert().values(values))
                return
            match = _decoded(json.loads(whole))
            where = and_(*[live.c[c].is_(None) if v is None else live.c[c] == v
                           for c, v in match.items()])
            if mysql.is_mysql(self.conn):
                self.conn.execute(live.delete().where(where).with_dialect_options(mysql_limit=1))
            else:  # SQLite: one of the equal rows, by rowid
                first = self.conn.execute(
                    select(func.min(_rowid())).select_from(live).where(where)).scalar()
                if first is not None:
                    self.conn.exec_driver_sql(
                        f"DELETE FROM {self.quote(t.name)} WHERE rowid = ?", (first,))

        return run

    def _insert(self, t: SqlTable) -> Callable[[], None]:
        from preimage.connectors.sql.tables import insert_rows

        def run() -> None:
            insert_rows(self.conn, t, self.blobs)

        return run

    def _replace_rows(self, t: SqlTable, quoted: str) -> Callable[[], None]:
        from preimage.connectors.sql.tables import insert_rows

        def run() -> None:
            if not mysql.is_mysql(self.conn):
                self.conn.exec_driver_sql(f"DELETE FROM {quoted}")
                insert_rows(self.conn, t, self.blobs)
                return
            # One transaction per table: its rows are all back or none changed.
            self.conn.exec_driver_sql("START TRANSACTION")
            try:
                self.conn.exec_driver_sql(f"DELETE FROM {quoted}")
                insert_rows(self.conn, t, self.blobs, in_transaction=True)
            except BaseException:
                self.conn.exec_driver_sql("ROLLBACK")
                raise
            self.conn.exec_driver_sql("COMMIT")

        return run

    def _replay(self, o: SqlObject) -> Callable[[], None]:
        return lambda: mysql.replay(self.conn, o)

    def _alter_database(self, o: SqlObject) -> Callable[[], None]:
        import re

        # SHOW CREATE DATABASE: CREATE DATABASE `x` /*!40100 DEFAULT CHARACTER SET … */
        found = re.search(r"/\*!\d+ (.*?) \*/", o.ddl)
        options = found.group(1) if found else ""
        sql = f"ALTER DATABASE {self.quote(o.name)} {options}"
        return lambda: self.conn.exec_driver_sql(sql) and None

    def _create(self, t: SqlTable) -> Callable[[], None]:
        ddl = t.ddl or ""

        def run() -> None:
            self.conn.exec_driver_sql(ddl)

        return run

    def _counter(self, c: SqlCounter) -> Callable[[], None]:
        if c.kind == "pragma":
            if c.name not in ("user_version", "application_id"):
                raise ValueError(f"unknown pragma {c.name!r} in snapshot")
            return lambda: self.conn.exec_driver_sql(f"PRAGMA {c.name} = {int(c.value)}") and None

        def run() -> None:
            self.conn.exec_driver_sql("DELETE FROM sqlite_sequence WHERE name = ?", (c.name,))
            self.conn.exec_driver_sql("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)",
                                      (c.name, c.value))

        return run


def restore_rows(conn: Any, snap: SqlSnapshot, blobs: BlobStore, policy: RestorePolicy,
                 report: RestoreReport) -> None:
    """Row scope (MySQL/MariaDB): put the captured rows back by primary key — deleted
    ones inserted with their keys, changed ones reverted (``overwrite``), or only the
    missing ones (``merge``); rows outside the capture are left alone.

    InnoDB keeps rows in primary-key order, so rows put back by key sit where they sat.
    The table's triggers are dropped while the rows go back (MySQL cannot switch one off)
    and created again after, from the capture when one is missing — so a restore that
    stopped between the two is finished by running it again.  The rows go back in one
    transaction of their own."""
    from preimage.connectors.sql import mysql_rows

    table = next(t for t in snap.items if isinstance(t, SqlTable))
    triggers = [o for o in snap.items if isinstance(o, SqlObject) and o.kind == "trigger"]
    key = table.natural_key()
    if not policy.in_scope(key):
        return
    present = {str(n) for (n,) in conn.exec_driver_sql(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()")}
    if table.name not in present:
        raise RestoreError(
            f"table {table.name} no longer exists; a row-scope backup holds only some rows — "
            "restore a backup of the whole table; nothing was written")
    if mysql_rows.tuple_columns(conn, table.name) != table.copy_columns:
        raise RestoreError(f"the columns of {table.name} changed since the capture; nothing "
                           "was written")
    live_triggers = {o.name: o for o in mysql.read_objects(conn, [table.name])}
    missing = [o for o in triggers if o.name not in live_triggers]
    digest = _HashOnly().put_chunks(mysql_rows.read_lines(
        conn, mysql_rows.select_sql(table.name, table.copy_columns, table.row_filter)))
    rows_differ = digest != (table.rows_digest or _HashOnly().put_chunks([]))
    if not rows_differ and not missing:
        report.add(key, Outcome.UNCHANGED)
        return
    if policy.conflict is ConflictMode.REFUSE:
        raise RestoreConflictError(snap.target, [key])
    if policy.dry_run:
        report.add(key, Outcome.PLANNED, "put back captured rows" if rows_differ
                   else "create missing triggers")
        return
    done: list[str] = []
    count = 0
    try:
        if rows_differ:
            for name in live_triggers:
                conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {mysql.quote(name)}")
                done.append(f"drop trigger {name} while the rows go back")
            conn.exec_driver_sql("START TRANSACTION")
            try:
                count = mysql_rows.write_lines(
                    conn, table.name, table.copy_columns,
                    blobs.chunks(table.rows_digest, path=table.name) if table.rows_digest
                    else [], on_duplicate="update" if policy.conflict is ConflictMode.OVERWRITE
                    else "keep", key=table.primary_key)
            except BaseException:
                conn.exec_driver_sql("ROLLBACK")
                raise
            conn.exec_driver_sql("COMMIT")
            done.append(f"put back {count} captured rows")
        # The live triggers as they were (in their order), then captured ones still missing.
        for trigger in [*live_triggers.values(), *missing] if rows_differ else missing:
            mysql.replay(conn, trigger)
            done.append(f"create trigger {trigger.name}")
    except Exception as exc:
        dropped = [n for n in live_triggers if f"drop trigger {n} while the rows go back" in done
                   and f"create trigger {n}" not in done]
        for name in dropped:  # put the triggers back now if the server lets us
            try:
                mysql.replay(conn, live_triggers[name])
                done.append(f"create trigger {name} again after the failure")
            except Exception:
                continue
        raise StepsFailedError(f"row restore of {key}", exc, done) from exc
    report.add(key, Outcome.RESTORED, "; ".join(done))

def _rowid() -> Any:
    from sqlalchemy import literal_column

    return literal_column("rowid")


def _raw(values: dict[str, Any]) -> dict[str, Any]:
    """Decoded row values as the capture's JSON has them (bytes as ``$bytes``)."""
    import base64

    return {k: {"$bytes": base64.b64encode(v).decode()} if isinstance(v, bytes) else v
            for k, v in values.items()}


def _decoded(values: dict[str, Any]) -> dict[str, Any]:
    import base64

    return {k: base64.b64decode(v["$bytes"]) if isinstance(v, dict) and set(v) == {"$bytes"}
            else v for k, v in values.items()}


def _inspect(conn: Any) -> Any:
    from preimage.connectors.sql.tables import inspector as inspect

    return inspect(conn)


def reflect(conn: Any, name: str) -> Any:
    from preimage.connectors.sql.tables import reflect as reflect_table

    return reflect_table(conn, name)
