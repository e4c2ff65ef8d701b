"""Undo one SQL call on SQLite: rows by primary key and column, nothing else written."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import preimage
from preimage import Store
from preimage.engine.undo import capture_after


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT);
        CREATE TABLE log (line TEXT);
        CREATE TABLE audit (what TEXT);
        CREATE TRIGGER customers_audit AFTER INSERT ON customers
            BEGIN INSERT INTO audit VALUES ('new ' || NEW.id); END;
    """)
    con.executemany("INSERT INTO customers VALUES (?, ?, ?)",
                    [(i, f"name{i}", f"c{i}@example.org") for i in range(1, 11)])
    con.executemany("INSERT INTO log VALUES (?)", [("a",), ("b",), ("a",)])
    con.commit()
    con.close()
    return path


@pytest.fixture
def store(tmp_path: Path) -> Store:
    st = Store(tmp_path / "home")
    yield st  # type: ignore[misc]
    st.close()


def sql(db: Path, text: str) -> None:
    con = sqlite3.connect(db)
    con.executescript(text)
    con.commit()
    con.close()


def rows(db: Path, table: str = "customers") -> list[tuple[object, ...]]:
    con = sqlite3.connect(db)
    try:
        return con.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
    finally:
        con.close()


def protected(store: Store, db: Path, text: str) -> str:
    uri = f"sqlite:///{db}"
    pre = preimage.capture([uri], store=store, kind="layer", session="s",
                           tool_call={"tool": "Bash", "input": {"command": text}})
    sql(db, text)
    capture_after(pre.id, store=store)
    return pre.id


def test_rows_reverted_by_key_and_column_later_work_kept(db: Path, store: Store) -> None:
    """A bad UPDATE and DELETE are reverted row by row; rows inserted, deleted or changed
    in other columns since are kept; a row changed since in the same column is a conflict."""
    pre = protected(store, db, "UPDATE customers SET name = 'X' WHERE id <= 3; "
                               "DELETE FROM customers WHERE id = 5; "
                               "DELETE FROM log WHERE line = 'a';")
    sql(db, "INSERT INTO customers VALUES (100, 'new', 'n@example.org');"
            "UPDATE customers SET email = 'two@example.org' WHERE id = 2;"
            "UPDATE customers SET name = 'person' WHERE id = 3;"
            "DELETE FROM customers WHERE id = 7;"
            "INSERT INTO log VALUES ('c');")
    result = preimage.undo(pre, store=store)
    assert result.ok and result.conflicts == 1, result.to_dict()
    got = {r[0]: r for r in rows(db)}
    assert got[1] == (1, "name1", "c1@example.org")
    assert got[2] == (2, "name2", "two@example.org")       # column merge
    assert got[3] == (3, "person", "c3@example.org")       # conflict left alone
    assert got[5] == (5, "name5", "c5@example.org")        # deleted by the call: back
    assert 7 not in got and got[100] == (100, "new", "n@example.org")
    assert sorted(rows(db, "log")) == [("a",), ("a",), ("b",), ("c",)]
    # the later insert fired the trigger; putting customer 5 back did not, and it is there
    seeded = [(f"new {i}",) for i in range(1, 11)]
    assert rows(db, "audit") == [*seeded, ("new 100",)]
    sql(db, "INSERT INTO customers VALUES (101, 'more', NULL)")
    assert rows(db, "audit") == [*seeded, ("new 100",), ("new 101",)]
    written = sorted(i.key for r in result.reports for i in r.changes)
    assert all("|row=" in k for k in written) and len(written) == 5, written
    (conflict,) = result.plans[0].conflicts
    assert conflict.conflicts[0].path == "values.name"
    assert (conflict.conflicts[0].theirs, conflict.conflicts[0].live) == ("X", "person")


def test_undo_of_a_call_alone_scores_one(db: Path, store: Store) -> None:
    """With no later writer, undo brings the database back exactly."""
    pre = protected(store, db, "UPDATE customers SET email = NULL; DELETE FROM log;"
                               "INSERT INTO customers VALUES (50, 'x', 'y');")
    assert preimage.undo(pre, store=store).ok
    total, _ = preimage.score(pre, store=store)
    assert total.restorable.score == 1.0, total.differences[:5]


def test_a_dropped_table_comes_back_whole(db: Path, store: Store) -> None:
    """DROP TABLE: the table item and every row are reverted together."""
    pre = protected(store, db, "DROP TABLE customers;")
    sql(db, "INSERT INTO log VALUES ('later');")
    result = preimage.undo(pre, store=store)
    assert result.ok
    assert len(rows(db)) == 10 and ("later",) in rows(db, "log")


def test_rows_of_a_table_whose_name_looks_like_a_row_key_do_not_fire_its_trigger(
    tmp_path: Path, store: Store
) -> None:
    """Each row step names its table: a table called ``odd|row=1`` (what a row key's text
    holds) still has its trigger dropped while its rows go back, and made again after."""
    path = tmp_path / "odd.db"
    sql(path, """
        CREATE TABLE "odd|row=1" (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE audit (what TEXT);
        CREATE TRIGGER odd_audit AFTER INSERT ON "odd|row=1"
            BEGIN INSERT INTO audit VALUES ('new ' || NEW.id); END;
        INSERT INTO "odd|row=1" VALUES (1, 'a'), (2, 'b'), (3, 'c');
        DELETE FROM audit;
    """)
    pre = protected(store, path, 'DELETE FROM "odd|row=1" WHERE id = 2')
    result = preimage.undo(pre, store=store)
    assert result.ok, result.to_dict()
    assert rows(path, '"odd|row=1"') == [(1, "a"), (2, "b"), (3, "c")]
    assert rows(path, "audit") == []  # putting row 2 back did not fire the trigger
    sql(path, "INSERT INTO \"odd|row=1\" VALUES (4, 'd')")
    assert rows(path, "audit") == [("new 4",)]
