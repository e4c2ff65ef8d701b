"""SQL is read statement by statement to find what each one changes."""

from __future__ import annotations

import pytest

from preimage.layer.reading.sql_text import analyze_sql


@pytest.mark.parametrize(("sql", "kind", "detail"), [
    ("SELECT * FROM t", "read", None),
    ("EXPLAIN SELECT 1", "read", None),
    ("EXPLAIN ANALYZE DELETE FROM t", "tables", ["public.t"]),
    ("EXPLAIN (COSTS OFF) DELETE FROM t", "read", None),
    ("CREATE USER bob", "read", None),
    ("DROP TABLE a, s.b", "tables", ["public.a", "s.b"]),
    ("TRUNCATE orders RESTART IDENTITY", "tables", ["public.orders"]),
    ("DELETE FROM t", "tables", ["public.t"]),
    ("DELETE FROM t x WHERE x.id > 5 AND x.v = 'a;b'", "rows", "id > 5 AND v = 'a;b'"),
    ("DELETE FROM t USING u WHERE t.id = u.id", "tables", ["public.t"]),
    ("UPDATE s.c SET n = 1 WHERE id = $1", "tables", ["s.c"]),
    ("DROP SCHEMA app", "schema", "app"),
    ("DROP SCHEMA app CASCADE", "database", None),
    ("DROP VIEW app.v", "schema", "app"),
    ("GRANT ALL ON SCHEMA app TO public", "schema", "app"),
    ("CREATE SCHEMA app", "schema", "app"),
    ("CREATE VIEW v AS SELECT 1", "schema", "public"),
    ("CREATE INDEX i ON s.t (a)", "tables", ["s.t"]),
    ("CREATE UNIQUE INDEX k ON t (key, fruit text_pattern_ops)", "tables", ["public.t"]),
    ("CREATE INDEX k ON t (lower(fruit) COLLATE \"C\" text_pattern_ops)", "tables", ["public.t"]),
    ("ALTER TABLE t RENAME TO u", "tables", ["public.t", "public.u"]),
    ("SELECT * INTO t3 FROM t", "tables", ["public.t3"]),
    ("CREATE TEMP TABLE tmp (id int)", "read", None),
    ("WITH d AS (DELETE FROM orders RETURNING *) SELECT count(*) FROM d", "tables",
     ["public.orders"]),
    ("SELECT purge_all()", "database", None),
    ("SELECT lower(name), now(), random() FROM t", "read", None),
    ("DROP DATABASE gis_old", "other-database", "gis_old"),
    ("CREATE TABLE n (id int)", "tables", ["public.n"]),
    ("SET search_path TO app; DROP TABLE t", "tables", ["app.t"]),
    ("SELECT setval('s', 1)", "database", None),
    # drops the temporary objects and what depends on them (a function reading a temp sequence)
    ("DISCARD TEMP", "database", None),
    ("DISCARD ALL", "database", None),
    ("DISCARD PLANS", "read", None),
    # the column default takes the identity sequence's next value: the table with its sequences
    ("UPDATE itest1 SET a = DEFAULT WHERE a = 2", "tables", ["public.itest1"]),
    ("UPDATE t SET (a, b) = (DEFAULT, 3) WHERE a = 2", "tables", ["public.t"]),
    ("UPDATE t SET b = \"default\" WHERE a = 2", "rows", "a = 2"),
    # PostgreSQL folds unquoted names: the table is serialtest1, "Quoted" keeps its case
    ("INSERT INTO serialTest1 VALUES ('foo')", "tables", ["public.serialtest1"]),
    ("DROP TABLE App.\"MixedCase\"", "tables", ["app.MixedCase"]),
    ("SET search_path TO App; DROP TABLE T", "tables", ["app.t"]),
    ("SET search_path TO \"App\"; DROP TABLE T", "tables", ["App.t"]),
    # a MERGE's WHEN … THEN UPDATE writes the MERGE's target (it names no table of its own)
    ("MERGE INTO parted_trig USING (SELECT 1) AS ss ON true "
     "WHEN MATCHED AND a = 2 THEN UPDATE SET a = 1", "tables", ["public.parted_trig"]),
])
def test_statement_effects(sql: str, kind: str, detail: object) -> None:
    """Each statement maps to the narrowest state it can change."""
    effect = analyze_sql(sql)[-1]
    assert effect.kind == kind
    if isinstance(detail, list):
        assert effect.tables == detail
    elif kind == "rows":
        assert effect.where == detail
    elif kind == "schema":
        assert effect.schema == detail
    elif kind == "other-database":
        assert effect.database == detail


def test_semicolons_inside_strings_and_dollar_quotes_do_not_split() -> None:
    """Statement splitting respects quotes, comments and dollar-quoted bodies."""
    effects = analyze_sql("INSERT INTO t VALUES ('a;b'); -- x; y\nDO $$ BEGIN; END $$; SELECT 1")
    assert [e.kind for e in effects] == ["tables", "database", "read"]
