"""MySQL/MariaDB through the SQLAlchemy connector against a real MariaDB server: every
object kind, AUTO_INCREMENT positions, charsets and collations, mysqldump identical after
a restore, and an honest journal when a restore stops half-way (MySQL commits DDL)."""

from __future__ import annotations

import difflib
from typing import Any

import pytest

import preimage
from preimage import RestoreError

pytestmark = pytest.mark.mariadb

SCHEMA = """
CREATE TABLE customers (
  id int NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name varchar(80) CHARACTER SET latin1 COLLATE latin1_swedish_ci NOT NULL,
  email varchar(120) COLLATE utf8mb4_bin NOT NULL UNIQUE,
  created datetime NOT NULL DEFAULT '2024-01-01 00:00:00'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci COMMENT='people';
CREATE TABLE orders (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer_id int NOT NULL,
  total decimal(10,2) NOT NULL CHECK (total >= 0),
  note text,
  raw blob,
  KEY orders_customer (customer_id),
  CONSTRAINT orders_customer_fk FOREIGN KEY (customer_id) REFERENCES customers (id)
    ON DELETE CASCADE
) ENGINE=InnoDB;
CREATE TABLE audit_log (id int AUTO_INCREMENT PRIMARY KEY, what varchar(200));
CREATE TABLE notes (body varchar(100), n int);
CREATE VIEW big_orders AS SELECT id, total FROM orders WHERE total > 100;
CREATE VIEW aa_biggest AS SELECT max(total) AS top FROM big_orders;
DELIMITER //
CREATE TRIGGER orders_audit AFTER INSERT ON orders FOR EACH ROW
  INSERT INTO audit_log (what) VALUES (CONCAT('order ', NEW.id));
//
CREATE FUNCTION order_count(c int) RETURNS int READS SQL DATA
  RETURN (SELECT count(*) FROM orders WHERE customer_id = c);
//
CREATE PROCEDURE purge_small(IN below decimal(10,2))
  BEGIN DELETE FROM orders WHERE total < below; END;
//
DELIMITER ;
CREATE EVENT nightly ON SCHEDULE EVERY 1 DAY STARTS '2030-01-01 03:00:00' DISABLE
  DO CALL purge_small(1);
INSERT INTO customers (name, email) VALUES ('Åsa', 'asa@example.org'), ('Bo', 'bo@example.org'),
  ('Cy', 'cy@example.org');
INSERT INTO orders (customer_id, total, note, raw) VALUES (1, 250.00, 'first', x'00ff10'),
  (2, 99.99, NULL, NULL), (1, 5.00, 'tab\tand\nnewline', x'');
DELETE FROM orders WHERE id = 2;
INSERT INTO notes VALUES ('same', 1), ('same', 1), (NULL, 2);
ALTER TABLE customers AUTO_INCREMENT = 40;
"""


def same_dump(after: str, before: str) -> None:
    diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), "original",
                                     "restored", lineterm="", n=1))
    assert not diff, "mysqldump differs:\n" + "\n".join(diff[:60])


def next_id(mydb: Any, table: str) -> str:
    return mydb.sql(f"SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE "
                    f"TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{table}'").strip()


def test_dropped_database_comes_back_with_identical_mysqldump(mydb: Any, cli: Any) -> None:
    """DROP DATABASE undone: tables, rows, AUTO_INCREMENT, charsets, views, routines,
    triggers and events; mysqldump identical; the next id is the one it would have been."""
    mydb.sql(SCHEMA)
    before = mydb.dump()
    ids = {t: next_id(mydb, t) for t in ("customers", "orders", "audit_log")}
    backup = cli.capture(mydb.uri())
    mydb.server.sql(f"DROP DATABASE {mydb.name}")
    result = cli.restore(backup)
    assert "re-created" in " ".join(result["reports"][0]["notes"])
    same_dump(mydb.dump(), before)
    assert {t: next_id(mydb, t) for t in ids} == ids
    score = cli.score(backup)
    assert score["content"] == 1.0 and score["metadata"] == 1.0, score["differences"]


def test_damaged_tables_and_objects_come_back_without_firing_triggers(
    mydb: Any, cli: Any
) -> None:
    """Rows deleted and changed, a view and a procedure dropped, a table added: restore puts
    it all back; the restore's inserts do not fire the audit trigger."""
    mydb.sql(SCHEMA)
    before = mydb.dump()
    backup = cli.capture(mydb.uri(driver="mysql+pymysql"))
    mydb.sql("""
        DELETE FROM orders WHERE id = 1; UPDATE customers SET name = 'x';
        INSERT INTO orders (customer_id, total) VALUES (3, 7);
        DROP VIEW aa_biggest; DROP PROCEDURE purge_small; CREATE TABLE junk (x int);
        DELETE FROM notes LIMIT 1;
    """)
    cli.restore(backup)
    same_dump(mydb.dump(), before)
    assert cli.restore(backup, "--dry-run")["reports"][0]["items"] == [] or all(
        i["outcome"] == "unchanged" for i in cli.restore(backup, "--dry-run")["reports"][0]["items"])


def test_mariadb_url_captures_and_diff_sees_a_change(mydb: Any, store: Any) -> None:
    """A mariadb+pymysql URL (SQLAlchemy's own dialect name) captures like mysql+pymysql."""
    mydb.sql(SCHEMA)
    backup = preimage.capture([mydb.uri()], store=store)
    snap = backup.snapshots[0]
    kinds = {i.kind for i in snap.items}
    assert {"table", "view", "trigger", "procedure", "function", "event", "database"} <= kinds
    assert snap.uncaptured == []
    mydb.sql("UPDATE customers SET email = 'new@example.org' WHERE id = 3")
    assert not preimage.diff(backup.id, store=store)[0].empty


def test_uncaptured_mariadb_objects_are_recorded(mydb: Any, store: Any) -> None:
    """A MariaDB sequence and a system-versioned table's history are listed as uncaptured."""
    mydb.sql("CREATE SEQUENCE ticket_seq START WITH 10;"
             "CREATE TABLE prices (id int PRIMARY KEY, p int) WITH SYSTEM VERSIONING;")
    snap = preimage.capture([mydb.uri()], store=store).snapshots[0]
    assert {(u.kind, u.name) for u in snap.uncaptured} >= {
        ("sequence", "ticket_seq"), ("row history", "prices")}
    total, _ = preimage.score(preimage.capture([mydb.uri()], store=store).id, store=store)
    assert total.overall.score < 1.0


def test_interrupted_restore_names_what_was_done_and_a_rerun_finishes(
    mydb: Any, cli: Any, store: Any
) -> None:
    """MySQL commits DDL, so a restore that fails half-way says which steps stay done (never
    "nothing was changed"), and running it again finishes."""
    mydb.sql(SCHEMA)
    before = mydb.dump()
    backup = preimage.capture([mydb.uri()], store=store)
    mydb.server.sql(f"DROP DATABASE {mydb.name}")
    user = f"'{mydb.server.user}'@'127.0.0.1'"
    mydb.server.admin(f"REVOKE CREATE ROUTINE ON *.* FROM {user}")
    try:
        with pytest.raises(RestoreError) as info:
            preimage.restore(backup.id, store=store)
    finally:
        mydb.server.admin(f"GRANT CREATE ROUTINE ON *.* TO {user}")
    message = str(info.value)
    assert "nothing was changed" not in message
    assert "stay done" in message and "create table" in message and "run the same" in message
    preimage.restore(backup.id, store=store)
    same_dump(mydb.dump(), before)


def test_chinook_sample_round_trips(my_samples: Any, mariadb_server: Any, cli: Any,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Chinook, loaded from its published MySQL script: a DELETE … WHERE undone from a table
    backup, then DROP DATABASE undone; mysqldump identical both times."""
    monkeypatch.setenv("MYSQL_PWD", mariadb_server.password)
    name = my_samples("chinook")
    uri = mariadb_server.uri(name)
    before = mariadb_server.dump(name)
    backup = cli.capture(uri + "?tables=InvoiceLine")
    mariadb_server.sql("DELETE FROM InvoiceLine WHERE UnitPrice > 0.99", name)
    cli.restore(backup)
    same_dump(mariadb_server.dump(name), before)
    backup = cli.capture(uri)
    mariadb_server.sql(f"DROP DATABASE {name}")
    cli.restore(backup)
    same_dump(mariadb_server.dump(name), before)
