"""Capture and restore time of the IMAP connector for one big folder, beside a plain IMAP fetch-all.

Usage: python benchmarks/bench_imap.py [--messages N] [--body-bytes B] [--json]

Starts a throw-away Dovecot (fixtures/dovecot.py), fills INBOX with N messages
(default 10,000) with mixed flags, keywords and dates, then times in one run:

  fetch-all          a plain client: SELECT, UID FETCH of FLAGS, INTERNALDATE
                     and BODY.PEEK[] of every message (the floor for reading)
  append-all         a plain client: MULTIAPPEND of the same messages with
                     their flags and dates into a new folder (the floor for writing)
  capture (cold)     preimage capture of INBOX into an empty store
  capture (warm)     the same again: unchanged messages are not downloaded
  restore (flags)    after `STORE 1:* +FLAGS (\\Seen)`: set flags back in place
  restore (expunged) after every message was expunged: APPEND all back
  restore (no-op)    the same restore again: nothing to do
  score              preimage score of the restored folder

Each restore includes the capture of the state before it (the undo backup).
Requires Debian's dovecot-imapd (fixtures/setup.d/30-dovecot.sh).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import imapclient

import preimage
from preimage import Store

ROOT = Path(__file__).resolve().parents[1]


def load_dovecot() -> Any:
    spec = importlib.util.spec_from_file_location("_bench_dovecot", ROOT / "fixtures" / "dovecot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["_bench_dovecot"] = module
    spec.loader.exec_module(module)
    return module


def message(i: int, body_bytes: int, when: datetime) -> bytes:
    """Message ``i``, its ``Date:`` header the moment it is filed at (``when``)."""
    head = (
        f"From: Sender {i % 97} <s{i % 97}@example.org>\r\nTo: alice@example.org\r\n"
        f"Subject: Report {i}\r\nDate: {format_datetime(when)}\r\n"
        f"Message-ID: <bench-{i}@example.org>\r\nMIME-Version: 1.0\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n\r\n"
    )
    line = f"line of message {i}: the quick brown fox jumps over the lazy dog\r\n"
    body = (line * (body_bytes // len(line) + 1))[:body_bytes]
    return (head + body + "\r\n").encode()


def seed(client: imapclient.IMAPClient, n: int, body_bytes: int) -> int:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    total = 0
    batch: list[dict[str, Any]] = []
    for i in range(n):
        flags = (["\\Seen"] if i % 3 else []) + (["\\Flagged", "$todo"] if i % 11 == 0 else [])
        when = start + timedelta(minutes=37 * i)
        raw = message(i, body_bytes, when)
        total += len(raw)
        batch.append({"msg": raw, "flags": flags, "date": when})
        if len(batch) == 500:
            client.multiappend("INBOX", batch)
            batch = []
    if batch:
        client.multiappend("INBOX", batch)
    return total


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def fetch_all(server: Any, user: str) -> dict[int, dict[bytes, Any]]:
    c = imapclient.IMAPClient(server.host, port=server.port, ssl=False)
    c.login(user, server.password)
    c.select_folder("INBOX", readonly=True)
    items = ["FLAGS", "INTERNALDATE", "BODY.PEEK[]"]
    got: dict[int, dict[bytes, Any]] = c.fetch(c.search("ALL"), items)
    c.logout()
    return got


def append_all(server: Any, user: str, messages: dict[int, dict[bytes, Any]]) -> None:
    c = imapclient.IMAPClient(server.host, port=server.port, ssl=False)
    c.login(user, server.password)
    c.create_folder("Floor")
    batch: list[dict[str, Any]] = []
    for data in messages.values():
        flags = [f for f in data[b"FLAGS"] if f != b"\\Recent"]
        batch.append({"msg": data[b"BODY[]"], "flags": flags, "date": data[b"INTERNALDATE"]})
        if len(batch) == 100:
            c.multiappend("Floor", batch)
            batch = []
    if batch:
        c.multiappend("Floor", batch)
    c.delete_folder("Floor")
    c.logout()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=10_000)
    ap.add_argument("--body-bytes", type=int, default=2_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    dovecot = load_dovecot()
    rows: list[tuple[str, float, str]] = []
    with dovecot.DovecotServer.start() as server, tempfile.TemporaryDirectory() as tmp:
        user = server.add_user("bench")
        os.environ["PREIMAGE_IMAP_PASSWORD"] = server.password
        c = imapclient.IMAPClient(server.host, port=server.port, ssl=False)
        c.login(user, server.password)
        seconds, total = timed(lambda: seed(c, args.messages, args.body_bytes))
        c.logout()
        n = args.messages
        print(f"seeded {n} messages, {total / 1e6:.1f} MB, in {seconds:.1f}s", file=sys.stderr)
        uri = server.uri(user, "INBOX")
        store = Store(Path(tmp) / "home")

        t, fetched = timed(lambda: fetch_all(server, user))
        assert sum(len(d[b"BODY[]"]) for d in fetched.values()) == total
        rows.append(("plain IMAP fetch-all", t, ""))
        t, _ = timed(lambda: append_all(server, user, fetched))
        rows.append(("plain IMAP append-all (MULTIAPPEND)", t, ""))
        t, backup = timed(lambda: preimage.capture([uri], store=store))
        rows.append(("preimage capture (cold)", t, f"{backup.stored_bytes / 1e6:.1f} MB stored"))
        t, warm = timed(lambda: preimage.capture([uri], store=store))
        rows.append(("preimage capture (warm)", t, f"{warm.stored_bytes / 1e3:.0f} kB new"))

        c = imapclient.IMAPClient(server.host, port=server.port, ssl=False)
        c.login(user, server.password)
        c.select_folder("INBOX")
        c._imap.uid("STORE", "1:*", "+FLAGS.SILENT", "(\\Seen)")
        c.logout()
        t, res = timed(lambda: preimage.restore(backup.id, store=store))
        fixes = len(res.reports[0].changes)
        rows.append(("preimage restore (all marked read)", t, f"{fixes} flag fixes"))

        c = imapclient.IMAPClient(server.host, port=server.port, ssl=False)
        c.login(user, server.password)
        c.select_folder("INBOX")
        c._imap.uid("STORE", "1:*", "+FLAGS.SILENT", "(\\Deleted)")
        c.expunge()
        c.logout()
        t, res = timed(lambda: preimage.restore(backup.id, store=store))
        rows.append(("preimage restore (all expunged)", t, f"{len(res.reports[0].remaps)} appended"))
        t, res = timed(lambda: preimage.restore(backup.id, store=store))
        rows.append(("preimage restore (again, no-op)", t, f"{len(res.reports[0].changes)} changes"))
        t, (score, _) = timed(lambda: preimage.score(backup.id, store=store))
        rows.append((
            "preimage score",
            t,
            f"content {score.classes['content'].score} metadata {score.classes['metadata'].score}",
        ))
        store.close()

    if args.json:
        print(json.dumps({
            "messages": n,
            "megabytes": round(total / 1e6, 2),
            "rows": [{"step": s, "seconds": round(t, 3), "note": note} for s, t, note in rows],
        }, indent=2))
        return
    print(f"{n} messages, {total / 1e6:.1f} MB in one folder (Dovecot, loopback)")
    print(f"{'step':38} {'seconds':>8} {'msg/s':>8}  note")
    for step, t, note in rows:
        print(f"{step:38} {t:8.2f} {n / t:8.0f}  {note}")


if __name__ == "__main__":
    main()
