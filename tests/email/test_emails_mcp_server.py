"""emails-mcp 0.1.12, from the registry (fixtures/mcp_packages.py), against the session's
Dovecot, through `preimage mcp-proxy` and through the Claude Code hook
(fixtures/mcp_clients.py), configured as its documentation says: a `--config_file`.  Its
`email_id`s are IMAP sequence numbers in the folder the session last selected; the
processes that back up hold no IMAP credential of their own (a restore is given one, as a
user gives it)."""

from __future__ import annotations

import imaplib
import json
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from mcp_clients import (
    PREIMAGE,
    ClaudeHook,
    backup_id,
    clean_env,
    note_of,
    restore,
    run_session,
    told,
)
from mcp_packages import PINNED, executable

pytestmark = [pytest.mark.imap, pytest.mark.slow]

assert PINNED["emails-mcp"][2] == "0.1.12"   # the version these tests pin


def mailbox(mail: Any, user: str) -> imaplib.IMAP4:
    c = imaplib.IMAP4(mail.host, mail.port)
    c.login(user, mail.password)
    return c


def seed(mail: Any, user: str) -> None:
    """INBOX with five unread messages (one flagged), Archive with one read message."""
    mail.add_user(user)
    c = mailbox(mail, user)
    c.create("Archive")
    c.create("Sent")
    for i in range(1, 6):
        m = EmailMessage()
        m["From"], m["To"], m["Subject"] = "a@example.org", f"{user}@example.org", f"note {i}"
        m["Message-ID"] = f"<m{i}.{user}@example.org>"
        m.set_content(f"body {i}\n")
        c.append("INBOX", "(\\Flagged)" if i == 3 else "()", None, m.as_bytes())
    m = EmailMessage()
    m["From"], m["Subject"], m["Message-ID"] = "b@example.org", "kept", f"<a1.{user}@example.org>"
    m.set_content("archived\n")
    c.append("Archive", "(\\Seen)", None, m.as_bytes())
    c.logout()


def state(mail: Any, user: str) -> dict[str, Any]:
    """The folders, and INBOX's, Archive's and Sent's messages: (Message-ID and Subject,
    flags), by those headers —
    what a restore must bring back (UIDs are the server's to assign)."""
    import re

    c = mailbox(mail, user)
    out: dict[str, Any] = {"folders": sorted(
        line.decode().rsplit(" ", 1)[-1].strip('"') for line in c.list()[1])}
    for folder in ("INBOX", "Archive", "Sent"):
        status, count = c.select(folder, readonly=True)
        if status != "OK":
            out[folder] = None
            continue
        rows = []
        status, data = (c.fetch("1:*", "(FLAGS BODY.PEEK[HEADER.FIELDS (MESSAGE-ID SUBJECT)])")
                        if int(count[0] or 0) else ("OK", []))
        for item in data if status == "OK" else []:
            if isinstance(item, tuple):
                flags = re.search(rb"FLAGS \(([^)]*)\)", item[0])
                # a sent copy has no Message-ID (the server sets none): its Subject tells
                mid = " ".join(item[1].decode().split())
                words = flags.group(1).decode().split() if flags else []
                rows.append((mid, tuple(sorted(w for w in words if w != "\\Recent"))))
        out[folder] = sorted(rows)
    c.logout()
    return out


def mail_config(mail: Any, user: str, folder: Path, smtp: Any) -> Path:
    """emails-mcp's config file (its documented JSON), plain IMAP and SMTP on loopback."""
    path = folder / "mail.json"
    path.write_text(json.dumps([{"email": user, "password": mail.password, "name": user,
                                 "imap_server": mail.host, "imap_port": mail.port,
                                 "smtp_server": smtp.host, "smtp_port": smtp.port,
                                 "use_ssl": False,
                                 "use_starttls": False}]))
    return path


# Each step: the calls of one session, and the call (by index) whose backup is restored.
MAIL_STEPS: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = [
    ("get_emails sets \\Seen on its page", [("get_emails", {"folder": "INBOX", "page_size": 2})]),
    ("read_email sets \\Seen", [("get_emails", {"folder": "Archive"}),
                                ("get_emails", {"folder": "INBOX", "page_size": 1}),
                                ("read_email", {"email_id": "4"})]),
    ("mark_emails by sequence number", [("get_emails", {"folder": "INBOX", "page_size": 1}),
                                        ("mark_emails", {"email_ids": ["1", "2", "3"],
                                                         "status": "read"})]),
    ("delete_email expunges", [("get_emails", {"folder": "INBOX", "page_size": 1}),
                               ("delete_email", {"email_id": "4"})]),
    ("move_emails copies and expunges", [("get_emails", {"folder": "INBOX", "page_size": 1}),
                                         ("move_emails", {"email_ids": ["1", "5"],
                                                          "target_folder": "Archive"})]),
    ("search_emails sets \\Seen on what it lists", [("search_emails", {
        "query": "note", "folder": "INBOX", "page_size": 2})]),
    ("get_email_headers sets \\Seen", [("get_emails", {"folder": "Archive"}),
                                       ("search_emails", {"query": "note 1"}),
                                       ("get_email_headers", {"email_id": "4"})]),
    ("delete_emails expunges", [("get_emails", {"folder": "INBOX", "page_size": 1}),
                                ("delete_emails", {"email_ids": ["2", "4"]})]),
    ("move_email copies and expunges", [("get_emails", {"folder": "INBOX", "page_size": 1}),
                                        ("move_email", {"email_id": "3",
                                                        "target_folder": "Archive"})]),
    ("send_email appends to Sent", [("send_email", {
        "to": "bob@example.org", "subject": "status", "body": "all good"})]),
    ("reply_email sets \\Seen and appends to Sent", [
        ("get_emails", {"folder": "INBOX", "page_size": 1}),
        ("reply_email", {"email_id": "2", "body": "thanks"})]),
    ("forward_email sets \\Seen and appends to Sent", [
        ("get_emails", {"folder": "INBOX", "page_size": 1}),
        ("forward_email", {"email_id": "5", "to": "carol@example.org"})]),
    ("export_emails sets \\Seen on what it writes out", [("export_emails", {"folder": "INBOX"})]),
    ("import_emails appends, creating a folder", [("import_emails", {
        "import_path": "import.json"})]),
    ("create_folder", [("create_folder", {"folder_name": "Projects"})]),
    ("delete_folder", [("delete_folder", {"folder_name": "Archive"})]),
]


def import_file(folder: Path) -> None:
    """``folder/import.json``: the server's own export of Archive (run with no preimage in
    between), with a copy of its message named for a folder that does not exist yet."""
    import re

    (result, _), = run_session([str(executable("emails-mcp")), "--config_file", "mail.json"],
                               clean_env(folder), folder,
                               [("export_emails", {"folder": "Archive"})])
    text = note_of(result)
    written = re.search(r"exported \d+ emails to (\S+)", text)
    assert written, text
    doc = json.loads(Path(written.group(1)).read_text())
    Path(written.group(1)).unlink()
    doc["emails"].append({**doc["emails"][0], "email_id": "2", "folder": "Imported"})
    (folder / "import.json").write_text(json.dumps(doc))


def _mail_steps(mail: Any, user: str, project: Path, env: dict[str, str], server: list[str],
                hook: ClaudeHook | None) -> None:
    for label, calls in MAIL_STEPS:
        before = state(mail, user)
        results = run_session(server, env, project, calls, hook=hook)
        text = told(results[-1], hook is not None)
        assert state(mail, user) != before, f"{label}: the call changed nothing"
        # earlier calls of the session changed state too (get_emails sets \\Seen): the
        # backups are restored newest first, as a user undoing the session would
        ids = [backup_id(told(r, hook is not None)) for r in results
               if "preimage backup" in told(r, hook is not None)]
        assert backup_id(text) in ids
        for bid in reversed(ids):
            restore(env, bid, PREIMAGE_IMAP_PASSWORD=mail.password)
        assert state(mail, user) == before, f"{label}: not restored exactly"


def test_emails_mcp_through_proxy(dovecot: Any, smtp: Any, tmp_path: Path) -> None:
    """emails-mcp behind the proxy with its --config_file: each reading tool that sets
    \\Seen and each flag, delete and move tool is backed up and restores every folder's
    messages and flags exactly (the numbers are sequence numbers in the folder the
    session selected)."""
    mail = dovecot
    seed(mail, "mcpproxyuser")
    mail_config(mail, "mcpproxyuser", tmp_path, smtp)
    import_file(tmp_path)
    env = clean_env(tmp_path)
    server = [PREIMAGE, "mcp-proxy", "--name", "mail", "--",
              str(executable("emails-mcp")), "--config_file", "mail.json"]
    sent = len(smtp.delivered())
    _mail_steps(mail, "mcpproxyuser", tmp_path, env, server, None)
    # the three sends went out (a restore takes back only their copies in Sent)
    assert len(smtp.delivered()) == sent + 3 and "status" in smtp.delivered()
    # A session whose first call names numbers before any folder was selected: the server
    # has none selected (its STORE fails), the layer captures those numbers in every
    # folder, and the model hears why (the decision's notes reach it through the proxy).
    (result, _), = run_session(server, env, tmp_path,
                               [("mark_emails", {"email_ids": ["1"], "status": "important"})])
    assert "no folder is known to be selected" in note_of(result), note_of(result)


def test_emails_mcp_through_claude_hook(dovecot: Any, smtp: Any, tmp_path: Path) -> None:
    """emails-mcp defined in .mcp.json with a relative --config_file: the hook reads the
    account from that file and the selected folder from the session's earlier calls."""
    mail = dovecot
    seed(mail, "mcphookuser")
    project = tmp_path / "project"
    project.mkdir()
    mail_config(mail, "mcphookuser", project, smtp)
    import_file(project)
    server = [str(executable("emails-mcp")), "--config_file", "mail.json"]
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"inbox": {
        "command": server[0], "args": server[1:]}}}))
    env = clean_env(tmp_path)
    sent = len(smtp.delivered())
    _mail_steps(mail, "mcphookuser", project, env, server, ClaudeHook("inbox", project, env))
    assert len(smtp.delivered()) == sent + 3


@pytest.mark.harness
def test_emails_mcp_in_claude_code(dovecot: Any, smtp: Any, tmp_path: Path) -> None:
    """The real Claude Code, emails-mcp in .mcp.json with its --config_file beside it: the
    model lists INBOX (which sets \\Seen) and deletes message 4 of that listing; the hook
    backs up both calls before they run, the model is told the IDs, and restoring them
    newest first brings every folder's messages and flags back exactly."""
    from mcp_claude_code import claude_code_run

    mail = dovecot
    seed(mail, "mcpclaudeuser")
    project = tmp_path / "run" / "project"
    project.mkdir(parents=True)
    mail_config(mail, "mcpclaudeuser", project, smtp)
    before = state(mail, "mcpclaudeuser")
    ran = claude_code_run(tmp_path / "run", "inbox", {
        "command": str(executable("emails-mcp")), "args": ["--config_file", "mail.json"]},
        [("get_emails", {"folder": "INBOX", "page_size": 2}),
         ("delete_email", {"email_id": "4"})])
    after = state(mail, "mcpclaudeuser")
    assert len(after["INBOX"]) == 4 and after != before
    listed, deleted = ran.backup_of("get_emails"), ran.backup_of("delete_email")
    assert ran.told(listed) and ran.told(deleted)
    for backup in (deleted, listed):
        ran.restore(backup["id"], PREIMAGE_IMAP_PASSWORD=mail.password)
    assert state(mail, "mcpclaudeuser") == before
