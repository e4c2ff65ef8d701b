"""The email tasks' steps as emails-mcp 0.1.12's own tools.

emails-mcp addresses messages by IMAP sequence numbers in the folder its last listing
selected, so each step is what a model does with it: list the folder (``get_emails``),
then change the messages by the ids that listing printed, chosen the way the task's
search chose them:

==================================  =====================================================
task step (IMAP terms)              emails-mcp
==================================  =====================================================
``search_messages folder``          ``get_emails folder``
``store_flags folder +\\Seen``       ``get_emails folder``, ``mark_emails ids read``
``move_messages folder BEFORE d``   ``get_emails folder``, ``move_emails ids to`` — the ids
                                    whose listed date is before ``d``
``delete_messages folder FROM s``   ``get_emails folder``, ``delete_emails ids`` — the ids
                                    listed from ``s`` (``ALL``: every id)
``delete_folder folder``            ``delete_folder folder_name``
==================================  =====================================================

The listing shows each message's ``Date:`` header, not the server's INTERNALDATE that an
IMAP ``BEFORE`` search compares; the ids are picked from what the model sees.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from preimage.bench.harness_tool import HarnessCall, NoHarnessToolError, answer_text
from preimage.bench.systems.base import Sandbox

LISTING_SIZE = 500   # one page holds a seeded folder


def _listing(folder: str) -> HarnessCall:
    return HarnessCall("get_emails", {"folder": folder, "page": 1, "page_size": LISTING_SIZE})


def listed(text: str) -> list[dict[str, str]]:
    """The messages a ``get_emails`` answer lists: ``id``, ``subject``, ``from``, ``date``
    (the text as the server wrote it, or wrapped as the harness passed it on: Claude
    Code's ``{"result": "…"}``, MCP content parts ``[{"type": "text", "text": "…"}]``,
    Codex's ``Wall time: …`` / ``Output:`` lines before them)."""
    text = answer_text(text)
    out: list[dict[str, str]] = []
    for line in text.splitlines():
        head = re.match(r"\s*\d+\.\s+ID:\s*(\S+)", line)
        if head:
            out.append({"id": head.group(1)})
            continue
        field_ = re.match(r"\s+(Subject|From|Date):\s?(.*)", line)
        if field_ and out:
            out[-1][field_.group(1).lower()] = field_.group(2)
    return out


def _date(value: str) -> datetime | None:
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _chooser(search: str) -> Callable[[dict[str, str]], bool]:
    """Which listed messages an IMAP search of the task picks, as a reader of the listing."""
    words = search.split(None, 1)
    if words[0].upper() == "ALL":
        return lambda m: True
    if words[0].upper() == "FROM" and len(words) == 2:
        sender = words[1].strip('"').lower()
        return lambda m: sender in m.get("from", "").lower()
    if words[0].upper() == "BEFORE" and len(words) == 2:
        cutoff = datetime.strptime(words[1], "%d-%b-%Y").replace(tzinfo=UTC)

        def before(m: dict[str, str]) -> bool:
            when = _date(m.get("date", ""))
            return when is not None and when < cutoff
        return before
    raise NoHarnessToolError(f"email search {search!r}: no reading of a listing picks it")


def emails_mcp_calls(tool: str, arguments: dict[str, Any]) -> list[HarnessCall]:
    """The emails-mcp calls (tool names without the server) that carry one task step."""
    folder = str(arguments.get("folder", "INBOX"))
    if tool == "search_messages":
        return [_listing(folder)]
    if tool == "delete_folder":
        return [HarnessCall("delete_folder", {"folder_name": folder})]
    if tool == "store_flags" and arguments.get("add") == ["\\Seen"]:
        pick = _chooser(str(arguments.get("search", "ALL")))
        return [_listing(folder), HarnessCall(
            "mark_emails", resolve=lambda text: {
                "email_ids": [m["id"] for m in listed(text) if pick(m)], "status": "read"})]
    if tool in ("move_messages", "delete_messages"):
        pick = _chooser(str(arguments.get("search", "ALL")))
        if tool == "move_messages":
            to = str(arguments["to"])
            return [_listing(folder), HarnessCall("move_emails", resolve=lambda text: {
                "email_ids": [m["id"] for m in listed(text) if pick(m)], "target_folder": to})]
        return [_listing(folder), HarnessCall("delete_emails", resolve=lambda text: {
            "email_ids": [m["id"] for m in listed(text) if pick(m)]})]
    raise NoHarnessToolError(f"email/{tool}: emails-mcp has no tool that carries it")


def emails_mcp_config(sandbox: Sandbox) -> Path:
    """emails-mcp's documented JSON account file for the run's mail user (plain IMAP on
    loopback; no SMTP server is started, sends are not part of any task).  It holds the
    password, so it lives beside the run, outside the project."""
    where = urlsplit(sandbox.variables["imap_uri"])
    path = sandbox.root / "emails-mcp.json"
    path.write_text(json.dumps([{
        "email": sandbox.variables["imap_user"], "password": sandbox.env["IMAP_PASSWORD"],
        "name": sandbox.variables["imap_user"], "imap_server": where.hostname,
        "imap_port": where.port, "smtp_server": where.hostname, "smtp_port": 9,
        "use_ssl": False, "use_starttls": False}]))
    path.chmod(0o600)
    return path
