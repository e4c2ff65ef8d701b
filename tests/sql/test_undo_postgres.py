"""Undo one SQL call on a real PostgreSQL: rows by key and column, sequences by value,
never a whole table rewritten to revert a few rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

import preimage
from preimage.engine.undo import capture_after

pytestmark = pytest.mark.postgres


def protected(store: Any, db: Any, uri: str, statement: str) -> str:
    pre = preimage.capture([uri], store=store, kind="layer", session="s",
                           tool_call={"tool": "mcp__pg__execute_sql", "input": {"query": statement}})
    db.sql(statement)
    capture_after(pre.id, store=store)
    return pre.id


def seed(db: Any) -> None:
    db.sql("""
        CREATE TABLE customers (id serial PRIMARY KEY, first_name text NOT NULL,
                                last_name text NOT NULL, email text UNIQUE);
        INSERT INTO customers (first_name, last_name, email)
            SELECT 'First' || g, 'Last' || g, 'c' || g || '@example.org'
            FROM generate_series(1, 200) g;
        CREATE TABLE tags (label text, n int);
        INSERT INTO tags VALUES ('a', 1), ('b', 2), ('a', 1);
        CREATE TABLE audit (id int PRIMARY KEY, what text);
        CREATE FUNCTION log_change() RETURNS trigger LANGUAGE plpgsql AS
          $$ BEGIN INSERT INTO audit VALUES ((SELECT coalesce(max(id), 0) + 1 FROM audit),
                                             TG_OP); RETURN NEW; END $$;
        CREATE TRIGGER customers_log AFTER UPDATE ON customers
            FOR EACH ROW EXECUTE FUNCTION log_change();
    """)


def test_bad_update_reverted_row_by_row_later_inserts_and_edits_kept(
        db: Any, store: Any) -> None:
    """UPDATE without WHERE, then a person inserts rows and edits other columns: the
    undo reverts last_name on every row, keeps the inserts and the e-mail edits, reports
    the row whose last_name the person set again, and rewrites no other row."""
    seed(db)
    uri = db.uri("tables=public.customers,public.tags")
    pre = protected(store, db, uri, "UPDATE customers SET last_name = 'Role'")
    db.sql("""
        INSERT INTO customers (first_name, last_name, email) VALUES ('New', 'Person', 'n@x.org');
        UPDATE customers SET email = 'seven@example.org' WHERE id = 7;
        UPDATE customers SET last_name = 'Fixed' WHERE id = 9;
        DELETE FROM tags WHERE label = 'b';
    """)
    untouched_ctid = db.sql("SELECT ctid FROM customers WHERE id = 201").strip()
    result = preimage.undo(pre, store=store)
    assert result.ok and result.conflicts == 1, result.to_dict()["plans"][0]["summary"]
    got = db.sql("SELECT id, last_name, email FROM customers WHERE id IN (1, 7, 9, 201) "
                 "ORDER BY id").split("\n")
    assert [g.strip() for g in got if g.strip()] == [
        "1|Last1|c1@example.org", "7|Last7|seven@example.org", "9|Fixed|c9@example.org",
        "201|Person|n@x.org"]
    assert db.sql("SELECT ctid FROM customers WHERE id = 201").strip() == untouched_ctid
    assert db.sql("SELECT count(*) FROM tags").strip() == "2"   # the later delete is kept
    assert db.sql("SELECT count(*) FROM audit").strip() == "202"  # 200 + 2 later updates: the undo fired none
    (conflict,) = result.plans[0].conflicts
    assert conflict.conflicts[0].path == "values.last_name"


def test_sequence_moved_since_is_a_conflict(db: Any, store: Any) -> None:
    """An INSERT by the call advanced the id sequence and a later INSERT moved it again:
    the call's row goes, the later row stays, and the sequence is not set back (that
    would hand out an id twice) — it is reported."""
    seed(db)
    uri = db.uri("tables=public.customers")
    pre = protected(store, db, uri, "INSERT INTO customers (first_name, last_name) "
                                    "VALUES ('Bot', 'Agent')")
    db.sql("INSERT INTO customers (first_name, last_name) VALUES ('Real', 'Person')")
    result = preimage.undo(pre, store=store)
    rows = db.sql("SELECT id, first_name FROM customers WHERE id > 200 ORDER BY id").split()
    assert rows == ["202|Real"]
    assert any(p.label.startswith("sequence") for p in result.plans[0].conflicts)
    assert db.sql("SELECT nextval('customers_id_seq')").strip() == "203"


def test_undo_alone_is_exact(db: Any, store: Any) -> None:
    """With no later writer, the undo of DELETE + UPDATE brings every row back as it was;
    at most the storage order differs (re-inserted rows go where PostgreSQL puts them —
    into space a vacuum freed, or at the end — since an undo never rewrites a whole table),
    which the table's row digest records."""
    seed(db)
    state = "SELECT * FROM customers ORDER BY id; SELECT * FROM tags ORDER BY label"
    before = db.sql(state)
    uri = db.uri("tables=public.customers,public.tags")
    pre = protected(store, db, uri, "DELETE FROM customers WHERE id % 3 = 0; "
                                    "UPDATE tags SET n = 9; DELETE FROM tags WHERE label='b'")
    assert preimage.undo(pre, store=store).ok
    assert db.sql(state) == before
    total, _ = preimage.score(pre, store=store)
    lost = [d for d in total.differences if d.fidelity in ("content", "metadata")]
    assert {(d.item, d.path) for d in lost} <= {("table public/customers", "rows_digest")}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`preimage ARGS` in its own process (PREIMAGE_HOME and the password from the env)."""
    return subprocess.run([sys.executable, "-m", "preimage", *args], capture_output=True,
                          text=True, env=dict(os.environ), timeout=300)


def test_cli_plan_then_take_backup(db: Any, store: Any) -> None:
    """`preimage undo --dry-run` plans a bad UPDATE's revert row by row and writes nothing;
    the plain undo leaves the row a person set again (exit 1, conflict named with both
    versions); `--take-backup` then writes that row as before the call too, and the row
    inserted since stays."""
    seed(db)
    uri = db.uri("tables=public.customers")
    pre = protected(store, db, uri, "UPDATE customers SET last_name = 'Role' WHERE id <= 3")
    db.sql("UPDATE customers SET last_name = 'Fixed' WHERE id = 2; "
           "INSERT INTO customers (first_name, last_name) VALUES ('New', 'Person')")
    before = db.sql("SELECT id, last_name FROM customers WHERE id <= 3 ORDER BY id")
    plan = _cli("undo", pre, "--dry-run", "--json")
    assert plan.returncode == 1, plan.stderr  # a conflict would be left
    planned = json.loads(plan.stdout)
    assert planned["dry_run"] and planned["conflicts"] == 1
    verdicts = [i["verdict"] for i in planned["plans"][0]["items"]]
    assert (verdicts.count("revert"), verdicts.count("conflict")) == (2, 1), verdicts
    assert db.sql("SELECT id, last_name FROM customers WHERE id <= 3 ORDER BY id") == before

    left = _cli("undo", pre)
    assert left.returncode == 1
    assert "'Role'" in left.stdout and "'Fixed'" in left.stdout  # both versions named
    assert db.sql("SELECT last_name FROM customers WHERE id IN (1, 2, 3) ORDER BY id"
                  ).split() == ["Last1", "Fixed", "Last3"]
    forced = _cli("undo", pre, "--take-backup", "--json")
    assert forced.returncode == 0, forced.stderr + forced.stdout
    assert db.sql("SELECT last_name FROM customers WHERE id IN (1, 2, 3) ORDER BY id"
                  ).split() == ["Last1", "Last2", "Last3"]
    assert db.sql("SELECT last_name FROM customers WHERE first_name = 'New'").strip() == "Person"


def refused(pre: str, store: Any) -> str:
    """The one-line error of an undo that changed nothing."""
    with pytest.raises(preimage.PreimageError) as raised:
        preimage.undo(pre, store=store)
    message = str(raised.value)
    assert "nothing was changed" in message and "\n" not in message
    return message


def notes(result: Any) -> list[str]:
    """Every note of an undo: its own and its restores'."""
    return [*result.notes, *(n for r in result.reports for n in r.notes)]


def test_undo_of_a_dropped_column_adds_it_back_and_keeps_later_rows(
        db: Any, store: Any, pg_dump: Any) -> None:
    """``ALTER TABLE … DROP COLUMN`` (the column held an index and a NOT NULL with a
    default), then a person's insert into the same table: undo adds the column back in
    place, writes its values into every row it held and keeps the later row (the
    column's default in it) — the schema pg_dump prints is the one before the call."""
    db.sql("""
        CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL,
                                notes text NOT NULL DEFAULT 'none');
        CREATE INDEX customers_notes ON customers (notes);
        COMMENT ON COLUMN customers.notes IS 'free text';
        INSERT INTO customers (name, notes)
            SELECT 'name ' || g, 'kept ' || g FROM generate_series(1, 50) g;
    """)
    schema_before = pg_dump(db, "--schema-only")
    uri = db.uri("tables=public.customers")
    pre = protected(store, db, uri, "ALTER TABLE customers DROP COLUMN notes")
    db.sql("INSERT INTO customers (name) VALUES ('later')")
    report = preimage.undo(pre, store=store)
    assert report.ok, report
    assert db.sql("SELECT notes FROM customers WHERE id = 7").strip() == "kept 7"
    assert db.sql("SELECT count(*) FROM customers WHERE notes LIKE 'kept %'").strip() == "50"
    assert db.sql("SELECT name || '/' || notes FROM customers WHERE id = 51").strip() == \
        "later/none"
    assert pg_dump(db, "--schema-only") == schema_before
    assert not any("come last" in n for n in notes(report))


def test_undo_of_a_middle_column_says_it_now_comes_last(db: Any, store: Any) -> None:
    """A column dropped from the middle comes back last (PostgreSQL cannot add one in
    between): every value is back, and the report says so and names the restore that
    keeps the order."""
    db.sql("""
        CREATE TABLE products (id int PRIMARY KEY, legacy_sku text, name text);
        INSERT INTO products SELECT g, 'sku-' || g, 'p' || g FROM generate_series(1, 20) g;
    """)
    pre = protected(store, db, db.uri("tables=public.products"),
                    "ALTER TABLE products DROP COLUMN legacy_sku")
    report = preimage.undo(pre, store=store)
    assert db.sql("SELECT string_agg(legacy_sku, ',' ORDER BY id) FROM products WHERE id < 4"
                  ).strip() == "sku-1,sku-2,sku-3"
    assert db.sql("SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM "
                  "information_schema.columns WHERE table_name = 'products'").strip() == \
        "id,name,legacy_sku"
    assert report.ok
    assert any("legacy_sku" in n and "come last" in n for n in notes(report))


def test_undo_of_a_changed_type_alters_it_back_and_keeps_later_rows(
        db: Any, store: Any, pg_dump: Any) -> None:
    """A column's type narrowed (numeric → int rounds every value, and its default goes
    with it), then a person's insert: undo alters the type back in place, writes each
    row's value as it was and keeps the later row — the schema pg_dump prints is the one
    before the call."""
    db.sql("""
        CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL,
                                score numeric DEFAULT 0.5);
        CREATE INDEX customers_score ON customers (score);
        INSERT INTO customers (name, score)
            SELECT 'name ' || g, g + 0.25 FROM generate_series(1, 50) g;
    """)
    schema_before = pg_dump(db, "--schema-only")
    uri = db.uri("tables=public.customers")
    pre = protected(store, db, uri, "ALTER TABLE customers ALTER COLUMN score TYPE int; "
                    "ALTER TABLE customers ALTER COLUMN score SET DEFAULT 1")
    db.sql("INSERT INTO customers (name, score) VALUES ('later', 9)")
    report = preimage.undo(pre, store=store)
    assert report.ok, report
    assert db.sql("SELECT score FROM customers WHERE id = 7").strip() == "7.25"
    assert db.sql("SELECT name || '/' || score FROM customers WHERE id = 51").strip() == \
        "later/9"
    assert pg_dump(db, "--schema-only") == schema_before


def test_undo_of_a_dropped_sequence_column_is_refused_before_it_writes(
        db: Any, store: Any) -> None:
    """A dropped ``serial`` column took its sequence with it; then a person's insert.
    Undo would have to re-create the table from the backup and lose that row, so it
    refuses before writing, says why and names the restore that brings the table back;
    the restore does."""
    db.sql("""
        CREATE TABLE tickets (id int PRIMARY KEY, seq serial, title text);
        INSERT INTO tickets (id, title) SELECT g, 't' || g FROM generate_series(1, 30) g;
    """)
    pre = protected(store, db, db.uri("tables=public.tickets"),
                    "ALTER TABLE tickets DROP COLUMN seq")
    db.sql("INSERT INTO tickets (id, title) VALUES (31, 'later')")
    message = refused(pre, store)
    assert "columns of public.tickets" in message and "preimage restore" in message
    assert db.sql("SELECT title FROM tickets WHERE id = 31").strip() == "later"
    assert db.sql("SELECT count(*) FROM information_schema.columns WHERE table_name = "
                  "'tickets' AND column_name = 'seq'").strip() == "0"
    preimage.restore(pre, store=store)
    assert db.sql("SELECT seq FROM tickets WHERE id = 7").strip() == "7"


def test_undo_of_a_dropped_column_on_pagila_matches_pg_dump(
        sample_db: Any, store: Any, pg_dump: Any) -> None:
    """pagila (a public sample nobody here wrote): ``ALTER TABLE film DROP COLUMN
    fulltext`` (``NOT NULL``, a GIN index over it, a trigger that fills it, a generated
    column after it) on the whole database; a rental is recorded after.  Undo puts the
    column back with every film's value, its ``NOT NULL`` and its index, and keeps the
    rental: pg_dump of the schema equals the original's line for line but for the
    column's place (it comes back last, and the report says so)."""
    db = sample_db("pagila")

    def lines(dump: str) -> list[str]:
        return sorted(line.rstrip(",") for line in dump.splitlines())

    schema_before = pg_dump(db, "--schema-only")
    values = ("SELECT md5(string_agg(film_id || ':' || fulltext::text, ',' ORDER BY film_id)) "
              "FROM film")
    fulltext_before = db.sql(values)
    pre = protected(store, db, db.uri(), "ALTER TABLE film DROP COLUMN fulltext")
    db.sql("INSERT INTO rental (inventory_id, customer_id, staff_id, rental_period) "
           "VALUES (1, 1, 1, '[2026-12-01,2026-12-02)')")
    result = preimage.undo(pre, store=store)
    assert result.ok, result.to_dict()["reports"]
    schema_after = pg_dump(db, "--schema-only")
    assert schema_after != schema_before and lines(schema_after) == lines(schema_before)
    assert db.sql(values) == fulltext_before
    assert any("fulltext" in n and "come last" in n for n in notes(result))
    assert db.sql("SELECT count(*) FROM rental WHERE lower(rental_period) = '2026-12-01'"
                  ).strip() == "1"


def test_undo_of_a_cascading_drop_column_on_pagila_brings_the_views_back(
        sample_db: Any, store: Any, pg_dump: Any) -> None:
    """pagila: ``ALTER TABLE film DROP COLUMN description CASCADE`` also drops the two
    views that list it.  Undo adds the column back with every film's text and makes the
    views again: pg_dump of the schema has every line it had (the column now last)."""
    db = sample_db("pagila")
    schema_before = pg_dump(db, "--schema-only")
    values = ("SELECT md5(string_agg(film_id || ':' || coalesce(description, '-'), ',' "
              "ORDER BY film_id)) FROM film")
    before = db.sql(values)
    pre = protected(store, db, db.uri(), "ALTER TABLE film DROP COLUMN description CASCADE")
    assert db.sql("SELECT count(*) FROM pg_views WHERE viewname = 'film_list'").strip() == "0"
    result = preimage.undo(pre, store=store)
    assert result.ok, result.to_dict()["reports"]
    after = pg_dump(db, "--schema-only")
    assert sorted(x.rstrip(",") for x in after.splitlines()) == sorted(
        x.rstrip(",") for x in schema_before.splitlines())
    assert db.sql(values) == before


def test_undo_of_dropped_columns_brings_back_their_check_unique_and_foreign_key(
        db: Any, store: Any, pg_dump: Any) -> None:
    """Two columns dropped: one under a UNIQUE constraint another table's foreign key
    points at (``CASCADE`` drops the key), one under a CHECK that forbids NULL.  Undo adds
    both back, writes the values before it checks them, and makes the other table's
    foreign key again: the schema pg_dump prints has every line it had."""
    db.sql("""
        CREATE TABLE parents (id int PRIMARY KEY, code text, a int,
                              CONSTRAINT code_u UNIQUE (code),
                              CONSTRAINT a_pos CHECK (a IS NOT NULL AND a > 0));
        CREATE TABLE kids (id int PRIMARY KEY, parent_code text REFERENCES parents (code));
        INSERT INTO parents SELECT g, 'c' || g, g FROM generate_series(1, 20) g;
        INSERT INTO kids SELECT g, 'c' || g FROM generate_series(1, 20) g;
    """)
    before = pg_dump(db, "--schema-only")
    pre = protected(store, db, db.uri("tables=public.parents,public.kids"),
                    "ALTER TABLE parents DROP COLUMN code CASCADE; "
                    "ALTER TABLE parents DROP COLUMN a")
    result = preimage.undo(pre, store=store)
    assert result.ok, result.to_dict()["reports"]
    after = pg_dump(db, "--schema-only")
    assert sorted(x.rstrip(",") for x in after.splitlines()) == sorted(
        x.rstrip(",") for x in before.splitlines())
    assert db.sql("SELECT code || '/' || a FROM parents WHERE id = 7").strip() == "c7/7"


def test_undo_of_a_changed_type_a_later_row_cannot_take_changes_nothing(
        db: Any, store: Any) -> None:
    """int → text, then a person stores a word in the column: the column cannot go back to
    int, so the undo changes nothing and says which row value stopped it and what to do."""
    db.sql("""CREATE TABLE t (id int PRIMARY KEY, n int);
              INSERT INTO t SELECT g, g FROM generate_series(1, 10) g;""")
    pre = protected(store, db, db.uri("tables=public.t"), "ALTER TABLE t ALTER COLUMN n TYPE text")
    db.sql("INSERT INTO t VALUES (11, 'eleven')")
    message = refused(pre, store)
    assert '"eleven"' in message and "restore the backup" in message
    assert db.sql("SELECT data_type FROM information_schema.columns WHERE table_name = 't' "
                  "AND column_name = 'n'").strip() == "text"
    assert db.sql("SELECT n FROM t WHERE id = 11").strip() == "eleven"


def test_undo_a_unique_index_made_since_forbids_changes_nothing_and_says_why(
        db: Any, store: Any) -> None:
    """A de-duplication that deleted every copy, then a unique index over the column: the
    rows cannot come back beside it, so the undo changes nothing and says what to do."""
    db.sql("""CREATE TABLE contacts (id serial PRIMARY KEY, email text NOT NULL);
              INSERT INTO contacts (email) SELECT 'c' || (g % 5) || '@x.org'
                  FROM generate_series(1, 20) g;""")
    pre = protected(store, db, db.uri("tables=public.contacts"),
                    "DELETE FROM contacts a USING contacts b WHERE a.email = b.email "
                    "AND a.id <> b.id")
    db.sql("CREATE UNIQUE INDEX contacts_email ON contacts (email)")
    message = refused(pre, store)
    assert "contacts_email" in message and "unique index made since the call" in message
    assert db.sql("SELECT count(*) FROM contacts").strip() == "0"
