"""emails-mcp 0.1.12 against a Dovecot laid out as Courier-style hosts are: one namespace
with the prefix ``INBOX.`` and ``.`` as the hierarchy separator, so every folder is below
INBOX (``INBOX.Sent``, ``INBOX.Projects.2024``).  Through `preimage mcp-proxy` and the
Claude Code hook, each change restores every folder and every message's flags exactly."""

from __future__ import annotations

import imaplib
import json
import re
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from dovecot import DovecotServer
from mcp_clients import PREIMAGE, ClaudeHook, backup_id, clean_env, restore, run_session, told
from mcp_packages import executable

pytestmark = [pytest.mark.imap, pytest.mark.slow]

USER = "courier"


@pytest.fixture(scope="module")
def courier() -> Iterator[Any]:
    """A Dovecot of this module's own with the ``INBOX.`` prefix and ``.`` separator."""
    server = DovecotServer.start(separator=".", prefix="INBOX.")
    yield server
    server.stop()


def seed(mail: Any, user: str) -> None:
    """INBOX with three unread messages; INBOX.Projects with one, and INBOX.Projects.2024
    below it with one flagged."""
    mail.add_user(user)
    c = imaplib.IMAP4(mail.host, mail.port)
    c.login(user, mail.password)
    for folder in ("INBOX.Archive", "INBOX.Projects", "INBOX.Projects.2024"):
        assert c.create(folder)[0] == "OK", folder
    for folder, n, flags in (("INBOX", 1, "()"), ("INBOX", 2, "()"), ("INBOX", 3, "()"),
                             ("INBOX.Projects", 4, "(\\Seen)"),
                             ("INBOX.Projects.2024", 5, "(\\Seen \\Flagged)")):
        m = EmailMessage()
        m["From"], m["To"], m["Subject"] = "a@example.org", f"{user}@example.org", f"note {n}"
        m["Message-ID"] = f"<c{n}.{user}@example.org>"
        m.set_content(f"body {n}\n")
        c.append(folder, flags, None, m.as_bytes())
    c.logout()


def state(mail: Any, user: str) -> dict[str, Any]:
    """Every folder (its name and attributes) and every message in it, by Message-ID or
    Subject, with its flags."""
    c = imaplib.IMAP4(mail.host, mail.port)
    c.login(user, mail.password)
    out: dict[str, Any] = {}
    for line in c.list()[1]:
        text = line.decode()
        attrs, name = re.match(r"\(([^)]*)\) \S+ (.*)$", text).groups()  # type: ignore[union-attr]
        name = name.strip('"')
        rows: list[tuple[str, tuple[str, ...]]] = []
        status, count = (c.select(f'"{name}"', readonly=True) if "\\Noselect" not in attrs
                         else ("NO", [b"0"]))
        if status == "OK" and int(count[0] or 0):
            status, data = c.fetch("1:*", "(FLAGS BODY.PEEK[HEADER.FIELDS (MESSAGE-ID SUBJECT)])")
            for item in data if status == "OK" else []:
                if isinstance(item, tuple):
                    flags = re.search(rb"FLAGS \(([^)]*)\)", item[0])
                    words = flags.group(1).decode().split() if flags else []
                    rows.append((" ".join(item[1].decode().split()),
                                 tuple(sorted(w for w in words if w != "\\Recent"))))
        # \\Marked, \\UnMarked: whether mail arrived since the last look (the server's to say)
        out[name] = (sorted(a for a in attrs.split() if a not in ("\\Marked", "\\UnMarked")),
                     sorted(rows))
    c.logout()
    return out


STEPS: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = [
    ("move_email to INBOX.Archive", [("get_emails", {"folder": "INBOX", "page_size": 1}),
                                     ("move_email", {"email_id": "2",
                                                     "target_folder": "INBOX.Archive"})]),
    ("delete_folder takes the folders below", [("delete_folder", {
        "folder_name": "INBOX.Projects"})]),
    ("create_folder below another", [("create_folder", {"folder_name": "INBOX.Projects.2025"})]),
    ("mark_emails in a folder below", [("get_emails", {"folder": "INBOX.Projects.2024"}),
                                       ("mark_emails", {"email_ids": ["1"], "status": "unread"})]),
]


@pytest.mark.parametrize("path", ["proxy", "claude-hook"])
def test_emails_mcp_on_a_dot_separated_account(courier: Any, smtp: Any, tmp_path: Path,
                                               path: str) -> None:
    """On an account whose folders are INBOX.Archive, INBOX.Projects.2024: a move, a folder
    deleted with the one below it, a folder created below another and a flag change in a
    sub-folder are each backed up and restore every folder and message exactly."""
    user = f"{USER}{path.replace('-', '')}"
    seed(courier, user)
    project = tmp_path / "project"
    project.mkdir()
    (project / "mail.json").write_text(json.dumps([{
        "email": user, "password": courier.password, "name": user,
        "imap_server": courier.host, "imap_port": courier.port, "smtp_server": smtp.host,
        "smtp_port": smtp.port, "use_ssl": False, "use_starttls": False}]))
    server = [str(executable("emails-mcp")), "--config_file", "mail.json"]
    env = clean_env(tmp_path)
    hook = None
    if path == "proxy":
        server = [PREIMAGE, "mcp-proxy", "--name", "mail", "--", *server]
    else:
        (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"inbox": {
            "command": server[0], "args": server[1:]}}}))
        hook = ClaudeHook("inbox", project, env)
    for label, calls in STEPS:
        before = state(courier, user)
        results = run_session(server, env, project, calls, hook=hook)
        assert state(courier, user) != before, f"{label}: the call changed nothing"
        texts = [told(r, hook is not None) for r in results]
        ids = [backup_id(t) for t in texts if "preimage backup" in t]
        assert "preimage backup" in texts[-1], f"{label}: {texts[-1]}"
        for bid in reversed(ids):
            restore(env, bid, PREIMAGE_IMAP_PASSWORD=courier.password)
        assert state(courier, user) == before, f"{label}: not restored exactly"
