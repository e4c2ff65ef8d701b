"""IMAP: a real Dovecot, one fresh mail user per scenario run.

The server is the test launcher ``fixtures/dovecot.py``, started once per
benchmark run (or an existing server: ``PREIMAGE_BENCH_IMAP`` =
``imap://host:port`` plus ``PREIMAGE_BENCH_IMAP_USERS`` = a writable
``passwd.d`` directory of a Dovecot passwd-file setup).

``setup.imap.folders`` maps a folder to a list of message groups::

    INBOX:
      - {count: 40, subject: "Invoice {n}", from: "billing@shop.example",
         date: "2026-01-05T08:00:00Z", step_hours: 30,
         flags: ["\\\\Seen"], flags_every: {"\\\\Flagged": 7, "$Important": 5}}

Message ``n`` (numbered across the whole mailbox) gets INTERNALDATE ``date +
(i * step_hours)`` and a ``Date:`` header of that moment, the ``flags`` and each flag of
``flags_every`` whose number divides ``n``, and ``Message-ID: <bench-n@example.org>``.
Variables: ``{imap_uri}`` (``imap://user@host:port``, no password),
``{imap_user}``.  MCP tools (``mcp__email__…``): ``move_messages {folder,
search, to}``, ``delete_messages {folder, search}``, ``store_flags {folder,
uids or search, add, remove}``, ``delete_folder {folder}``, ``append_message
{folder, n, subject, from, flags, date}`` — run with the standard library's
``imaplib`` exactly as an IMAP MCP server (or a mail client) would.
"""

from __future__ import annotations

import imaplib
import os
import re
import secrets
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any, ClassVar

from preimage.bench.systems.base import CallOutcome, Sandbox, System, load_fixture
from preimage.bench.systems.tree import mtime_ns
from preimage.interface.errors import UsageError

_SEARCH_SAFE = re.compile(r"^[A-Za-z0-9 :*,\-\"@._()\\$]*$")


def quote_folder(name: str) -> str:
    """An IMAP quoted string for a folder name."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def make_message(n: int, group: dict[str, Any], when: datetime) -> bytes:
    """Message number ``n`` of a seeding group, RFC 822 with CRLF, dated ``when`` (its
    ``Date:`` header says the moment it is filed at, as a mail client's would)."""
    subject = str(group.get("subject", "Message {n}")).replace("{n}", str(n))
    sender = str(group.get("from", "sender{n}@example.org")).replace("{n}", str(n))
    body = str(group.get("body", "Hello, this is message {n}.\nRegards.")).replace("{n}", str(n))
    lines = [
        f"From: {sender}", "To: alice@example.org", f"Subject: {subject}",
        f"Date: {format_datetime(when)}",
        f"Message-ID: <bench-{n}@example.org>", "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=utf-8", "", *body.split("\n"),
    ]
    return "\r\n".join(lines).encode() + b"\r\n"


class ImapSystem(System):
    """A Dovecot shared by the run; a fresh user per scenario run."""

    name: ClassVar[str] = "imap"
    schemes: ClassVar[tuple[str, ...]] = ("file", "imap")
    files_only: ClassVar[bool] = False

    def __init__(self) -> None:
        self.server: Any = None
        self.host = "127.0.0.1"
        self.port = 143
        self.password = ""
        self.users_dir: Path | None = None
        self._saved: str | None = None

    def start(self, workdir: Path) -> None:
        """Reuse ``$PREIMAGE_BENCH_IMAP`` or start the test launcher's Dovecot."""
        given = os.environ.get("PREIMAGE_BENCH_IMAP")
        if given:
            from urllib.parse import urlsplit

            parts = urlsplit(given)
            self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 143
            self.password = os.environ.get("PREIMAGE_BENCH_IMAP_PASSWORD", "bench-pw")
            self.users_dir = Path(os.environ["PREIMAGE_BENCH_IMAP_USERS"])
        else:
            launcher = load_fixture("dovecot.py")
            self.server = launcher.DovecotServer.start()
            self.host, self.port, self.password = (
                self.server.host, self.server.port, self.server.password)
        self._saved = os.environ.get("PREIMAGE_IMAP_PASSWORD")
        os.environ["PREIMAGE_IMAP_PASSWORD"] = self.password

    def stop(self) -> None:
        """Stop the server the run started; put the environment back."""
        if self._saved is None:
            os.environ.pop("PREIMAGE_IMAP_PASSWORD", None)
        else:
            os.environ["PREIMAGE_IMAP_PASSWORD"] = self._saved
        if self.server is not None:
            self.server.stop()
            self.server = None

    def _add_user(self, name: str) -> None:
        if self.server is not None:
            self.server.add_user(name)
        elif self.users_dir is not None:
            (self.users_dir / name).write_text(f"{name}:{{PLAIN}}{self.password}\n")

    def login(self, user: str) -> imaplib.IMAP4:
        """A logged-in ``imaplib`` connection for ``user``."""
        conn = imaplib.IMAP4(self.host, self.port, timeout=60)
        conn.login(user, self.password)
        return conn

    def prepare(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """A fresh user name: ``{imap_user}``, ``{imap_uri}``."""
        user = f"bench-{secrets.token_hex(4)}"
        sandbox.variables.update(
            imap_user=user, imap_uri=f"imap://{user}@{self.host}:{self.port}"
        )
        sandbox.env["IMAP_PASSWORD"] = self.password

    def seed_system(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """Create the user and APPEND every folder's messages with flags and dates."""
        spec = setup.get("imap") or {}
        user = sandbox.variables["imap_user"]
        self._add_user(user)
        conn = self.login(user)
        try:
            n = 0
            for folder, groups in (spec.get("folders") or {}).items():
                if folder.upper() != "INBOX":
                    conn.create(quote_folder(folder))
                for group in groups:
                    base = mtime_ns(str(group.get("date", "2026-01-05T08:00:00Z")))
                    step = float(group.get("step_hours", 24))
                    for i in range(int(group.get("count", 1))):
                        n += 1
                        flags = list(group.get("flags", []))
                        for flag, every in (group.get("flags_every") or {}).items():
                            if n % int(every) == 0:
                                flags.append(flag)
                        when = datetime.fromtimestamp(base / 1e9, UTC) + timedelta(hours=i * step)
                        typ, data = conn.append(
                            quote_folder(folder), f"({' '.join(flags)})" if flags else None,
                            imaplib.Time2Internaldate(when), make_message(n, group, when),
                        )
                        if typ != "OK":
                            raise UsageError(f"APPEND to {folder} failed: {data!r}")
            for folder in spec.get("subscribe", []):
                conn.subscribe(quote_folder(folder))
        finally:
            conn.logout()

    def run_mcp(
        self, server: str, tool: str, arguments: dict[str, Any], sandbox: Sandbox
    ) -> CallOutcome:
        """Perform an email MCP tool over IMAP."""
        conn = self.login(sandbox.variables["imap_user"])
        try:
            folder = str(arguments.get("folder", "INBOX"))
            if tool == "delete_folder":
                typ, data = conn.delete(quote_folder(folder))
                return CallOutcome(0 if typ == "OK" else 1, repr(data))
            typ, data = conn.select(quote_folder(folder))
            if typ != "OK":
                return CallOutcome(1, repr(data))
            if tool == "append_message":
                return self._append(conn, folder, arguments)
            search = str(arguments.get("search", "ALL"))
            if not _SEARCH_SAFE.match(search):
                raise UsageError(f"MCP {server}/{tool}: unsupported search {search!r}")
            if tool == "store_flags" and "search" not in arguments:
                return self._store(conn, str(arguments.get("uids", "1:*")), arguments)
            typ, data = conn.uid("SEARCH", search)
            uids = ",".join(data[0].decode().split()) if typ == "OK" and data[0] else ""
            if tool == "search_messages":  # what an agent reads first: the matching UIDs
                return CallOutcome(0 if typ == "OK" else 1, uids)
            if tool == "store_flags":
                return self._store(conn, uids, arguments) if uids else CallOutcome(0, "none")
            if not uids:
                return CallOutcome(0, "no message matched")
            if tool == "move_messages":
                typ, data = conn.uid("MOVE", uids, quote_folder(str(arguments["to"])))
            elif tool == "delete_messages":
                conn.uid("STORE", uids, "+FLAGS.SILENT", "(\\Deleted)")
                typ, data = conn.expunge()
            else:
                return super().run_mcp(server, tool, arguments, sandbox)
            return CallOutcome(0 if typ == "OK" else 1, repr(data))
        finally:
            try:
                conn.logout()
            except imaplib.IMAP4.error:
                pass

    @staticmethod
    def _store(conn: imaplib.IMAP4, uids: str, arguments: dict[str, Any]) -> CallOutcome:
        """``UID STORE`` of the ``add`` flags, then of the ``remove`` ones."""
        for sign, key in (("+", "add"), ("-", "remove")):
            flags = " ".join(arguments.get(key, []))
            if flags:
                typ, data = conn.uid("STORE", uids, f"{sign}FLAGS", f"({flags})")
                if typ != "OK":
                    return CallOutcome(1, repr(data))
        return CallOutcome(0, "stored")

    @staticmethod
    def _append(conn: imaplib.IMAP4, folder: str, arguments: dict[str, Any]) -> CallOutcome:
        """New mail arriving (``n``, ``subject``, ``from``, ``flags``, ``date``), delivered
        as an ``APPEND`` the way a mail client files a message."""
        n = int(arguments.get("n", 1000))
        when = datetime.fromtimestamp(
            mtime_ns(str(arguments.get("date", "2026-03-01T08:00:00Z"))) / 1e9, UTC)
        flags = list(arguments.get("flags", []))
        typ, data = conn.append(quote_folder(folder), f"({' '.join(flags)})" if flags else None,
                                imaplib.Time2Internaldate(when), make_message(n, arguments, when))
        return CallOutcome(0 if typ == "OK" else 1, repr(data))

    def mcp_servers(self, sandbox: Sandbox) -> dict[str, dict[str, Any]]:
        """The email MCP server stands behind the run's mailbox."""
        return {"email": {"kind": "email", "target": sandbox.variables["imap_uri"] + "/"}}


class ImapCopier:
    """Content-only for mail: message bytes out; APPEND back without flags or dates.

    A message whose bytes are already in the folder is not appended again
    (what a careful import does); nothing else of the folder is touched.
    """

    def take(self, target: Any, dest: Path, env: dict[str, str]) -> tuple[Any, int]:
        """Fetch every message of the target's folder (or of every folder)."""
        conn = imaplib.IMAP4(target.host, target.port or 143, timeout=60)
        conn.login(target.username, target.resolve_password() or "")
        copies: dict[str, list[bytes]] = {}
        try:
            folders = [target.path.strip("/")] if target.path.strip("/") else _folders(conn)
            for folder in folders:
                typ, _ = conn.select(quote_folder(folder), readonly=True)
                if typ != "OK":
                    continue
                copies[folder] = _bodies(conn)
        finally:
            conn.logout()
        return copies, sum(len(b) for msgs in copies.values() for b in msgs)

    def put_back(self, target: Any, handle: Any, env: dict[str, str]) -> None:
        """Create missing folders; APPEND messages whose bytes the folder lacks."""
        conn = imaplib.IMAP4(target.host, target.port or 143, timeout=60)
        conn.login(target.username, target.resolve_password() or "")
        try:
            for folder, messages in handle.items():
                if conn.select(quote_folder(folder))[0] != "OK":
                    conn.create(quote_folder(folder))
                    conn.select(quote_folder(folder))
                present = set(_bodies(conn))
                for raw in messages:
                    if raw not in present:
                        conn.append(quote_folder(folder), None, None, raw)
        finally:
            conn.logout()


def _folders(conn: imaplib.IMAP4) -> list[str]:
    typ, data = conn.list()
    out = []
    for line in data if typ == "OK" else []:
        if not isinstance(line, bytes) or b"\\Noselect" in line:
            continue
        name = line.decode().rsplit(' "/" ', 1)[-1].strip().strip('"')
        out.append(name)
    return out


def _bodies(conn: imaplib.IMAP4) -> list[bytes]:
    typ, data = conn.uid("SEARCH", "ALL")
    if typ != "OK" or not data[0]:
        return []
    uids = ",".join(data[0].decode().split())
    typ, got = conn.uid("FETCH", uids, "(BODY.PEEK[])")
    return [part[1] for part in got if isinstance(part, tuple)]
