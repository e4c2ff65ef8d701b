"""Bad input and failures of the PostgreSQL connector: clear errors, nothing half-done."""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import quote

import pytest

import preimage
from preimage import (
    InvalidTargetError,
    RestoreConflictError,
    RestoreError,
    TerminalConnectorError,
    TransientConnectorError,
)

pytestmark = pytest.mark.postgres


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_wrong_password_is_a_terminal_error(db: Any, store: Any) -> None:
    """A wrong password fails the capture with a message naming the user and what to fix."""
    uri = f"postgresql://postgres:wrong@127.0.0.1:{db.server.port}/{db.name}"
    with pytest.raises(TerminalConnectorError, match=r"refused the credentials.*postgres"):
        preimage.capture([uri], store=store)


def test_wrong_password_through_the_cli_exits_2_without_echoing_it(db: Any, cli: Any) -> None:
    """The CLI reports refused credentials on one line, exit code 2, password not shown."""
    proc = cli.run("capture", f"postgresql://postgres:s3cret-typo@127.0.0.1:{db.server.port}/x",
                   check=False)
    assert proc.returncode == 2
    assert "refused the credentials" in proc.stderr
    assert "s3cret-typo" not in proc.stderr + proc.stdout


def test_unreachable_server_is_a_transient_error(store: Any) -> None:
    """Nothing listening on the port: a retryable error that says to check the server."""
    uri = f"postgresql://postgres@127.0.0.1:{_free_port()}/shop"
    with pytest.raises(TransientConnectorError, match=r"cannot reach PostgreSQL.*running"):
        preimage.capture([uri], store=store)


def test_row_scope_on_a_missing_table_is_a_clear_error(db: Any, store: Any) -> None:
    """A row scope needs the table: a missing one is named in the error."""
    uri = db.uri(f"table=public.nope&where={quote('id > 1')}")
    with pytest.raises(TerminalConnectorError, match=r"table public\.nope does not exist"):
        preimage.capture([uri], store=store)


def test_named_missing_table_is_captured_absent_and_removed_on_restore(
    db: Any, store: Any
) -> None:
    """A named table that did not exist is recorded as absent; restore drops it when created."""
    backup = preimage.capture([db.uri("tables=public.later")], store=store)
    assert any("did not exist" in n for n in backup.snapshots[0].notes)
    db.sql("CREATE TABLE later (id int); INSERT INTO later VALUES (1);")
    preimage.restore(backup.id, store=store)
    assert db.sql("SELECT to_regclass('public.later') IS NULL").strip() == "t"


@pytest.mark.parametrize(
    "predicate",
    [
        "id = 1; DROP TABLE accounts",
        "id = 1); DROP TABLE accounts; --",
        "pg_terminate_backend(pg_backend_pid()) IS NOT NULL",
        "(SELECT set_config('search_path', 'evil', false)) IS NOT NULL",
        "1 = 1) OR (1 = 1",
        "SELECT * FROM accounts",
        "",
    ],
)
def test_injection_in_where_is_refused_and_nothing_runs(
    db: Any, store: Any, predicate: str
) -> None:
    """A predicate that is not one side-effect-free boolean expression is refused."""
    db.sql("CREATE TABLE accounts (id int PRIMARY KEY); INSERT INTO accounts VALUES (1);")
    with pytest.raises(InvalidTargetError, match="predicate"):
        preimage.capture([db.uri(f"table=accounts&where={quote(predicate)}")], store=store)
    assert db.sql("SELECT count(*) FROM accounts").strip() == "1"


def test_predicate_that_writes_fails_in_the_read_only_capture(db: Any, store: Any) -> None:
    """A function with side effects in a predicate meets a READ ONLY transaction."""
    db.sql("""
        CREATE TABLE accounts (id int PRIMARY KEY); INSERT INTO accounts VALUES (1);
        CREATE FUNCTION wipe() RETURNS boolean LANGUAGE plpgsql AS
            $$ BEGIN DELETE FROM public.accounts; RETURN true; END $$;
    """)
    with pytest.raises(InvalidTargetError, match="predicate failed"):
        preimage.capture([db.uri(f"table=accounts&where={quote('wipe() IS TRUE')}")], store=store)
    assert db.sql("SELECT count(*) FROM accounts").strip() == "1"


def test_restore_blocked_by_a_new_foreign_key_changes_nothing(db: Any, store: Any) -> None:
    """A table created later with a foreign key to a captured table stops the restore with a
    clear error, and the transaction leaves everything as it was."""
    db.sql("CREATE TABLE parent (id int PRIMARY KEY, name text); "
           "INSERT INTO parent VALUES (1, 'one'), (2, 'two');")
    backup = preimage.capture([db.uri("tables=public.parent")], store=store)
    db.sql("""
        ALTER TABLE parent ADD COLUMN extra int;
        UPDATE parent SET name = 'changed';
        CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent(id));
        INSERT INTO child VALUES (10, 1);
    """)
    with pytest.raises(RestoreError, match=r"rolled back.*child.*depends") as err:
        preimage.restore(backup.id, store=store)
    assert "nothing was changed" in str(err.value)
    assert db.sql("SELECT string_agg(name, ',' ORDER BY id) FROM parent").strip() == \
        "changed,changed"
    assert db.sql("SELECT count(*) FROM child").strip() == "1"


def test_failure_half_way_rolls_back_every_step(db: Any, store: Any) -> None:
    """When a later step fails, the steps already run (a dependent view dropped, another
    table's rows) are undone with it."""
    db.sql("""
        CREATE TABLE a (id int PRIMARY KEY); INSERT INTO a VALUES (1), (2);
        CREATE TABLE b (id int PRIMARY KEY, v int); INSERT INTO b VALUES (1, -5);
        CREATE VIEW b_view AS SELECT id FROM b;
    """)
    backup = preimage.capture([db.uri("tables=public.a,public.b")], store=store)
    db.sql("""
        DELETE FROM a; INSERT INTO a VALUES (99);
        ALTER TABLE b ADD COLUMN w int; UPDATE b SET v = 7;
        CREATE TABLE outside (b_id int REFERENCES b(id));
    """)
    with pytest.raises(RestoreError, match="rolled back"):
        preimage.restore(backup.id, store=store)
    assert db.sql("SELECT string_agg(id::text, ',') FROM a").strip() == "99"
    assert db.sql("SELECT v FROM b").strip() == "7"
    assert db.sql("SELECT to_regclass('public.b_view') IS NOT NULL").strip() == "t"


def test_refuse_policy_stops_before_writing(db: Any, store: Any) -> None:
    """conflict=refuse raises RestoreConflictError naming the changed table; nothing written."""
    db.sql("CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'a');")
    backup = preimage.capture([db.uri("tables=public.t")], store=store)
    db.sql("UPDATE t SET v = 'b'")
    with pytest.raises(RestoreConflictError, match="name=t"):
        preimage.restore(backup.id, store=store, conflict="refuse")
    assert db.sql("SELECT v FROM t").strip() == "b"


def test_merge_policy_only_puts_back_missing_rows(db: Any, store: Any) -> None:
    """conflict=merge inserts deleted rows but keeps changed and new ones."""
    db.sql("CREATE TABLE t (id int PRIMARY KEY, v text); "
           "INSERT INTO t VALUES (1, 'a'), (2, 'b');")
    backup = preimage.capture([db.uri("tables=public.t")], store=store)
    db.sql("DELETE FROM t WHERE id = 1; UPDATE t SET v = 'B'; INSERT INTO t VALUES (3, 'c');")
    preimage.restore(backup.id, store=store, conflict="merge")
    assert db.sql("SELECT string_agg(id || v, ',' ORDER BY id) FROM t").strip() == "1a,2B,3c"


def test_dry_run_plans_and_writes_nothing(db: Any, store: Any) -> None:
    """A dry run reports planned steps and leaves the database untouched."""
    db.sql("CREATE TABLE t (id serial PRIMARY KEY, v text); INSERT INTO t (v) VALUES ('a');")
    backup = preimage.capture([db.uri("tables=public.t")], store=store)
    db.sql("DROP TABLE t")
    result = preimage.restore(backup.id, store=store, dry_run=True)
    assert {i.outcome.value for i in result.reports[0].items} >= {"planned"}
    assert db.sql("SELECT to_regclass('public.t') IS NULL").strip() == "t"


def test_restore_onto_a_dropped_database_from_a_table_backup_says_what_to_do(
    db: Any, store: Any
) -> None:
    """A table-scope backup cannot re-create a dropped database; the error says so."""
    db.sql("CREATE TABLE t (id int PRIMARY KEY)")
    backup = preimage.capture([db.uri("tables=public.t")], store=store)
    db.server.psql(f"DROP DATABASE {db.name}")
    with pytest.raises(RestoreError, match=r"no longer exists.*whole-database backup"):
        preimage.restore(backup.id, store=store)


def test_a_damaged_rows_blob_rolls_the_whole_restore_back(
    db: Any, store: Any, damage_rows: Any
) -> None:
    """The restore reads the rows blob once, inside its transaction: a damaged one is
    found there and rolls everything back — the dropped table stays dropped, the other
    table keeps its rows, and the error names the blob's table."""
    db.sql("""
        CREATE TABLE kept (id int PRIMARY KEY, note text);
        INSERT INTO kept SELECT g, 'n' || g FROM generate_series(1, 50) g;
        CREATE TABLE lost (id int PRIMARY KEY, v text);
        INSERT INTO lost SELECT g, repeat('x', g % 40) FROM generate_series(1, 5000) g;
    """)
    backup = preimage.capture([db.uri("tables=public.kept,public.lost")], store=store)
    damage_rows(backup, "lost")
    db.sql("DROP TABLE lost; DELETE FROM kept WHERE id > 10")
    with pytest.raises(preimage.BlobCorruptError, match="lost"):
        preimage.restore(backup.id, store=store)
    assert db.sql("SELECT count(*) FROM pg_class WHERE relname = 'lost'").strip() == "0"
    assert db.sql("SELECT count(*) FROM kept").strip() == "10"
