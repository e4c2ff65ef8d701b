"""Restore into another database and score it: SQLite (another file), PostgreSQL and
MariaDB (another database on the real server), and the gate against each system's
own runbook (pg_dump | pg_restore, mysqldump | mariadb)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import preimage
from preimage import Store
from preimage.pytest_plugin import FidelityGateError, assert_restored

PG_SEED = """
CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL, qty int CHECK (qty > 0));
CREATE INDEX orders_item ON orders (item);
INSERT INTO orders (item, qty) VALUES ('apple', 3), ('pear', 1), ('plum', 7);
CREATE VIEW big AS SELECT * FROM orders WHERE qty > 2;
COMMENT ON TABLE orders IS 'what people bought';
SELECT setval('orders_id_seq', 41);
"""


def test_sqlite_restores_into_another_file(tmp_path: Path, store: Store) -> None:
    """A SQLite database restored into another file scores 1.0 against the backup, with
    the file reported as mapped; the source file is left alone."""
    src, dst = tmp_path / "app.db", tmp_path / "staging" / "copy.db"
    dst.parent.mkdir()
    with sqlite3.connect(src) as conn:
        conn.executescript("""
            CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT NOT NULL DEFAULT 'x');
            CREATE INDEX t_v ON t (v);
            CREATE TRIGGER t_up AFTER UPDATE ON t BEGIN SELECT 1; END;
            INSERT INTO t (v) VALUES ('a'), ('b'), ('c');
            DELETE FROM t WHERE v = 'c';
            PRAGMA user_version = 7;
        """)
    conn.close()
    backup = preimage.capture([f"sqlite:///{src}"], store=store)
    result = preimage.restore_to(backup.id, f"sqlite:///{dst}", store=store)
    assert result.ok
    [mapped] = result.mappings[f"sqlite:///{dst}"]
    assert (mapped.what, mapped.old, mapped.new) == ("database file", str(src), str(dst))
    total, _ = preimage.score_against(backup.id, f"sqlite:///{dst}", store=store)
    assert total.restorable.score == 1.0, total.differences
    assert [m.what for m in total.mapped] == ["database file"]
    with sqlite3.connect(dst) as conn:  # the AUTOINCREMENT counter came along
        assert conn.execute("SELECT seq FROM sqlite_sequence").fetchone() == (3,)
        assert conn.execute("PRAGMA user_version").fetchone() == (7,)
    conn.close()
    with pytest.raises(preimage.UsageError, match="own database"):
        preimage.restore_to(backup.id, f"sqlite:///{src}?tables=t", store=store)


@pytest.fixture
def pg_copy(db: Any) -> Iterator[str]:
    """The name of a database that does not exist yet (dropped afterwards)."""
    name = f"{db.name}_copy"
    yield name
    db.server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_postgres_restores_into_another_database(db: Any, pg_copy: str, store: Store, pg_dump: Any) -> None:
    """A whole-database backup restored into a database that does not exist yet: the
    database is created, pg_dump of both is identical, and the score is 1.0 with the
    database name mapped."""
    db.sql(PG_SEED + f"COMMENT ON DATABASE {db.name} IS 'shop'; "
           f"ALTER DATABASE {db.name} SET work_mem = '8MB';")
    backup = preimage.capture([db.uri()], store=store)
    dest = db.server.uri(pg_copy)
    result = preimage.restore_to(backup.id, dest, store=store)
    assert result.ok
    assert [(m.what, m.old, m.new) for m in result.mappings[dest]] == [
        ("database", db.name, pg_copy)]
    copy = type(db)(db.server, pg_copy)
    assert pg_dump(copy) == pg_dump(db)
    total, _ = preimage.score_against(backup.id, dest, store=store)
    assert total.restorable.score == 1.0, [d for d in total.differences if d.fidelity != "server"]
    assert db.server.psql("SELECT description FROM pg_shdescription d JOIN pg_database b "
                          f"ON b.oid = d.objoid WHERE datname = '{pg_copy}'").strip() == "shop"


def test_pg_dump_runbook_loses_what_the_gate_names(db: Any, pg_copy: str, store: Store) -> None:
    """`pg_dump -Fc` then `pg_restore -d` into a fresh database (a common runbook) brings
    tables, rows and sequences back but not the database's comment and settings: the
    gate scores content 1.0 and names exactly those metadata fields."""
    db.sql(PG_SEED + f"COMMENT ON DATABASE {db.name} IS 'shop'; "
           f"ALTER DATABASE {db.name} SET work_mem = '8MB';")
    backup = preimage.capture([db.uri()], store=store)
    server = db.server
    dump = subprocess.run([server.tool("pg_dump"), "-Fc", db.name], capture_output=True,
                          env=server.env(), check=True).stdout
    server.psql(f"CREATE DATABASE {pg_copy}")
    subprocess.run([server.tool("pg_restore"), "-d", pg_copy], input=dump, env=server.env(),
                   check=True, capture_output=True)
    with pytest.raises(FidelityGateError) as gate:  # the pytest plugin's gate
        assert_restored(backup.id, server.uri(pg_copy), store=store)
    total = gate.value.report
    assert total.score_of("content").score == 1.0
    lost = {(d.item, d.path) for d in total.differences
            if d.fidelity == "metadata" and d.path != "(oracle)"}
    # pg_dump itself (the schema oracle) sees the same: only the database's own lines differ
    oracle = {d.item for d in total.differences if d.path == "(oracle)"}
    assert oracle and all(pg_copy in item for item in oracle), oracle
    where = f"database {pg_copy}"
    # settings: the captured entry is missing and the live list is empty (an extra leaf)
    assert lost == {(where, "comment"), (where, "settings{work_mem=8MB}"), (where, "settings")}
    assert f"{where}  comment: \"shop\" → (none)" in str(gate.value)


def test_postgres_refuses_its_own_database_and_another_scope(db: Any, store: Store) -> None:
    """--to the source database, or to another scope than the backup's, is refused."""
    db.sql(PG_SEED)
    backup = preimage.capture([db.uri("tables=public.orders")], store=store)
    with pytest.raises(preimage.UsageError, match="own database"):
        preimage.restore_to(backup.id, db.uri(), store=store)
    with pytest.raises(preimage.UsageError, match="same scope"):
        preimage.restore_to(backup.id, db.server.uri("other", query="schema=public"), store=store)


MY_SEED = """
CREATE TABLE items (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40) NOT NULL,
                    price DECIMAL(8,2) DEFAULT 0) ENGINE=InnoDB;
INSERT INTO items (name, price) VALUES ('apple', 1.5), ('pear', 2.25);
CREATE VIEW cheap AS SELECT id, name FROM items WHERE price < 2;
CREATE PROCEDURE bump() UPDATE items SET price = price + 1;
CREATE TRIGGER items_name BEFORE INSERT ON items FOR EACH ROW SET NEW.name = TRIM(NEW.name);
"""


@pytest.fixture
def my_copy(mydb: Any) -> Iterator[str]:
    """A database name on the MariaDB server that does not exist yet (dropped after)."""
    name = f"{mydb.name}_copy"
    yield name
    mydb.server.sql(f"DROP DATABASE IF EXISTS {name}")


@pytest.mark.mariadb
def test_mariadb_restores_into_another_database(mydb: Any, my_copy: str, store: Store) -> None:
    """A MariaDB database restored under another name: mysqldump of both matches but for
    the name, and the score is 1.0 with the database mapped."""
    mydb.sql(f"ALTER DATABASE {mydb.name} CHARACTER SET latin1 COLLATE latin1_swedish_ci;"
             + MY_SEED)
    backup = preimage.capture([mydb.uri()], store=store)
    dest = mydb.server.uri(my_copy)
    result = preimage.restore_to(backup.id, dest, store=store)
    assert result.ok
    assert [(m.what, m.old, m.new) for m in result.mappings[dest]] == [
        ("database", mydb.name, my_copy)]
    assert mydb.server.dump(my_copy).replace(my_copy, "DB") == mydb.dump().replace(mydb.name, "DB")
    total, _ = preimage.score_against(backup.id, dest, store=store)
    assert total.restorable.score == 1.0, total.differences


@pytest.mark.mariadb
def test_mysqldump_runbook_loses_what_the_gate_names(mydb: Any, my_copy: str, store: Store) -> None:
    """A plain `mysqldump DB | mariadb COPY` (no --routines, into a database created with
    the server's defaults) loses the procedure and the database's character set: the
    gate names both, and the rows and tables score 1.0."""
    mydb.sql(f"ALTER DATABASE {mydb.name} CHARACTER SET latin1 COLLATE latin1_swedish_ci;"
             + MY_SEED)
    backup = preimage.capture([mydb.uri()], store=store)
    server = mydb.server
    dump = subprocess.run(["mariadb-dump", "--no-defaults", f"--host={server.host}",
                           f"--port={server.port}", f"--user={server.user}", "--protocol=TCP",
                           mydb.name], capture_output=True, text=True, env=server.env(),
                          check=True).stdout
    server.sql(f"CREATE DATABASE {my_copy} CHARACTER SET utf8mb4")
    server.sql(dump, my_copy)
    with pytest.raises(FidelityGateError) as gate:  # the pytest plugin's gate
        assert_restored(backup.id, server.uri(my_copy), store=store)
    named = {d.item for d in gate.value.report.differences}
    assert "procedure bump" in str(gate.value)
    assert "procedure bump" in named, named
    assert f"database {my_copy}" in named, named
    assert not any(d.item.startswith(("table", "row")) for d in gate.value.report.differences)


def test_cli_restore_to_and_junit_never_show_the_password(db: Any, pg_copy: str, cli: Any, tmp_path: Path) -> None:
    """A destination URI with a password works through the CLI, and the password reaches
    neither the output, the JSON, the JUnit report nor the store's catalog."""
    db.sql(PG_SEED)
    secret = db.server.password
    backup = cli.capture(db.uri(password=False))
    dest = db.server.uri(pg_copy, password=True)
    assert secret in dest
    restored = cli.run("restore", "--json", backup, "--to", dest)
    report = tmp_path / "fidelity.xml"
    scored = cli.run("score", backup, "--against", dest, "--json", "--min", "1.0",
                     "--junit", str(report))
    for text in (restored.stdout, restored.stderr, scored.stdout, scored.stderr,
                 report.read_text()):
        assert secret not in text
    home = Path(os.environ["PREIMAGE_HOME"])
    for part in home.glob("catalog.sqlite*"):  # the database and its write-ahead log
        assert secret.encode() not in part.read_bytes(), part.name
