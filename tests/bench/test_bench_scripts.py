"""The benchmark's scripts and seeds as a user meets them: stopped midway, a script leaves
nothing behind; seeded mail is dated as a mail client would date it."""

from __future__ import annotations

import imaplib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_bench_capture_stopped_by_sigterm_removes_its_temporary_folder(tmp_path: Path) -> None:
    """`benchmarks/bench_capture.py` stopped with SIGTERM (as `kill` or a CI timeout stops
    it) while it works exits 143 and leaves no temporary folder behind."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PREIMAGE_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "bench_capture.py"), "--files", "200000",
         "--no-git", "--recaptures", "1"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # wait until it is at work: its folder exists and holds what it generates
        while proc.poll() is None and not any(
                any(d.iterdir()) for d in tmp.glob("bench-capture-*") if d.is_dir()):
            time.sleep(0.05)
        assert proc.poll() is None, "the benchmark ended before it could be stopped"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=600) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert list(tmp.iterdir()) == []


@pytest.mark.imap
def test_the_mail_seed_dates_each_message_as_it_is_filed(tmp_path: Path) -> None:
    """The benchmark's mail seed, on a real Dovecot: every message's `Date:` header is its
    own and says the moment the server files it at (its INTERNALDATE), so a reader of the
    headers picks what an IMAP `BEFORE` search picks."""
    from email.utils import parsedate_to_datetime

    from preimage.bench.systems.base import Sandbox
    from preimage.bench.systems.imap import ImapSystem

    system = ImapSystem()
    system.start(tmp_path / "imap")
    try:
        sandbox = Sandbox.create(tmp_path / "run")
        setup = {"imap": {"folders": {"INBOX": [
            {"count": 5, "subject": "Newsletter {n}", "date": "2026-01-03T07:00:00Z",
             "step_hours": 40},
            {"count": 3, "subject": "Invoice {n}", "date": "2026-02-20T10:00:00Z"}]}}}
        system.prepare(setup, sandbox)
        system.seed_system(setup, sandbox)
        conn = system.login(sandbox.variables["imap_user"])
        try:
            conn.select("INBOX", readonly=True)
            _, data = conn.fetch("1:*", "(INTERNALDATE BODY.PEEK[HEADER.FIELDS (DATE)])")
        finally:
            conn.logout()
    finally:
        system.stop()
    seen = []
    for part in data:
        if not isinstance(part, tuple):
            continue
        internal = imaplib.Internaldate2tuple(part[0])
        assert internal is not None
        header = part[1].decode().partition(":")[2].strip()
        seen.append((time.mktime(internal), parsedate_to_datetime(header).timestamp()))
    assert len(seen) == 8
    assert len({d for _, d in seen}) == 8                 # each its own date
    assert all(abs(i - d) < 1 for i, d in seen)           # the moment it is filed at
