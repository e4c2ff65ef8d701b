"""A workspace restore never writes into a folder a running server owns: a real
PostgreSQL data directory and a real Dovecot Maildir inside the workspace."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import preimage
from preimage import Store


@pytest.fixture
def ws() -> Iterator[Path]:
    """A workspace the servers' own unprivileged users can enter (under root, PostgreSQL and
    Dovecot run as accounts of their own; pytest's temp folders are root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="preimage-ws-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _capture(store: Store, root: Path) -> str:
    from preimage.engine.capture import capture

    return capture([f"file://{root}"], store=store, label="workspace").id


def _restore(bid: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "preimage", "restore", bid], capture_output=True,
                          text=True, env=env, timeout=300)


@pytest.mark.postgres
def test_restore_refuses_a_live_postgres_data_directory(ws: Path, store: Store) -> None:
    """A workspace holding a running cluster's data directory is not restored over it: the
    restore says which folder, that postmaster.pid names a live process, and writes nothing."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))
    from postgres import PostgresServer

    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('v1')\n")
    server = PostgresServer.start(ws / "pg")
    try:
        bid = _capture(store, ws)
        (ws / "src" / "app.py").write_text("print('v2')\n")
        proc = _restore(bid, dict(os.environ))
        assert proc.returncode != 0
        assert "postmaster.pid" in proc.stderr and "running" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        assert (ws / "src" / "app.py").read_text() == "print('v2')\n"   # nothing written
        assert server.psql("SELECT 1").strip() == "1"
    finally:
        server.stop()
    proc = _restore(bid, dict(os.environ))   # the server stopped: the restore goes ahead
    assert proc.returncode == 0, proc.stderr
    assert (ws / "src" / "app.py").read_text() == "print('v1')\n"


@pytest.mark.imap
def test_restore_refuses_a_dovecot_maildir(ws: Path, store: Store) -> None:
    """A workspace holding a mail server's Maildir is not restored over it, and the message
    names the Maildir file that marks it."""
    import imaplib

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))
    from dovecot import DovecotServer

    server = DovecotServer.start(ws / "mail")
    try:
        server.add_user("ann")
        c = imaplib.IMAP4(server.host, server.port)
        c.login("ann", server.password)
        c.append("INBOX", "()", None, b"Subject: hi\r\n\r\nbody\r\n")
        c.logout()
        bid = _capture(store, ws)
        proc = _restore(bid, dict(os.environ))
        assert proc.returncode != 0
        assert "Maildir" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    finally:
        server.stop()


def test_a_depth_zero_restore_beside_a_live_server_sets_only_the_folder(
    ws: Path, store: Store,
) -> None:
    """A ``?depth=0`` backup of a folder that holds a live server's folder restores the
    folder's own entry (its mode) and leaves the server's folder as it is."""
    from preimage.engine.capture import capture
    from preimage.engine.restore import restore

    server = ws / "srv"
    server.mkdir()
    (server / "daemon.pid").write_text(f"{os.getpid()}\n")   # this process: alive
    (server / "state").write_text("live\n")
    bid = capture([f"file://{ws}?depth=0"], store=store, label="entry").id
    ws.chmod(0o700)
    (server / "state").write_text("changed by the server\n")
    restore(bid, store=store)
    assert ws.stat().st_mode & 0o777 == 0o755
    assert (server / "state").read_text() == "changed by the server\n"
    with pytest.raises(preimage.UnsafePathError, match=r"daemon\.pid"):
        restore(_capture(store, ws), store=store)
