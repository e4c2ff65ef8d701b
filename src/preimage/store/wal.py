"""Switching a SQLite database to write-ahead logging while other processes open it too."""

from __future__ import annotations

import sqlite3
import time


def use_wal(db: sqlite3.Connection, *, within: float = 60.0) -> None:
    """Put ``db`` in WAL mode.

    Changing the journal mode does not wait on the busy timeout while another process is
    setting up the same new database: it fails at once with "database is locked" (here,
    in 1 round of 5 of eight processes opening a fresh store together). So it is tried
    again, with a short growing pause, until ``within`` seconds have passed."""
    deadline = time.monotonic() + within
    pause = 0.005
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)
