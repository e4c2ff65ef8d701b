"""MySQL/MariaDB through the SQLAlchemy connector against a real MariaDB server: every
object kind, AUTO_INCREMENT positions, charsets and collations, mysqldump identical after
a restore, and an honest journal when a restore stops half-way (MySQL commits DDL)."""

from __future__ import annotations

import difflib
from typing import Any
from urllib.parse import quote

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


def rows_uri(mydb: Any, table: str, where: str, driver: str = "mariadb+pymysql") -> str:
    return mydb.uri("table=" + table + "&where=" + quote(where), driver=driver)


def test_row_scope_puts_deleted_and_changed_rows_back(mydb: Any, cli: Any) -> None:
    """?table=…&where=… keeps only the rows a statement touches; the restore puts deleted
    rows back with their keys and reverts changed ones, without firing the table's trigger
    (dropped meanwhile and made again), and mysqldump and AUTO_INCREMENT are as before."""
    mydb.sql(SCHEMA + "INSERT INTO orders (customer_id, total, note) VALUES (2, 300, 'x'), "
             "(3, 120.5, 'y\\\\z'), (3, 1, NULL);")
    before = mydb.dump()
    ids = {t: next_id(mydb, t) for t in ("orders", "audit_log")}
    backup = cli.capture(rows_uri(mydb, "orders", "total > 100 OR note IS NULL"))
    mydb.sql("DELETE FROM orders WHERE total > 200; UPDATE orders SET note = 'changed' "
             "WHERE note IS NULL; UPDATE orders SET note = 'outside' WHERE id = 3;")
    result = cli.restore(backup)
    items = result["reports"][0]["items"]
    assert [i["outcome"] for i in items] == ["restored"], items
    assert mydb.sql("SELECT note FROM orders WHERE id = 3").strip() == "outside"  # left alone
    mydb.sql("UPDATE orders SET note = 'tab\tand\nnewline' WHERE id = 3")
    assert mydb.sql("SELECT count(*) FROM audit_log").strip() == "6"  # the trigger did not fire
    same_dump(mydb.dump(), before)
    assert {t: next_id(mydb, t) for t in ids} == ids
    score = cli.score(backup)
    assert score["content"] == 1.0 and score["metadata"] == 1.0, score["differences"]
    assert cli.restore(backup)["reports"][0]["items"][0]["outcome"] == "unchanged"


def test_row_scope_on_a_sample_database(my_samples: Any, mariadb_server: Any, cli: Any,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Chinook: the rows a DELETE … WHERE and an UPDATE … WHERE touch, captured by
    predicate and put back; mysqldump identical, AUTO_INCREMENT positions kept."""
    monkeypatch.setenv("MYSQL_PWD", mariadb_server.password)
    name = my_samples("chinook")
    before = mariadb_server.dump(name)
    where = "UnitPrice > 0.99 AND InvoiceId < 200"
    backup = cli.capture(mariadb_server.uri(name, query="table=InvoiceLine&where=" + quote(where)))
    assert int(mariadb_server.sql(f"SELECT count(*) FROM InvoiceLine WHERE {where}", name)) > 0
    mariadb_server.sql(f"DELETE FROM InvoiceLine WHERE {where}", name)
    cli.restore(backup)
    same_dump(mariadb_server.dump(name), before)
    where = "Country = 'Brazil'"
    backup = cli.capture(mariadb_server.uri(name, query="table=Customer&where=" + quote(where)))
    mariadb_server.sql(f"UPDATE Customer SET Email = CONCAT('x', Email), Fax = NULL WHERE {where}", name)
    cli.restore(backup)
    same_dump(mariadb_server.dump(name), before)


def test_row_scope_merge_dry_run_and_refusals(mydb: Any, cli: Any, store: Any) -> None:
    """merge puts back only missing rows; a dry run writes nothing; a bad predicate and a
    function that acts on the server are one-line refusals; a table without a key is
    captured whole."""
    mydb.sql(SCHEMA)
    backup = preimage.capture([rows_uri(mydb, "customers", "id < 3")], store=store)
    mydb.sql("DELETE FROM customers WHERE id = 1; UPDATE customers SET name = 'z' WHERE id = 2")
    preimage.restore(backup.id, store=store, dry_run=True)
    assert mydb.sql("SELECT count(*) FROM customers").strip() == "2"
    preimage.restore(backup.id, store=store, conflict="merge")
    assert mydb.sql("SELECT name FROM customers ORDER BY id").split() == ["Åsa", "z", "Cy"]
    for where, says in (("nope > 1", "row predicate failed"), ("SLEEP(1) = 0", "acts on"),
                        ("1 = 1; DROP TABLE orders", "not allowed")):
        proc = cli.run("capture", rows_uri(mydb, "customers", where), check=False)
        assert proc.returncode != 0 and says in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    # No primary key: the whole table is captured instead (more than the rows, never less).
    wide = preimage.capture([rows_uri(mydb, "notes", "n = 1")], store=store)
    assert wide.snapshots[0].scope == "tables" and "widened" in wide.snapshots[0].notes[0]
    mydb.sql("DELETE FROM notes WHERE n = 1")
    preimage.restore(wide.id, store=store)
    assert mydb.sql("SELECT count(*) FROM notes").strip() == "3"


TYPES = r"""
CREATE TABLE kinds (
  id int PRIMARY KEY,
  f float, d double, num decimal(30,10), y year, t time(3), dt datetime(6),
  ts timestamp(6) NULL DEFAULT NULL, dd date,
  e enum('a','b','ü'), s set('x','y','z'),
  c char(3) CHARACTER SET latin1, vb varbinary(16), tb tinyblob, lt longtext,
  u varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  g int GENERATED ALWAYS AS (id * 2) VIRTUAL, gs varchar(30) AS (CONCAT(u, '!')) STORED
);
INSERT INTO kinds (id, f, d, num, y, t, dt, ts, dd, e, s, c, vb, tb, lt, u) VALUES
 (1, 0.1, 1e-300, -12345678901234567890.0123456789, 1999, '-838:59:59.000', '0000-00-00 00:00:00',
  '2038-01-19 03:14:07.999999', '1000-01-01', 'ü', 'x,z', 'éa', x'00005c27220a0d1a', x'', 'a\\b\'c"d\ne\rf\0g\Zh',
  '😀 ok'),
 (2, -0.0, 1.7976931348623157e308, 0, 2155, '00:00:00.5', '9999-12-31 23:59:59.999999',
  '1970-01-01 00:00:01', '9999-12-31', '', '', '', NULL, NULL, '', ''),
 (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
"""


# PyMySQL (pure Python) and mysqlclient (the C driver, preimage[mysql-c]) read and load the
# rows through different code; both must give the same bytes back.
DRIVERS = ["mariadb+pymysql", "mariadb+mysqldb"]


@pytest.mark.parametrize("driver", DRIVERS)
def test_every_column_type_goes_back_byte_for_byte(mydb: Any, cli: Any, driver: str) -> None:
    """Floats, decimals, zero and extreme dates, TIME ranges, enum/set, latin1 text,
    binary strings with quote, backslash, NUL and ^Z bytes, emoji, '' against NULL, and
    generated columns: a table capture and a row-scope capture both give back a table
    mysqldump prints as before, through either driver."""
    mydb.sql("SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION';" + TYPES)
    before = mydb.dump()
    backup = cli.capture(mydb.uri("tables=kinds", driver=driver))
    rows = cli.capture(rows_uri(mydb, "kinds", "id <> 2", driver=driver))
    mydb.sql("DROP TABLE kinds")
    cli.restore(backup)
    same_dump(mydb.dump(), before)
    mydb.sql("DELETE FROM kinds WHERE id = 1; UPDATE kinds SET lt = 'x' WHERE id = 3")
    cli.restore(rows)
    same_dump(mydb.dump(), before)
    score = cli.score(backup)
    assert score["content"] == 1.0 and score["metadata"] == 1.0, score["differences"]


def test_one_call_undone_row_by_row(mydb: Any, store: Any) -> None:
    """Undo of one call on MariaDB (rows kept as the server's tuples): the call's UPDATE
    and DELETE are reverted by primary key, a row inserted later is kept, and the
    reverted rows hold their exact bytes (latin1 text, binary with NUL).  Putting the
    deleted order back does not fire the table's audit trigger, which is there after."""
    from preimage.engine.undo import capture_after

    mydb.sql(SCHEMA)
    state = ("SELECT id, HEX(name), email, created FROM customers ORDER BY id; "
             "SELECT id, customer_id, total, HEX(note), HEX(raw) FROM orders ORDER BY id; "
             "SELECT count(*) FROM audit_log; SELECT TRIGGER_NAME, ACTION_STATEMENT FROM "
             "information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()")
    before = mydb.sql(state)
    pre = preimage.capture([mydb.uri()], store=store, kind="layer", session="s",
                           tool_call={"tool": "Bash", "input": {"command": "mariadb …"}})
    mydb.sql("UPDATE customers SET name = 'X'; DELETE FROM orders WHERE id = 1;")
    capture_after(pre.id, store=store)
    mydb.sql("INSERT INTO notes VALUES ('later', 9)")
    result = preimage.undo(pre.id, store=store)
    assert result.ok, result.to_dict()
    assert mydb.sql("SELECT count(*) FROM notes WHERE body = 'later'").strip() == "1"
    assert mydb.sql(state) == before


AWKWARD = r"""
CREATE TABLE awkward (id int PRIMARY KEY, s varchar(40), b varbinary(40), n int) CHARSET=utf8mb4;
INSERT INTO awkward VALUES (1, 'NULL', x'4e554c4c', NULL), (2, '\\N', x'5c4e', 0),
  (3, 'a)\nb', x'290a28', 1), (4, ',\'\t\r', x'2c27090d1a00', -1), (5, '', x'', NULL),
  (6, NULL, NULL, NULL), (7, '(x)', x'28', 7);
INSERT INTO awkward SELECT seq + 7, CONCAT('row ', seq), UNHEX(MD5(seq)), seq FROM seq_1_to_5000;
"""


@pytest.mark.parametrize("driver", DRIVERS)
def test_rows_load_back_when_the_server_refuses_load_data_local(
    mydb: Any, cli: Any, driver: str
) -> None:
    """Values that look like the row format's own marks (the word NULL, backslash-N, a
    closing parenthesis before a newline, commas, quotes, tabs, NUL) come back as they
    were, and so do they when the server has LOAD DATA LOCAL switched off (MySQL 8's
    default): the rows then go back as INSERT statements."""
    mydb.sql(AWKWARD)
    before = mydb.dump()
    backup = cli.capture(mydb.uri("tables=awkward", driver=driver))
    mydb.sql("DROP TABLE awkward")
    cli.restore(backup)
    same_dump(mydb.dump(), before)
    mydb.server.admin("SET GLOBAL local_infile = 0")
    try:
        mydb.sql("DELETE FROM awkward WHERE id > 3")
        cli.restore(backup)
    finally:
        mydb.server.admin("SET GLOBAL local_infile = 1")
    same_dump(mydb.dump(), before)


def test_a_damaged_rows_blob_keeps_none_of_its_rows(
    mydb: Any, store: Any, damage_rows: Any
) -> None:
    """A rows blob damaged half-way fails the restore: the error names the blob's table,
    no rows of it are kept (not the first half either), and it never claims a rollback of
    the steps MySQL committed."""
    mydb.sql(AWKWARD)
    backup = preimage.capture([mydb.uri("tables=awkward")], store=store)
    damage_rows(backup, "awkward")
    mydb.sql("DELETE FROM awkward WHERE id > 100")
    with pytest.raises(preimage.PreimageError) as info:
        preimage.restore(backup.id, store=store)
    assert "awkward" in str(info.value) and "nothing was changed" not in str(info.value)
    assert mydb.sql("SELECT count(*) FROM awkward").strip() == "100"
    mydb.sql("DROP TABLE awkward")
    with pytest.raises(preimage.PreimageError) as info:
        preimage.restore(backup.id, store=store)
    assert "awkward" in str(info.value) and "nothing was changed" not in str(info.value)
    assert mydb.sql("SELECT count(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                    "DATABASE() AND TABLE_NAME = 'awkward'").strip() == "0" or \
        mydb.sql("SELECT count(*) FROM awkward").strip() == "0"


def test_a_url_without_a_driver_round_trips(mydb: Any, cli: Any) -> None:
    """``mariadb://`` (no driver named) captures and restores with the driver installed
    (mysqlclient when there, else PyMySQL), and mysqldump is as before."""
    mydb.sql(SCHEMA)
    before = mydb.dump()
    backup = cli.capture(mydb.uri(driver="mariadb"))
    mydb.server.sql(f"DROP DATABASE {mydb.name}")
    cli.restore(backup)
    same_dump(mydb.dump(), before)


WIDE = r"""
CREATE TABLE wide (
  a tinyint, b smallint unsigned, c mediumint NOT NULL DEFAULT -3, d int(5) zerofill,
  e bigint unsigned NOT NULL DEFAULT 7, f decimal(10,2) DEFAULT 1.50, g float, h double,
  i float(7,3), k date DEFAULT '2020-02-02',
  l datetime(6) DEFAULT current_timestamp(6) ON UPDATE current_timestamp(6),
  m timestamp NULL, n time(3), o year, p char(3) CHARACTER SET latin1 COMMENT 'it''s',
  q varchar(20) COLLATE utf8mb4_bin DEFAULT 'x,y', r tinytext, s text, t mediumtext,
  v binary(4), w varbinary(9), x tinyblob, z mediumblob, aa longblob,
  bb enum('a','b''c',')') DEFAULT 'a', cc set('x','y'), dd json, gg uuid,
  ff int GENERATED ALWAYS AS (a + 1) VIRTUAL,
  id int AUTO_INCREMENT PRIMARY KEY, parent int,
  UNIQUE KEY wide_ca (c, a), KEY (g), KEY wide_q (q(4) DESC), FULLTEXT KEY wide_s (s),
  CONSTRAINT wide_chk CHECK (a > 0 OR a IS NULL),
  CONSTRAINT wide_parent FOREIGN KEY (parent) REFERENCES wide (id) ON DELETE SET NULL
) COMMENT 'many kinds';
INSERT INTO wide (a, c, p, q, dd, gg) VALUES (1, 2, 'abc', 'q', '{"k": [1]}', uuid()),
  (NULL, 5, NULL, NULL, NULL, NULL);
"""


def test_driver_only_capture_matches_sqlalchemys(mydb: Any, store: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A MySQL capture made through the driver alone (no SQLAlchemy start-up) holds the very
    snapshot the SQLAlchemy way gives: every column type, default, key, index, constraint,
    name with a backtick, object and row blob — for the whole database, a table set and a row scope, through
    either driver; and a capture and a restore on that path do not import SQLAlchemy."""
    import subprocess
    import sys

    from preimage.connectors.sql import mysql_direct

    mydb.sql(SCHEMA + "SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION';" + TYPES + WIDE
             + QUOTED_NAMES.format(flag="tinyint"))
    uris = [mydb.uri(driver=d) for d in DRIVERS] + [
        mydb.uri("tables=wide,kinds,missing", driver="mariadb+mysqldb"),
        rows_uri(mydb, "orders", "total > 1", driver="mariadb+mysqldb"),
        rows_uri(mydb, "wide", "id = 1")]

    def snapshots() -> list[Any]:
        return [preimage.capture([u], store=store).snapshots[0].model_dump(exclude={"captured_at"})
                for u in uris]

    direct = snapshots()
    driver_only = mysql_direct.connect_params
    monkeypatch.setattr(mysql_direct, "connect_params", lambda target: None)
    for ours, theirs in zip(direct, snapshots(), strict=True):
        assert ours.keys() == theirs.keys()
        for key in ours:
            if key == "items":
                for a, b in zip(ours[key], theirs[key], strict=True):
                    assert a == b
            assert ours[key] == theirs[key], key
    assert direct[0]["uncaptured"] == [] and len(direct[0]["items"]) > 10
    monkeypatch.setattr(mysql_direct, "connect_params", driver_only)
    before = mydb.dump()

    def light(code: str, arg: str) -> str:
        """``code`` in a new process; what it prints, then whether SQLAlchemy was imported."""
        proc = subprocess.run([sys.executable, "-c", f"import sys, preimage; {code}; "
                               "print('sqlalchemy' in sys.modules)", arg],
                              capture_output=True, text=True, check=True)
        return proc.stdout

    backup, imported = light("print(preimage.capture([sys.argv[1]]).id)",
                             mydb.uri(driver="mariadb+mysqldb")).split()
    assert imported == "False"
    mydb.sql("DROP TABLE wide; DELETE FROM orders; DROP VIEW aa_biggest")
    assert light("preimage.restore(sys.argv[1])", backup).split() == ["False"]
    same_dump(mydb.dump(), before)


def test_row_lines_are_the_bytes_quote_gives(mydb: Any) -> None:
    """The lines a capture stores are byte for byte what ``QUOTE`` of every column gives
    (the format of earlier backups), with numbers and dates quoted without ``QUOTE`` (and
    without ``IFNULL`` where they are ``NOT NULL``)."""
    from preimage.connectors.sql import mysql_direct, mysql_rows
    from preimage.connectors.sql.mysql import quote

    mydb.sql("SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION';" + TYPES + WIDE)
    conn = mysql_direct.Connection(mysql_direct.connect(
        "pymysql", {"host": mydb.server.host, "port": mydb.server.port,
                    "user": mydb.server.user, "password": mydb.server.password,
                    "database": mydb.name, "charset": "utf8mb4"}), "mariadb")
    try:
        known = mysql_rows.table_columns(conn)
        for table in ("kinds", "wide"):
            columns = mysql_rows.tuple_columns(conn, table, known[table])
            assert columns is not None
            plain = mysql_rows.plain_columns(known[table])
            assert set(plain.values()) == {True, False}  # NULL-able ones and NOT NULL ones
            quoted = ", ".join(f"REPLACE(QUOTE(CAST({quote(c)} AS BINARY)), 0x0A, 0x5C6E)"
                               for c in columns)
            reference = f"SELECT CONCAT('(', CONCAT_WS(',', {quoted}), ')') FROM {table}"
            ours = b"".join(mysql_rows.read_lines(
                conn, mysql_rows.select_sql(table, columns, plain=plain)))
            assert ours == b"".join(mysql_rows.read_lines(conn, reference))
            assert ours.count(b"\n") == int(mydb.sql(f"SELECT count(*) FROM {table}"))
    finally:
        conn.close()


QUOTED_NAMES = r"""
CREATE TABLE `pa``rent` (`i``d` int PRIMARY KEY, `sp ace` varchar(10), `fl``ag` {flag},
  UNIQUE KEY `u``k` (`sp ace`));
CREATE TABLE `ch``ild` (id int AUTO_INCREMENT PRIMARY KEY, `pa``rent` int, `a,b` int DEFAULT 5,
  KEY `k``p` (`pa``rent`),
  CONSTRAINT `f``k` FOREIGN KEY (`pa``rent`) REFERENCES `pa``rent` (`i``d`) ON DELETE CASCADE);
INSERT INTO `pa``rent` VALUES (1, 'one', 5), (2, NULL, NULL), (3, 'th`ree', 0);
INSERT INTO `ch``ild` (`pa``rent`, `a,b`) VALUES (1, 10), (1, NULL), (3, 30);
CREATE VIEW `v``w` AS SELECT `i``d` FROM `pa``rent`;
"""


@pytest.mark.parametrize("flag", ["tinyint", "bit(3)"])
def test_names_with_backticks_and_spaces_round_trip(mydb: Any, cli: Any, flag: str) -> None:
    """Tables, columns, keys and constraints whose names hold a backtick, a space or a
    comma come back under their own names after DROP DATABASE — read by the driver alone
    (rows as the server's tuples) and, with a BIT column, the SQLAlchemy way (whose
    MySQL reflection leaves a name's doubled backticks doubled): mysqldump identical."""
    mydb.sql(QUOTED_NAMES.format(flag=flag))
    before = mydb.dump()
    backup = cli.capture(mydb.uri())
    mydb.sql("DELETE FROM `pa``rent` WHERE `i``d` = 3")
    assert "pa`rent" in cli.run("diff", backup, check=False).stdout
    mydb.server.sql(f"DROP DATABASE {mydb.name}")
    cli.restore(backup)
    same_dump(mydb.dump(), before)
    score = cli.score(backup)
    assert score["content"] == 1.0 and score["metadata"] == 1.0, score["differences"]
