"""emails-mcp (0.1.12, PyPI): its tools, read the way the server runs them.

The server (``emails-mcp --config_file FILE``) reads its one account from a JSON file
(a list of accounts — the first is used — or one object: ``email``, ``password``,
``imap_server``, ``imap_port`` (993), ``use_ssl`` (true; false is plain IMAP)), a path
relative to the folder it runs in.  Its email tools share one IMAP connection that
``SELECT``s (read-write) a folder, and every ``email_id`` is an IMAP **sequence
number** in whichever folder the last selecting tool left selected:

=====================  ==============================================================
tool                   what it does on the server
=====================  ==============================================================
get_emails             SELECT folder; FETCH RFC822 of one page (newest first): sets
                       ``\\Seen`` on that page's messages
search_emails          SELECT folder; SEARCH; FETCH RFC822 of the hits: ``\\Seen``
export_emails          get_emails over a folder (or every folder): ``\\Seen``; the
                       last folder stays selected; writes a new file named by the time
                       (``FOLDER_export_YYYYmmdd_HHMMSS.json``) in its export folder or
                       the folder it runs in (its ``export_path`` is not used)
import_emails          reads a JSON export (``emails[].folder``), an ``.eml`` file or a
                       folder of them; SELECTs and APPENDs to each named folder (creating
                       it; INBOX when it cannot), or to ``target_folder``/INBOX
read_email,            FETCH RFC822 (+ STORE +FLAGS \\Seen) of a sequence number in
get_email_headers      the selected folder
reply_email,           FETCH RFC822 (``\\Seen``); sends; APPENDs the sent message to
forward_email          ``Sent`` (0.1.12 tries INBOX.Sent, Sent Messages, Sent Items only
                       when that APPEND raises, not when it is refused: on an account
                       whose folders are all below ``INBOX.`` no copy is kept; the layer
                       captures the first of those that exists, which is wider)
send_email             sends; APPENDs it to that Sent folder
mark_emails            STORE ±\\Seen / ±\\Flagged on sequence numbers
delete_email(s)        STORE +\\Deleted, EXPUNGE: every message already flagged
                       ``\\Deleted`` in the folder goes too
move_email(s)          COPY to the target, STORE +\\Deleted, EXPUNGE (as delete)
create_folder,         on a second connection of its own (the selection above is not
delete_folder          changed): CREATE / DELETE
get_folders, get_mailbox_stats, get_unread_count, check_connection: read only (their
connection is the second one)
=====================  ==============================================================

The layer remembers, per session and server, the folder the last selecting tool named,
and before a tool that takes ``email_id``\\s asks the server itself (``EXAMINE``, which
changes nothing, then ``FETCH n (UID FLAGS)``) which messages those numbers are now, so
the backup holds exactly them — by UID — plus, for an EXPUNGE, every message already
flagged ``\\Deleted`` in the folder.  A reading tool whose messages are all ``\\Seen``
already changes nothing and takes no backup.  When no selection is remembered (the
session began before the layer saw it), the numbers are resolved in every folder and
all of those messages are captured, and the layer says so.
"""

from __future__ import annotations

import imaplib
import os
import re
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from preimage.connectors.imap.selection import imap_uri
from preimage.layer.call import ToolCall
from preimage.layer.context import Context
from preimage.layer.deciding.extract import finding, unknown
from preimage.layer.deciding.mcp_launch import Spec, option, read_json_file, server_cwd
from preimage.layer.deciding.rules import Rule
from preimage.layer.decision import Finding, Impact, PlannedTarget, Tier

PACKAGE = "emails-mcp"
DEFAULT_CONFIG = "test_emils.json"   # the server's own default (sic)
SENT_FOLDERS = ("Sent", "INBOX.Sent", "Sent Messages", "Sent Items")
_SELECTING = ("get_emails", "search_emails", "export_emails")
_SEEN_BY_NUMBER = ("read_email", "get_email_headers", "reply_email", "forward_email")


@dataclass(frozen=True)
class Account:
    """The IMAP account of an emails-mcp server (the password stays in memory)."""

    scheme: str
    user: str
    host: str
    port: int
    password: str

    @property
    def base(self) -> str:
        return f"{self.scheme}://{quote(self.user, safe='')}@{self.host}:{self.port}/"


def account(spec: Spec, ctx: Context) -> Account | str:
    """The server's account from its ``--config_file``, or why it cannot be read."""
    path = option(spec, "--config_file") or DEFAULT_CONFIG
    path = path if os.path.isabs(path) else os.path.join(server_cwd(spec, ctx), path)
    doc = read_json_file(path)
    if isinstance(doc, list):
        doc = doc[0] if doc else None
    if not isinstance(doc, dict) or not doc.get("email") or not doc.get("password"):
        return (f"emails-mcp's config file {path} is missing or holds no account "
                "(email and password)")
    use_ssl = doc.get("use_ssl", True) not in (False, "false", "False", 0)
    try:
        port = int(doc.get("imap_port", 993))
    except (TypeError, ValueError):
        return f"emails-mcp's config file {path}: imap_port is not a number"
    return Account("imaps" if use_ssl else "imap", str(doc["email"]),
                   str(doc.get("imap_server") or "localhost"), port, str(doc["password"]))


class Mailbox:
    """A read-only look at the account, to resolve what the server's numbers mean now."""

    def __init__(self, acct: Account) -> None:
        if acct.scheme == "imaps":
            self._c: imaplib.IMAP4 = imaplib.IMAP4_SSL(
                acct.host, acct.port, ssl_context=ssl.create_default_context(), timeout=15)
        else:
            self._c = imaplib.IMAP4(acct.host, acct.port, timeout=15)
        self._c.login(acct.user, acct.password)

    def close(self) -> None:
        try:
            self._c.logout()
        except (imaplib.IMAP4.error, OSError):
            pass

    def folders(self) -> list[str]:
        status, data = self._c.list()
        out = []
        for line in data if status == "OK" else []:
            text = line.decode() if isinstance(line, bytes) else str(line)
            if "\\Noselect" in text:
                continue
            m = re.match(r'\(.*?\) (?:"[^"]*"|NIL) (.*)$', text)
            if m:
                name = m.group(1).strip()
                out.append(name[1:-1].replace('\\"', '"') if name.startswith('"') else name)
        return out

    def examine(self, folder: str) -> int | None:
        """Open ``folder`` read-only; its message count (``None``: no such folder)."""
        status, data = self._c.select('"' + folder.replace('"', '\\"') + '"', readonly=True)
        if status != "OK":
            return None
        return int(data[0]) if data and data[0] else 0

    def messages(self, spec: str) -> dict[int, tuple[int, bool, bool]]:
        """``{sequence number: (UID, seen, deleted)}`` for a sequence set."""
        status, data = self._c.fetch(spec, "(UID FLAGS)")
        out: dict[int, tuple[int, bool, bool]] = {}
        for item in data if status == "OK" else []:
            text = item.decode() if isinstance(item, bytes) else str(item)
            m = re.match(r"(\d+) \((.*)\)", text)
            if not m:
                continue
            uid = re.search(r"UID (\d+)", m.group(2))
            flags = re.search(r"FLAGS \(([^)]*)\)", m.group(2))
            if uid:
                words = (flags.group(1) if flags else "").split()
                out[int(m.group(1))] = (int(uid.group(1)), "\\Seen" in words,
                                        "\\Deleted" in words)
        return out

    def search_uids(self, criteria: str) -> list[int]:
        status, data = self._c.uid("SEARCH", criteria)
        return [int(u) for u in (data[0] or b"").split()] if status == "OK" else []


def _numbers(value: Any) -> list[int] | None:
    items = value if isinstance(value, list) else [value]
    out = []
    for i in items:
        text = str(i).strip()
        if not text.isdigit():
            return None
        out.append(int(text))
    return out


def _selected_key(call: ToolCall, acct: Account) -> str:
    return f"emails-mcp selected {call.mcp_tool.server if call.mcp_tool else ''} {acct.base}"


def emails_mcp(call: ToolCall, rule: Rule, ctx: Context, spec: Spec) -> Finding:
    """Targets for one emails-mcp tool call (see the module's table)."""
    tool = call.mcp_tool.tool if call.mcp_tool else call.tool
    a = call.input
    if tool in ("get_folders", "get_mailbox_stats", "get_unread_count", "check_connection",
                "save_draft", "get_drafts", "update_draft", "delete_draft"):
        return finding(call, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    acct = account(spec, ctx)
    if isinstance(acct, str):
        return unknown(call, rule, acct)
    from preimage.interface.target import remember_password

    remember_password(acct.scheme, acct.user, acct.host, acct.port, acct.password)
    key = _selected_key(call, acct)
    selected = ctx.session_get(key)
    if tool == "import_emails":   # SELECTs each folder it appends to: the last stays selected
        folders = import_folders(a, server_cwd(spec, ctx))
        ctx.session_set(key, folders[0] if isinstance(folders, list) and len(folders) == 1
                        else None)
        return _import(call, rule, folders, acct)
    if tool in _SELECTING:
        folder = str(a.get("folder") or "INBOX")
        if tool == "export_emails" and a.get("export_all_folders"):
            folder = ""
        ctx.session_set(key, folder or None)
    try:
        box = Mailbox(acct)
    except (imaplib.IMAP4.error, OSError) as exc:
        return unknown(call, rule, f"emails-mcp's IMAP account {acct.base} cannot be read to "
                       f"resolve what the call touches: {exc}")
    try:
        return _plan(call, rule, tool, a, acct, box, selected if isinstance(selected, str) else None)
    finally:
        box.close()


def _plan(call: ToolCall, rule: Rule, tool: str, a: dict[str, Any], acct: Account,
          box: Mailbox, selected: str | None) -> Finding:
    base = acct.base
    targets: list[PlannedTarget] = []
    notes: list[str] = []
    if tool in ("get_emails", "search_emails", "export_emails"):
        folders = [str(a.get("folder") or "INBOX")]
        if tool == "export_emails" and a.get("export_all_folders"):
            folders = box.folders()
        for folder in folders:
            if not box.examine(folder):   # missing or empty: nothing to mark \Seen
                continue
            unseen = box.search_uids("UNSEEN")
            if unseen:
                targets.append(PlannedTarget(imap_uri(base, folder, uids=unseen),
                                             f"{tool} fetches RFC822 and sets \\Seen",
                                             external=True))
        if not targets:
            return finding(call, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
        return finding(call, rule, targets=targets, impact=Impact.LOW, outside_workspace=True)
    if tool in ("create_folder", "delete_folder"):
        name = str(a.get("folder_name") or "")
        if not name:
            return unknown(call, rule, f"{tool} names no folder")
        return finding(call, rule, outside_workspace=True,
                       impact=Impact.HIGH if tool == "delete_folder" else Impact.LOW,
                       targets=[PlannedTarget(imap_uri(base, name, recursive=True),
                                              f"{tool} changes it", external=True)])
    sent = next((f for f in SENT_FOLDERS if f in box.folders()), None)
    sends = tool in ("send_email", "reply_email", "forward_email")
    if sends and sent:
        targets.append(PlannedTarget(imap_uri(base, sent), "the server appends the sent "
                                     "message to it", external=True))
        notes.append("a sent message cannot be recalled: a restore takes away only its copy "
                     "in the Sent folder")
    if tool == "send_email":
        return finding(call, rule, targets=targets, notes=notes, outside_workspace=True) \
            if targets else finding(call, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    ids = a.get("email_ids") if "email_ids" in a else a.get("email_id")
    numbers = _numbers(ids)
    if not numbers:
        return unknown(call, rule, f"{tool}: email id(s) {ids!r} are not sequence numbers")
    expunges = tool in ("delete_email", "delete_emails", "move_email", "move_emails")
    folders = [selected] if selected else box.folders()
    if not selected:
        notes.append("no folder is known to be selected on the server (no get_emails or "
                     "search_emails was seen this session): the numbers are resolved in "
                     "every folder, and all of those messages are captured")
    dest = a.get("target_folder") if isinstance(a.get("target_folder"), str) else None
    for folder in folders:
        if folder == dest and not selected:
            continue   # captured whole below
        count = box.examine(folder)
        if count is None:
            notes.append(f"folder {folder!r} the server has selected does not exist")
            continue
        inside = [n for n in numbers if 0 < n <= count]   # the server fails on the others
        found = box.messages(",".join(map(str, inside))) if inside else {}
        uids = {uid for uid, _, _ in found.values()}
        if tool in _SEEN_BY_NUMBER:   # fetching sets \Seen: only unseen ones change
            uids = {uid for uid, seen, _ in found.values() if not seen}
        if expunges and count:
            uids |= set(box.search_uids("DELETED"))
        if uids:
            targets.append(PlannedTarget(imap_uri(base, folder, uids=sorted(uids)),
                                         f"{tool} changes messages {','.join(map(str, numbers))}"
                                         f" of {folder}", external=True))
    if dest:   # whole, so a restore takes the copies out again
        targets.append(PlannedTarget(imap_uri(base, dest), "messages land in it", external=True))
    if not targets:
        return finding(call, rule, tier=Tier.READ_ONLY, impact=Impact.NONE, notes=notes)
    impact = Impact.HIGH if expunges else Impact.NORMAL if tool == "mark_emails" else Impact.LOW
    return finding(call, rule, targets=targets, notes=notes, impact=impact,
                   outside_workspace=True, wide=not selected)


def import_folders(a: dict[str, Any], cwd: str) -> list[str] | str:
    """The folders ``import_emails`` appends to, read from its file as the server reads it
    (a JSON export's ``emails[].folder`` when ``preserve_folders``, else ``target_folder``
    or INBOX — and INBOX, where the server falls back when it cannot create a folder); or
    why the file cannot be read (the server then reads no more of it either)."""
    path = str(a.get("import_path") or "")
    if not path:
        return "import_emails names no file"
    path = path if os.path.isabs(path) else os.path.join(cwd, path)
    fallback = str(a.get("target_folder") or "INBOX")
    preserve = a.get("preserve_folders", True) not in (False, "false", "False", 0)
    if not path.lower().endswith(".json"):   # .eml files and folders of them name no folder
        return [fallback] if os.path.exists(path) else f"the import file {path} does not exist"
    doc = read_json_file(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("emails"), list):
        return f"the import file {path} is not an emails-mcp export (no 'emails' list)"
    named = {str(e["folder"]) for e in doc["emails"]
             if preserve and isinstance(e, dict) and e.get("folder")}
    unnamed = any(not (isinstance(e, dict) and e.get("folder")) for e in doc["emails"])
    return sorted(named | ({fallback} if unnamed or not preserve else set()) | {"INBOX"})


def _import(call: ToolCall, rule: Rule, folders: list[str] | str, acct: Account) -> Finding:
    """``import_emails``: each folder its file names, whole (a folder it creates is taken
    away again by a restore); when the file cannot be read, the whole account."""
    if isinstance(folders, str):
        return finding(call, rule, outside_workspace=True, wide=True, notes=[
            f"{folders}: the whole account is captured"], targets=[PlannedTarget(
                imap_uri(acct.base), "import_emails appends messages", external=True)])
    return finding(call, rule, outside_workspace=True, targets=[
        PlannedTarget(imap_uri(acct.base, f, recursive=True),
                      "import_emails appends messages to it", external=True) for f in folders])


__all__ = ["Account", "account", "emails_mcp", "import_folders"]
