"""SQLite through the SQLAlchemy connector, with real files, through the CLI."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import preimage
from preimage import InvalidTargetError

SCHEMA = """
    CREATE TABLE users (id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT NOT NULL UNIQUE,
                        name TEXT, avatar BLOB, karma REAL DEFAULT 0,
                        CHECK (length(email) > 3));
    CREATE TABLE posts (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id),
                        body TEXT, created TEXT DEFAULT CURRENT_TIMESTAMP);
    CREATE TABLE tags (post_id INTEGER, tag TEXT);
    CREATE INDEX posts_user ON posts (user_id);
    CREATE VIEW user_posts AS SELECT u.email, p.body FROM users u JOIN posts p
        ON p.user_id = u.id;
    CREATE TRIGGER posts_tag AFTER INSERT ON posts BEGIN
        INSERT INTO tags VALUES (NEW.id, 'new'); END;
"""


def _dump(path: Path) -> list[str]:
    con = sqlite3.connect(path)
    try:
        lines = list(con.iterdump())
        lines.append(f"user_version={con.execute('PRAGMA user_version').fetchone()[0]}")
        return sorted(lines)
    finally:
        con.close()


def _seed(path: Path) -> None:
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    con.executemany(
        "INSERT INTO users (id, email, name, avatar, karma) VALUES (?, ?, ?, ?, ?)",
        [(i, f"u{i}@example.org", f"user {i}", bytes([i % 256, 0, 255]), i / 4)
         for i in range(1, 301)],
    )
    con.executemany("INSERT INTO posts (user_id, body, created) VALUES (?, ?, ?)",
                    [(1 + i % 300, f"post {i}\nline two", f"2024-01-{1 + i % 28:02d}")
                     for i in range(1, 501)])
    con.execute("INSERT INTO users (id, email) VALUES (1041, 'last@example.org')")
    con.execute("DELETE FROM users WHERE id = 1041")
    con.execute("INSERT INTO tags VALUES (1, 'dup'), (1, 'dup')")
    con.execute("PRAGMA user_version = 12")
    con.commit()
    con.close()


def test_sqlite_file_deleted_and_recreated_comes_back(tmp_path: Path, cli: Any) -> None:
    """S-sqlite-file: the file is deleted and re-created from a schema; the restore brings
    back every row, the exact DDL, the AUTOINCREMENT counter and user_version."""
    path = tmp_path / "app.db"
    _seed(path)
    before = _dump(path)
    backup = cli.capture(f"sqlite:///{path}")
    path.unlink()
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT, name TEXT);
        CREATE TABLE posts (id INTEGER PRIMARY KEY, user_id INTEGER, body TEXT);
        INSERT INTO users (email) VALUES ('seed@example.org');
    """)
    con.close()
    cli.restore(backup)
    score = cli.score(backup)
    assert score["content"] == 1.0, score["differences"]
    assert score["metadata"] == 1.0, score["differences"]
    assert _dump(path) == before
    con = sqlite3.connect(path)
    # AUTOINCREMENT resumes after the highest id ever used (1041), not after max(id).
    assert con.execute("INSERT INTO users (email) VALUES ('n@x.org') RETURNING id").fetchone() \
        == (1042,)
    con.close()


def test_sqlite_file_removed_entirely_is_recreated(tmp_path: Path, cli: Any) -> None:
    """A deleted database file is created again by the restore."""
    path = tmp_path / "gone.db"
    _seed(path)
    before = _dump(path)
    backup = cli.capture(f"sqlite:///{path}")
    path.unlink()
    cli.restore(backup)
    assert _dump(path) == before


def test_sqlite_table_scope_leaves_other_tables_alone(tmp_path: Path, store: Any) -> None:
    """?tables= restores only the named tables; other tables keep their changes."""
    path = tmp_path / "app.db"
    _seed(path)
    backup = preimage.capture([f"sqlite:///{path}?tables=posts"], store=store)
    con = sqlite3.connect(path)
    con.executescript("DELETE FROM posts; UPDATE users SET name = 'kept';")
    con.close()
    preimage.restore(backup.id, store=store)
    con = sqlite3.connect(path)
    assert con.execute("SELECT count(*) FROM posts").fetchone() == (500,)
    assert con.execute("SELECT DISTINCT name FROM users").fetchall() == [("kept",)]
    con.close()


def test_sqlite_missing_file_captures_absent_and_restore_deletes_it(
    tmp_path: Path, store: Any
) -> None:
    """A database file that did not exist at capture is removed again by the restore,
    and capturing does not create it."""
    path = tmp_path / "later.db"
    backup = preimage.capture([f"sqlite:///{path}"], store=store)
    assert not path.exists()
    _seed(path)
    preimage.restore(backup.id, store=store)
    assert not path.exists()


def test_sqlite_relative_path_is_stored_absolute(
    tmp_path: Path, store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sqlite:///rel.db is recorded with its absolute path, so a restore from elsewhere works."""
    monkeypatch.chdir(tmp_path)
    _seed(tmp_path / "rel.db")
    backup = preimage.capture(["sqlite:///rel.db"], store=store)
    assert backup.snapshots[0].target == f"sqlite:///{tmp_path / 'rel.db'}"


def test_sqlite_memory_database_is_refused(store: Any) -> None:
    """An in-memory database is not a target: it says to name a file."""
    with pytest.raises(InvalidTargetError, match="name a database file"):
        preimage.capture(["sqlite:///:memory:"], store=store)


def test_sqlite_row_scope_is_widened_to_the_table(tmp_path: Path, store: Any) -> None:
    """A row-scope target on SQLite (what the layer plans for ``DELETE … WHERE``) captures
    the whole table — more than the rows, never less — and the restore brings them back."""
    path = tmp_path / "app.db"
    _seed(path)
    before = _dump(path)
    backup = preimage.capture([f"sqlite:///{path}?table=posts&where=user_id%20%3C%2010"],
                              store=store)
    snap = backup.snapshots[0]
    assert snap.scope == "tables" and [t.name for t in snap.items if t.kind == "table"] == ["posts"]
    assert any("widened" in n for n in snap.notes)
    con = sqlite3.connect(path)
    con.execute("DELETE FROM posts WHERE user_id < 10")
    con.commit()
    con.close()
    preimage.restore(backup.id, store=store)
    assert _dump(path) == before
    total, _ = preimage.score(backup.id, store=store)
    assert total.overall.score == 1.0
