"""Tier 2 for mail: email MCP tools, ``imapsync`` and ``curl imap://``.

A tool that deletes, moves, flags or marks messages captures the folder it
acts on — narrowed to the messages' UIDs when the call names them — and,
for moves and copies, the destination folder too, so a restore can take
the moved copies away again instead of duplicating them.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import unquote, urlsplit

from preimage.connectors.imap.selection import imap_uri
from preimage.layer.call import ToolCall
from preimage.layer.config import discover_mcp
from preimage.layer.context import Context
from preimage.layer.deciding.extract import finding, shell_extractor, tool_extractor, unknown
from preimage.layer.deciding.rules import Rule
from preimage.layer.decision import Finding, Impact, PlannedTarget, Tier
from preimage.layer.reading.argv import parse_args
from preimage.layer.reading.shell import SimpleCommand

_FOLDER_KEYS = ("folder", "mailbox", "source_folder", "from_folder", "folder_name", "mailbox_name",
                "source_mailbox", "source")
_DEST_KEYS = ("destination", "destination_folder", "target_folder", "to_folder", "dest_folder",
              "to_mailbox", "target_mailbox", "new_folder", "to")
_ID_KEYS = ("uid", "uids", "message_id", "message_ids", "email_id", "email_ids", "ids", "id",
            "message_uids", "messages")


def account_uri(call: ToolCall, ctx: Context) -> str | None:
    """The IMAP account an email MCP server uses: configured, or from its launch env."""
    mcp = call.mcp_tool
    if mcp is None:
        return None
    conf = ctx.config.mcp.get(mcp.server)
    if conf and conf.target:
        return conf.target
    spec = discover_mcp(ctx.workspace, ctx.home, harness=ctx.call.harness,
                        env=ctx.env or None).get(mcp.server, {})
    env = {k.upper(): str(v) for k, v in (spec.get("env") or {}).items()}
    for v in env.values():
        if v.startswith(("imap://", "imaps://")):
            return v
    host = env.get("IMAP_HOST") or env.get("IMAP_SERVER") or env.get("EMAIL_IMAP_HOST")
    if not host:
        return None
    user = (env.get("IMAP_USER") or env.get("IMAP_USERNAME") or env.get("EMAIL_USERNAME")
            or env.get("EMAIL_ADDRESS") or env.get("EMAIL_USER") or "")
    port = env.get("IMAP_PORT") or ""
    tls = env.get("IMAP_SSL", env.get("IMAP_USE_SSL", "true")).lower() not in ("0", "false", "no")
    scheme = "imaps" if tls and port != "143" else "imap"
    userpart = user.replace("@", "%40") + "@" if user else ""
    return f"{scheme}://{userpart}{host}{':' + port if port else ''}/"


def _uids(value: Any) -> list[int] | None:
    items = value if isinstance(value, list) else str(value).replace(" ", "").split(",")
    out = []
    for i in items:
        text = str(i)
        if not text.isdigit():
            return None
        out.append(int(text))
    return out or None


@tool_extractor("emails_mcp")
def emails_mcp(call: ToolCall, rule: Rule, ctx: Context) -> Finding:
    """A tool of emails-mcp, read as that server runs it (:mod:`.mcp_emails`)."""
    from preimage.layer.deciding.mcp_emails import emails_mcp as plan
    from preimage.layer.deciding.mcp_launch import server_spec

    return plan(call, rule, ctx, server_spec(call, ctx))


@tool_extractor("mcp_email")
def mcp_email(call: ToolCall, rule: Rule, ctx: Context) -> Finding:
    """Delete / move / flag / mark tools of an email MCP server."""
    a = call.input
    if rule.params.get("peek_unless") and not any(a.get(k) for k in rule.params["peek_unless"]):
        return finding(call, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    base = account_uri(call, ctx)
    if base is None:
        mcp = call.mcp_tool
        return unknown(call, rule, f"email MCP server '{mcp.server if mcp else '?'}': its IMAP "
                       "account is unknown; set mcp.<server>.target: imap://user@host:port")
    folder = next((str(a[k]) for k in _FOLDER_KEYS if isinstance(a.get(k), str)), None)
    folder = folder or rule.params.get("folder") or "INBOX"
    ids = next((a[k] for k in _ID_KEYS if a.get(k) not in (None, "", [])), None)
    uids = _uids(ids) if ids is not None else None
    wide = ids is None
    tool = call.mcp_tool.tool.lower() if call.mcp_tool else call.tool.lower()
    whole_folder = ("folder" in tool or "mailbox" in tool) and Impact(rule.impact) is Impact.HIGH
    targets = [PlannedTarget(imap_uri(base, folder, uids=uids or (), recursive=whole_folder),
                             f"{call.mcp_tool.tool if call.mcp_tool else call.tool} changes it",
                             external=True)]
    if ids is not None and uids is None:
        values = [str(i) for i in (ids if isinstance(ids, list) else [ids])]
        msgids = [v if v.startswith("<") else f"<{v}>" for v in values if "@" in v]
        targets = [PlannedTarget(imap_uri(base, folder, message_ids=msgids)
                                 if len(msgids) == len(values) else imap_uri(base, folder),
                                 "the messages it names", external=True)]
    dest = next((str(a[k]) for k in _DEST_KEYS if isinstance(a.get(k), str)), None)
    dest = dest or rule.params.get("destination")
    if dest and dest != folder:
        targets.append(PlannedTarget(imap_uri(base, dest), "messages land in it", external=True))
    return finding(call, rule, targets=targets, wide=wide, outside_workspace=True)


@shell_extractor("imapsync")
def imapsync(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``imapsync``: the destination account (and the source with ``--delete1``)."""
    args = parse_args(cmd.words[1:], ["--host1", "--host2", "--user1", "--user2", "--port1",
                                      "--port2", "--password1", "--password2", "--folder",
                                      "--passfile1", "--passfile2", "--exclude", "--include"])
    targets = []
    for side in ("2", "1"):
        host = args.value(f"--host{side}")
        if not host or (side == "1" and not args.has("--delete1", "--delete")):
            continue
        user = (args.value(f"--user{side}") or "").replace("@", "%40")
        port = args.value(f"--port{side}")
        scheme = "imaps" if args.has(f"--ssl{side}") or port == "993" else "imap"
        base = f"{scheme}://{user + '@' if user else ''}{host}{':' + port if port else ''}/"
        folders: list[str | None] = [*args.values("--folder")] or [None]
        targets += [PlannedTarget(imap_uri(base, f), f"imapsync writes host{side}", external=True)
                    for f in folders]
    deleting = args.has("--delete2", "--delete1", "--delete", "--delete2folders", "--expunge1")
    return finding(cmd, rule, targets=targets, impact=Impact.HIGH if deleting else Impact.NORMAL,
                   wide=True, outside_workspace=True)


@shell_extractor("curl")
def curl(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``curl imap://…  -X 'STORE …'``: the folder; ``curl -o FILE``: the file."""
    args = parse_args(cmd.words[1:], ["-X", "--request", "-u", "--user", "--url", "-o", "--output",
                                      "-d", "--data", "-H", "--header", "-T", "--upload-file",
                                      "-F", "--form", "--data-binary", "--data-raw", "-A", "-e",
                                      "--connect-timeout", "-m", "--max-time", "-w", "-b", "-c"])
    urls = args.values("--url") + [t for t in args.texts if "://" in t]
    request = (args.value("-X", "--request") or "").upper()
    imap = [u for u in urls if u.lower().startswith(("imap://", "imaps://"))]
    if imap:
        verb = request.split()[1] if request.startswith("UID ") and len(request.split()) > 1 \
            else (request.split()[0] if request else "")
        if verb in ("STORE", "EXPUNGE", "DELETE", "MOVE", "COPY", "RENAME", "APPEND", "UID"):
            parts = urlsplit(imap[0])
            folder = unquote(parts.path.lstrip("/").split(";", 1)[0]) or "INBOX"
            base = f"{parts.scheme}://{parts.netloc}/"
            return finding(cmd, rule, targets=[PlannedTarget(imap_uri(base, folder),
                                                             f"IMAP {verb} changes it",
                                                             external=True)],
                           impact=Impact.HIGH if verb in ("EXPUNGE", "DELETE") else Impact.NORMAL,
                           outside_workspace=True, wide="1:*" in request)
        return finding(cmd, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    out = args.value("-o", "--output")
    if out or args.has("-O", "--remote-name"):
        from preimage.layer.deciding.extract import expand_paths, file_targets
        from preimage.layer.reading.words import Word

        name = out or os.path.basename(urlsplit(urls[0]).path) if urls else out
        paths, dyn, _ = expand_paths(cmd, [Word(name or "index.html")])
        return finding(cmd, rule, tier=Tier.REWRITE, impact=Impact.LOW if not dyn else Impact.NORMAL,
                       targets=file_targets(paths, ctx, "curl writes it", include_absent=True))
    if request in ("POST", "PUT", "DELETE", "PATCH") or args.has("-d", "--data", "-F", "--form",
                                                                   "-T", "--data-binary", "--data-raw"):
        f = finding(cmd, rule, impact=Impact.NORMAL, outside_workspace=True)
        f.notes.append("curl sends a request that may change a remote service; no connector "
                       "captures an arbitrary HTTP service")
        return f
    return finding(cmd, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
