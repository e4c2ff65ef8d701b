"""A real Dovecot for the email tests, one fresh mailbox per test, and mailbox inspectors.

The session starts Dovecot (``fixtures/dovecot.py``) on a free loopback port;
each test gets a user of its own, so tests never see each other's mail.
Seeding and inspection talk IMAP directly (imapclient), never through the
connector under test.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import itertools
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import imapclient
import pytest

ROOT = Path(__file__).resolve().parents[2]
CliResult = subprocess.CompletedProcess[str]


def load_fixture(name: str) -> ModuleType:
    """Import ``fixtures/<name>.py`` (the fixtures folder is not a package)."""
    modname = f"_preimage_fixture_{name}"
    if modname in sys.modules:
        return sys.modules[modname]
    spec = importlib.util.spec_from_file_location(modname, ROOT / "fixtures" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    spec.loader.exec_module(module)
    return module


dovecot_fixture = load_fixture("dovecot")
PASSWORD = dovecot_fixture.PASSWORD
_users = itertools.count(1)


def _start(**kwargs: Any) -> Any:
    try:
        return dovecot_fixture.DovecotServer.start(**kwargs)
    except dovecot_fixture.DovecotServerError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def dovecot() -> Iterator[Any]:
    """A Dovecot with every extension it ships (UIDPLUS, MULTIAPPEND, MOVE, CONDSTORE, …) and IMAPS."""
    server = _start(tls=True)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def dovecot_minimal() -> Iterator[Any]:
    """A Dovecot that advertises plain IMAP4rev1 only: no UIDPLUS, MULTIAPPEND, MOVE, CONDSTORE."""
    server = _start(capabilities=dovecot_fixture.MINIMAL_CAPABILITIES)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def smtp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A loopback SMTP server (aiosmtpd) delivering to a Maildir the tests read."""
    smtp_fixture = load_fixture("smtp")
    try:
        server = smtp_fixture.SmtpServer.start(tmp_path_factory.mktemp("smtp"))
    except smtp_fixture.SmtpServerError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield server
    server.stop()


# ---------------------------------------------------------------- messages
def make_message(
    n: int,
    *,
    subject: str | None = None,
    body: str | None = None,
    message_id: str | None = "auto",
    extra_bytes: int = 0,
) -> bytes:
    """A small RFC 822 message with CRLF line ends (``message_id=None``: no Message-ID)."""
    lines = [
        f"From: Sender {n} <sender{n}@example.org>",
        "To: Alice <alice@example.org>",
        f"Subject: {subject or f'Message {n}'}",
        f"Date: Mon, {1 + n % 27:02d} Feb 2026 09:{n % 60:02d}:00 +0100",
    ]
    if message_id == "auto":
        lines.append(f"Message-ID: <msg-{n}@example.org>")
    elif message_id is not None:
        lines.append(f"Message-ID: {message_id}")
    lines += ["MIME-Version: 1.0", "Content-Type: text/plain; charset=utf-8", ""]
    text = body or f"Hello, this is message number {n}.\nRegards."
    if extra_bytes:
        line = "0123456789abcdef" * 4 + "\n"
        text += "\n" + line * (extra_bytes // len(line) + 1)
    lines += text.split("\n")
    return "\r\n".join(lines).encode() + b"\r\n"


def date_of(n: int) -> datetime:
    """A distinct INTERNALDATE for message ``n`` (not 'now', so a lost date shows)."""
    return datetime(2026, 1, 1, 8, 0, tzinfo=UTC) + timedelta(days=n % 60, minutes=n)


# ---------------------------------------------------------------- accounts
@dataclass
class Account:
    """One test's mailbox on a running server."""

    server: Any
    user: str

    def uri(self, folder: str = "", **query: str) -> str:
        """Target URI of the account, a folder or messages."""
        return str(self.server.uri(self.user, folder, **query))

    def client(self) -> imapclient.IMAPClient:
        """A logged-in imapclient connection (close it with .logout())."""
        c = imapclient.IMAPClient(self.server.host, port=self.server.port, ssl=False, timeout=60)
        c.login(self.user, PASSWORD)
        return c

    @property
    def maildir(self) -> Path:
        """The user's Maildir on disk."""
        return Path(self.server.maildir(self.user))

    def seed(self, folders: dict[str, list[tuple[bytes, list[str], datetime]]]) -> None:
        """Create ``folders`` and APPEND their messages with flags and dates."""
        c = self.client()
        try:
            existing = {name for _f, _d, name in c.list_folders()}
            for folder, messages in folders.items():
                if folder not in existing:
                    c.create_folder(folder)
                for raw, flags, when in messages:
                    c.append(folder, raw, flags=flags, msg_time=when)
        finally:
            c.logout()

    def state(self) -> dict[str, list[tuple[Any, ...]]]:
        """Per folder, every message as (Message-ID, sha256, flags, INTERNALDATE), sorted.

        Read with BODY.PEEK[] on an EXAMINEd folder, so inspecting changes nothing.
        """
        c = self.client()
        c.normalise_times = False
        out: dict[str, list[tuple[Any, ...]]] = {}
        try:
            for flags, _d, name in c.list_folders():
                if b"\\Noselect" in flags:
                    continue
                c.select_folder(name, readonly=True)
                uids = c.search("ALL")
                got = c.fetch(uids, ["FLAGS", "INTERNALDATE", "BODY.PEEK[]"]) if uids else {}
                rows = []
                for data in got.values():
                    raw = data[b"BODY[]"]
                    mid = next((ln for ln in raw.split(b"\r\n") if ln.lower().startswith(b"message-id:")), b"")
                    flags_ = tuple(sorted(f.decode() for f in data[b"FLAGS"] if f != b"\\Recent"))
                    when = data[b"INTERNALDATE"].astimezone(UTC).isoformat()
                    rows.append((mid.decode(), hashlib.sha256(raw).hexdigest(), flags_, when))
                out[name] = sorted(rows)
        finally:
            c.logout()
        return out

    def counts(self) -> dict[str, int]:
        """Messages per folder."""
        return {name: len(rows) for name, rows in self.state().items()}

    def maildir_files(self) -> dict[str, tuple[str, int]]:
        """Every message file of the Maildir (name incl. flag suffix) → (sha256, mtime)."""
        out = {}
        for path in sorted(self.maildir.rglob("*")):
            if not path.is_file() or path.parent.name not in ("cur", "new"):
                continue
            out[str(path.relative_to(self.maildir))] = (
                hashlib.sha256(path.read_bytes()).hexdigest(),
                path.stat().st_mtime_ns,
            )
        return out


def new_account(server: Any) -> Account:
    """A fresh user on ``server`` (its Maildir is made on first login)."""
    user = server.add_user(f"user{next(_users)}-{secrets.token_hex(3)}")
    return Account(server, user)


@pytest.fixture
def account(dovecot: Any) -> Account:
    """A fresh, empty mailbox on the full-featured server."""
    return new_account(dovecot)


@pytest.fixture
def minimal_account(dovecot_minimal: Any) -> Account:
    """A fresh, empty mailbox on the server without UIDPLUS / MULTIAPPEND / MOVE / CONDSTORE."""
    return new_account(dovecot_minimal)


@pytest.fixture(autouse=True)
def imap_password(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test user's password, where the connector looks for it."""
    monkeypatch.setenv("PREIMAGE_IMAP_PASSWORD", PASSWORD)


@pytest.fixture
def cli(cli: Callable[..., CliResult]) -> Callable[..., CliResult]:
    """``preimage ARGS`` (see ``tests/conftest.py``), checking the exit code unless told not to."""
    return functools.partial(cli, check=True)
