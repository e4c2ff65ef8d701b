"""The schema oracle for MariaDB (mariadb-dump --no-data --routines --triggers --events beside
the capture) over a generated schema with one object of every kind MariaDB has."""

from __future__ import annotations

from typing import Any

import pytest

import preimage
from preimage.connectors.sql import oracle as my_oracle

pytestmark = pytest.mark.mariadb

EVERY_KIND = """
CREATE TABLE parts (
  id int NOT NULL AUTO_INCREMENT,
  sku varchar(40) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  title varchar(200) NOT NULL DEFAULT '' COMMENT 'shown to buyers',
  price decimal(10,2) NOT NULL CHECK (price >= 0),
  weight_g int UNSIGNED ZEROFILL,
  doubled decimal(11,2) AS (price * 2) PERSISTENT,
  hidden_note text INVISIBLE,
  tags set('new','sale','old') NOT NULL DEFAULT 'new',
  state enum('draft','live') NOT NULL,
  doc longtext CHECK (json_valid(doc)),
  made date,
  PRIMARY KEY (id),
  UNIQUE KEY sku (sku),
  KEY title_prefix (title(20)),
  FULLTEXT KEY title_words (title),
  CONSTRAINT price_sane CHECK (price < 1000000)
) ENGINE=InnoDB AUTO_INCREMENT=500 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci
  ROW_FORMAT=DYNAMIC STATS_PERSISTENT=1 COMMENT='catalogue';
CREATE TABLE orders (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  part_id int NOT NULL,
  placed date NOT NULL,
  CONSTRAINT orders_part FOREIGN KEY (part_id) REFERENCES parts (id) ON UPDATE CASCADE
) ENGINE=InnoDB;
CREATE TABLE log (id int NOT NULL, at date NOT NULL, msg varchar(100),
  PRIMARY KEY (id, at)) ENGINE=InnoDB
  PARTITION BY RANGE (year(at)) (
    PARTITION p2023 VALUES LESS THAN (2024),
    PARTITION p2024 VALUES LESS THAN (2025) COMMENT 'this year',
    PARTITION pmax VALUES LESS THAN MAXVALUE);
CREATE TABLE by_list (id int NOT NULL, region int NOT NULL) ENGINE=InnoDB
  PARTITION BY LIST (region) (PARTITION north VALUES IN (1, 2), PARTITION south VALUES IN (3));
CREATE TABLE hashed (id int NOT NULL PRIMARY KEY) ENGINE=InnoDB PARTITION BY HASH (id) PARTITIONS 3;
CREATE TABLE scratch (k varchar(10) PRIMARY KEY, v text) ENGINE=MyISAM CHECKSUM=1
  DELAY_KEY_WRITE=1 PACK_KEYS=1;
CREATE TABLE memo (k int PRIMARY KEY) ENGINE=MEMORY MAX_ROWS=1000;
CREATE TABLE aria_t (k int PRIMARY KEY) ENGINE=Aria PAGE_CHECKSUM=1 TRANSACTIONAL=1;
CREATE VIEW live_parts AS SELECT id, title FROM parts WHERE state = 'live';
CREATE SQL SECURITY INVOKER VIEW part_totals AS SELECT part_id, count(*) AS n FROM orders
  GROUP BY part_id WITH ROLLUP;
CREATE VIEW checked AS SELECT id, title FROM parts WHERE price > 0 WITH CASCADED CHECK OPTION;
DELIMITER //
CREATE TRIGGER parts_before BEFORE INSERT ON parts FOR EACH ROW SET NEW.title = TRIM(NEW.title);
//
CREATE TRIGGER parts_after AFTER UPDATE ON parts FOR EACH ROW
  INSERT INTO log VALUES (NEW.id, CURRENT_DATE, 'changed');
//
CREATE TRIGGER parts_after_too AFTER UPDATE ON parts FOR EACH ROW FOLLOWS parts_after
  SET @touched = NEW.id;
//
CREATE FUNCTION part_count() RETURNS int DETERMINISTIC READS SQL DATA
  COMMENT 'how many' RETURN (SELECT count(*) FROM parts);
//
CREATE PROCEDURE reprice(IN pct int) MODIFIES SQL DATA SQL SECURITY INVOKER
  BEGIN UPDATE parts SET price = price * (100 + pct) / 100; END;
//
DELIMITER ;
CREATE EVENT nightly ON SCHEDULE EVERY 1 DAY STARTS '2031-01-01 03:00:00'
  ON COMPLETION PRESERVE DISABLE COMMENT 'cleanup' DO DELETE FROM log WHERE at < '2000-01-01';
CREATE EVENT once ON SCHEDULE AT '2032-06-01 00:00:00' ON COMPLETION PRESERVE DISABLE
  DO CALL reprice(1);
INSERT INTO parts (sku, title, price, state, doc, made) VALUES
  ('A-1', 'anvil', 99.50, 'live', '{"a": 1}', '2024-02-03'), ('B-2', 'bolt', 0.10, 'draft', NULL, NULL);
INSERT INTO orders (part_id, placed) VALUES (500, '2024-05-05'), (501, '2024-05-06');
INSERT INTO log VALUES (1, '2023-03-03', 'old'), (2, '2024-04-04', 'new'), (3, '2030-01-01', 'far');
INSERT INTO by_list VALUES (1, 1), (2, 3);
INSERT INTO hashed VALUES (1), (2), (3), (4);
INSERT INTO scratch VALUES ('k', 'v');
"""


def _oracle_lines(report: Any) -> list[str]:
    return [f"{d.item}: {d.original or d.restored}" for d in report.differences
            if d.reason == "uncaptured (oracle)"]


def test_every_kind_comes_back_and_the_oracle_agrees(mydb: Any, cli: Any, store: Any) -> None:
    """Partitions (range, list, hash), table options of several engines, generated and
    invisible columns, views with check options, ordered triggers, routines and events come
    back after DROP DATABASE: mariadb-dump identical, restorable 1.0, oracle identical."""
    mydb.sql(EVERY_KIND)
    before = mydb.dump()
    backup = preimage.capture([mydb.uri()], store=store)
    record = backup.snapshots[0].oracle
    assert record is not None and record.ran, record
    mydb.server.sql(f"DROP DATABASE {mydb.name}")
    cli.restore(backup.id)
    after = mydb.dump()
    assert after == before
    report, _ = preimage.score(backup.id, store=store)
    assert report.value() == 1.0, [d for d in report.differences if d.fidelity != "server"][:10]
    assert any("schema identical" in n for n in report.oracles), report.oracles


def test_oracle_names_a_kind_the_capture_does_not_bring_back(mydb: Any, cli: Any,
                                                             store: Any) -> None:
    """A MariaDB sequence (recorded as uncaptured) is gone after DROP DATABASE and a restore;
    the oracle names the dump line that says so."""
    mydb.sql("CREATE TABLE t (id int PRIMARY KEY); CREATE SEQUENCE ticket START WITH 100;")
    backup = preimage.capture([mydb.uri()], store=store)
    mydb.server.sql(f"DROP DATABASE {mydb.name}")
    cli.restore(backup.id)
    report, _ = preimage.score(backup.id, store=store)
    assert report.value() is not None and report.value() < 1.0
    lines = _oracle_lines(report)
    assert any("CREATE SEQUENCE `ticket`" in line for line in lines), lines


def test_a_change_after_the_capture_is_named_by_the_oracle(mydb: Any, store: Any) -> None:
    """A partition dropped after the capture (nothing restored yet) shows as the dump's
    partition lines, on top of the connector's own difference."""
    mydb.sql(EVERY_KIND)
    backup = preimage.capture([mydb.uri()], store=store)
    mydb.sql("ALTER TABLE log DROP PARTITION p2023")
    report, _ = preimage.score(backup.id, store=store)
    lines = _oracle_lines(report)
    assert any("p2023" in line for line in lines), lines


def test_score_says_when_the_oracle_did_not_run(mydb: Any, store: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a dump tool the capture succeeds and the score says the oracle did not run."""
    mydb.sql("CREATE TABLE t (id int PRIMARY KEY)")
    monkeypatch.setattr(my_oracle, "find_dump_tool", lambda mariadb: None)
    backup = preimage.capture([mydb.uri()], store=store)
    report, _ = preimage.score(backup.id, store=store)
    assert report.value() == 1.0
    assert any("did not run" in n for n in report.oracles), report.oracles


def test_normalize_drops_the_dump_s_own_lines() -> None:
    """Host, version and completion comments and blank lines go; lines are named by the
    section they are in."""
    text = "\n".join([
        "-- MariaDB dump 10.19  Distrib 10.11.6-MariaDB, for debian-linux-gnu (x86_64)",
        "--", "-- Host: 127.0.0.1    Database: shop",
        "-- ------------------------------------------------------", "-- Server version\t10.11.6",
        "", "/*!40101 SET NAMES utf8mb4 */;", "--", "-- Table structure for table `t`", "--",
        "CREATE TABLE `t` (", "  `id` int(11) NOT NULL", ") ENGINE=InnoDB;",
        "-- Dump completed",
    ])
    assert my_oracle.normalize(text) == [
        "(preamble)\t/*!40101 SET NAMES utf8mb4 */;",
        "Table structure for table `t`\tCREATE TABLE `t` (",
        "Table structure for table `t`\t  `id` int(11) NOT NULL",
        "Table structure for table `t`\t) ENGINE=InnoDB;",
    ]


GRANTS = """
CREATE TABLE customers (id int PRIMARY KEY, email varchar(100));
CREATE TABLE orders (id int PRIMARY KEY, total int);
CREATE PROCEDURE purge_neg() MODIFIES SQL DATA DELETE FROM orders WHERE total < 0;
CREATE USER IF NOT EXISTS '{user}'@'%';
GRANT SELECT, INSERT ON `{db}`.* TO '{user}'@'%';
GRANT UPDATE ON `{db}`.orders TO '{user}'@'%' WITH GRANT OPTION;
GRANT SELECT (email), UPDATE (email) ON `{db}`.customers TO '{user}'@'%';
GRANT EXECUTE ON PROCEDURE `{db}`.purge_neg TO '{user}'@'%';
"""


def _grants(mydb: Any, user: str) -> list[str]:
    return sorted(mydb.sql(f"SHOW GRANTS FOR '{user}'@'%'").splitlines())


@pytest.mark.parametrize("how", ["revoked", "dropped database"])
def test_per_user_grants_and_column_privileges_come_back(how: str, mydb: Any, cli: Any,
                                                         store: Any) -> None:
    """Database, table, column and routine privileges of a user (and its GRANT OPTION) come
    back as SHOW GRANTS printed them, and a grant made since is revoked."""
    user = f"u_{mydb.name}"
    mydb.sql(GRANTS.format(user=user, db=mydb.name))
    before = _grants(mydb, user)
    backup = preimage.capture([mydb.uri()], store=store)
    grants = [i for i in backup.snapshots[0].items if i.kind == "grant" and user in i.grantee]
    assert {g.on for g in grants} == {"database", "table orders", "column customers.email",
                                      "procedure purge_neg"}
    if how == "revoked":
        mydb.sql(f"""
            REVOKE SELECT ON `{mydb.name}`.* FROM '{user}'@'%';
            REVOKE GRANT OPTION ON `{mydb.name}`.orders FROM '{user}'@'%';
            REVOKE UPDATE (email) ON `{mydb.name}`.customers FROM '{user}'@'%';
            REVOKE EXECUTE ON PROCEDURE `{mydb.name}`.purge_neg FROM '{user}'@'%';
            GRANT DELETE ON `{mydb.name}`.customers TO '{user}'@'%';
        """)
        damaged, _ = preimage.score(backup.id, store=store)
        assert damaged.value() is not None and damaged.value() < 1.0
        assert any(user in d.item for d in damaged.differences if d.fidelity == "metadata")
    else:
        mydb.server.sql(f"DROP DATABASE {mydb.name}")
    cli.restore(backup.id)
    assert _grants(mydb, user) == before
    report, _ = preimage.score(backup.id, store=store)
    assert report.value() == 1.0, [d for d in report.differences if d.fidelity != "server"]


def test_merge_puts_back_revoked_grants_and_keeps_new_ones(mydb: Any, store: Any) -> None:
    """merge grants what was revoked and leaves a grant made since in place."""
    user = f"u_{mydb.name}"
    mydb.sql(GRANTS.format(user=user, db=mydb.name))
    backup = preimage.capture([mydb.uri()], store=store)
    mydb.sql(f"REVOKE INSERT ON `{mydb.name}`.* FROM '{user}'@'%';"
             f"GRANT DELETE ON `{mydb.name}`.orders TO '{user}'@'%';")
    preimage.restore(backup.id, store=store, conflict="merge")
    grants = "\n".join(_grants(mydb, user))
    assert "INSERT ON" in grants and "DELETE" in grants
