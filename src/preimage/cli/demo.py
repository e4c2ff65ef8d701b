"""``preimage demo``: the main job end to end on the embedded default.

It builds a scratch project (a key with mode 0600, a setuid helper, a
symlink, a hardlink pair, an empty directory, an xattr where the filesystem
allows, nanosecond mtimes) and, when the SQL connector is installed, a SQLite
database; captures both; destroys them as an agent would (``rm -rf`` and
``DROP TABLE`` + fake rows); restores by backup ID; and scores the result.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import preimage
from preimage.interface.errors import NoSuchConnectorError
from preimage.interface.registry import get_connector


def build_project(root: Path) -> None:
    """Seed a small project tree with the metadata ordinary backups lose."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hello')\n")
    (root / ".ssh").mkdir(mode=0o700)
    key = root / ".ssh" / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n")
    key.chmod(0o600)
    tool = root / "bin-helper"
    tool.write_text("#!/bin/sh\necho helper\n")
    tool.chmod(0o4755)
    (root / "current").symlink_to("src/app.py")
    (root / "notes.txt").write_text("remember the milk\n")
    os.link(root / "notes.txt", root / "notes-hardlink.txt")
    (root / "cache" / "empty").mkdir(parents=True)
    with contextlib.suppress(OSError):
        os.setxattr(root / "notes.txt", "user.origin", b"demo")
    os.utime(root / "src" / "app.py", ns=(1_700_000_000_123_456_789, 1_700_000_000_987_654_321))


def build_database(path: Path) -> None:
    """A SQLite database with rows and an autoincrement counter at 1042."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(
            """
            CREATE TABLE customers (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,
                                    email TEXT UNIQUE);
            INSERT INTO customers (id, name, email) VALUES
                (1, 'Ada', 'ada@example.org'), (2, 'Grace', 'grace@example.org'),
                (1042, 'Edsger', 'edsger@example.org');
            """
        )
        db.commit()


def run_demo(workdir: str | None, say: Callable[..., None] | None) -> dict[str, Any]:
    """Run the demo; return the scores as a dict."""
    quiet = say is None
    say = say or (lambda *a, **k: None)
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="preimage-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    project = base / "project"
    if project.exists():
        shutil.rmtree(project)
    build_project(project)
    targets = [f"file://{project}"]
    db_path = base / "shop.db"
    try:
        get_connector("sqlite")
        with_sql = True
    except NoSuchConnectorError:
        with_sql = False
    if with_sql:
        db_path.unlink(missing_ok=True)
        build_database(db_path)
        targets.append(f"sqlite:///{db_path}")
    say(f"[bold]1. capture[/] {', '.join(targets)}")
    backup = preimage.capture(targets, label="demo")
    say(f"   backup id: [bold green]{backup.id}[/]")
    say("[bold]2. destroy[/] as an agent would: rm -rf project"
        + ("; DROP TABLE customers; re-create it with fake rows" if with_sql else ""))
    shutil.rmtree(project)
    if with_sql:
        with contextlib.closing(sqlite3.connect(db_path)) as db:
            db.executescript(
                "DROP TABLE customers; CREATE TABLE customers (id INTEGER PRIMARY KEY "
                "AUTOINCREMENT, name TEXT, email TEXT); INSERT INTO customers (name) "
                "VALUES ('fake 1'), ('fake 2');"
            )
            db.commit()
    before, _ = preimage.score(backup.id)
    say(f"   similarity after the damage: restorable {before.restorable.text()}")
    say(f"[bold]3. restore[/] preimage restore {backup.id}")
    result = preimage.restore(backup.id)
    say(f"   undo backup (state just before the restore): {result.undo_backup_id}")
    say("[bold]4. score[/] live state vs backup")
    total, per_target = preimage.score(backup.id)
    if not quiet:
        from preimage.cli.output import print_score_table

        print_score_table(total, per_target)
    return {
        "backup": backup.id,
        "undo_backup": result.undo_backup_id,
        "workdir": str(base),
        "targets": targets,
        "damaged_restorable": before.restorable.score,
        "content": total.classes["content"].score,
        "metadata": total.classes["metadata"].score,
        "server": total.classes["server"].score,
        "restorable": total.restorable.score,
    }
