"""The MCP servers agents use, installed from the registries at pinned versions
(fixtures/mcp_packages.py), run against the real systems on loopback, through both
paths: `preimage mcp-proxy` in the server's place, and the Claude Code hook
(`preimage hook claude-code` fed the payloads Claude Code sends for
`mcp__<server>__<tool>`, with the server defined in the project's `.mcp.json`).

Each server is configured the way its own documentation says — postgres-mcp with
`DATABASE_URI` in its `env`, emails-mcp with a `--config_file` — and the process that
backs up is given no credentials of its own: it must read the server's."""

from __future__ import annotations

import imaplib
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import anyio
import pytest
from harnesses import BIN, preimage
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_packages import PINNED, executable

pytestmark = pytest.mark.slow

# The versions these tests pin (fixtures/mcp_packages.py installs them).
assert PINNED["postgres-mcp"][2] == "0.3.0" and PINNED["emails-mcp"][2] == "0.1.12"
assert PINNED["kubernetes"][2] == "4.1.6" and PINNED["playwright"][2] == "0.0.79"


def clean_env(home: Path) -> dict[str, str]:
    """The test's environment without any database or mail credential."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PG", "IMAP_", "PREIMAGE_POSTGRESQL", "PREIMAGE_IMAP", "KUBE"))}
    env["HOME"] = str(home)
    return env


def run_apart(go: Any) -> Any:
    """``anyio.run(go)`` on a thread of its own (another module's session fixture may keep
    an event loop running on this one; as tests/harness/test_mcp_proxy.py does)."""
    import threading

    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = anyio.run(go)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def run_session(command: list[str], env: dict[str, str], cwd: Path,
                calls: list[tuple[str, dict[str, Any]]], hook: Any = None) -> list[Any]:
    """Start ``command`` over stdio and make ``calls`` in one session; ``hook(tool, args)``
    runs before each call (the Claude Code hook's place)."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(cwd))

    async def go() -> list[Any]:
        out = []
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            for tool, args in calls:
                before = hook(tool, args) if hook else None
                result = await s.call_tool(tool, args)
                out.append((result, before))
        return out

    return run_apart(go)


class ClaudeHook:
    """`preimage hook claude-code` as Claude Code runs it for an MCP tool of ``server``."""

    def __init__(self, server: str, project: Path, env: dict[str, str]) -> None:
        self.server, self.project, self.env = server, project, env
        self.session = f"s-{uuid.uuid4().hex[:8]}"

    def __call__(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        payload = {"session_id": self.session, "transcript_path": "", "cwd": str(self.project),
                   "permission_mode": "default", "hook_event_name": "PreToolUse",
                   "tool_name": f"mcp__{self.server}__{tool}", "tool_input": args,
                   "tool_use_id": f"toolu_{uuid.uuid4().hex[:12]}"}
        proc = subprocess.run([os.path.join(BIN, "preimage"), "hook", "claude-code"],
                              input=json.dumps(payload), capture_output=True, text=True,
                              env=self.env, cwd=self.project, timeout=300)
        assert proc.returncode == 0, proc.stderr
        out: dict[str, Any] = json.loads(proc.stdout) if proc.stdout.strip() else {}
        return out


def context_of(hook_answer: dict[str, Any] | None) -> str:
    """The text Claude Code hands the model from a PreToolUse answer."""
    spec = (hook_answer or {}).get("hookSpecificOutput") or {}
    return str(spec.get("additionalContext") or "")


def backup_id(text: str) -> str:
    """The backup ID named in a note to the model."""
    import re

    m = re.search(r"preimage backup (\S+)", text)
    assert m, f"no backup named in: {text!r}"
    return m.group(1)


def note_of(result: Any) -> str:
    """The proxy's note: the last text item of the result."""
    texts = [c.text for c in result.content if getattr(c, "type", "") == "text"]
    return texts[-1] if texts else ""


# ---------------------------------------------------------------------- PostgreSQL
@pytest.fixture(scope="module")
def pg() -> Iterator[Any]:
    """A PostgreSQL server of the fixtures (loopback, password auth)."""
    from postgres import PostgresServer

    server = PostgresServer.start()
    try:
        yield server
    finally:
        server.stop()


def shop(pg: Any, name: str) -> None:
    pg.psql(f"CREATE DATABASE {name}")
    pg.psql("CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL, qty int);"
            "INSERT INTO orders (item, qty) VALUES ('apple', 1), ('pear', 2), ('fig', 3);",
            db=name)


def dump(pg: Any, name: str) -> str:
    """pg_dump's own text of the database (the oracle), less the lines about the dump
    itself (versions, and the \\restrict key pg_dump draws at random on each run)."""
    text = subprocess.run([pg.tool("pg_dump"), "--no-sync", "-d", name], capture_output=True,
                          text=True, env=pg.env(), check=True).stdout
    noise = ("-- Dumped from database version", "-- Dumped by pg_dump version",
             "\\restrict ", "\\unrestrict ")
    return "\n".join(line for line in text.splitlines() if not line.startswith(noise))


def restore(env: dict[str, str], bid: str, **secret: str) -> None:
    """`preimage restore ID`, with the credential the user gives it."""
    preimage("restore", bid, env={**env, **secret})


@pytest.mark.postgres
def test_postgres_mcp_through_proxy(pg: Any, tmp_path: Path) -> None:
    """postgres-mcp behind the proxy, set up with DATABASE_URI in its env only: explain_query
    with analyze (which deletes) and DROP TABLE are backed up and restore pg_dump-identical."""
    shop(pg, "proxyshop")
    env = {**clean_env(tmp_path), "DATABASE_URI": pg.uri("proxyshop", password=True)}
    original = dump(pg, "proxyshop")
    results = run_session(
        [os.path.join(BIN, "preimage"), "mcp-proxy", "--name", "db", "--",
         str(executable("postgres-mcp"))], env, tmp_path,
        [("explain_query", {"sql": "DELETE FROM orders WHERE qty > 1", "analyze": True}),
         ("execute_sql", {"sql": "DROP TABLE orders"}),
         ("list_schemas", {})])
    explain, drop, listing = (r for r, _ in results)
    assert "Undo" in note_of(explain) or "undo" in note_of(explain), note_of(explain)
    assert pg.psql("SELECT to_regclass('orders')", db="proxyshop").strip() == ""
    assert "preimage backup" not in note_of(listing)
    restore(env, backup_id(note_of(drop)), PGPASSWORD=pg.password)
    assert pg.psql("SELECT count(*) FROM orders", db="proxyshop").strip() == "1"
    restore(env, backup_id(note_of(explain)), PGPASSWORD=pg.password)
    assert dump(pg, "proxyshop") == original


@pytest.mark.postgres
def test_postgres_mcp_through_claude_hook(pg: Any, tmp_path: Path) -> None:
    """postgres-mcp defined in .mcp.json (DATABASE_URI in its env): the hook reads the
    server's database from that definition, backs up explain_query's analyze and a
    TRUNCATE … RESTART IDENTITY, and each restores pg_dump-identical."""
    shop(pg, "hookshop")
    project = tmp_path / "project"
    project.mkdir()
    uri = pg.uri("hookshop", password=True)
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"shop": {
        "command": str(executable("postgres-mcp")), "args": [], "env": {"DATABASE_URI": uri}}}}))
    env = clean_env(tmp_path)
    hook = ClaudeHook("shop", project, env)
    original = dump(pg, "hookshop")
    results = run_session([str(executable("postgres-mcp"))], {**env, "DATABASE_URI": uri},
                          project,
                          [("explain_query", {"sql": "DELETE FROM orders", "analyze": True}),
                           ("explain_query", {"sql": "SELECT * FROM orders"})],
                          hook=hook)
    (_, analyzed), (_, plain) = results
    assert pg.psql("SELECT count(*) FROM orders", db="hookshop").strip() == "0"
    assert "preimage backup" not in context_of(plain)
    restore(env, backup_id(context_of(analyzed)), PGPASSWORD=pg.password)
    assert dump(pg, "hookshop") == original
    results = run_session([str(executable("postgres-mcp"))], {**env, "DATABASE_URI": uri},
                          project,
                          [("execute_sql", {"sql": "TRUNCATE orders RESTART IDENTITY"})],
                          hook=hook)
    restore(env, backup_id(context_of(results[0][1])), PGPASSWORD=pg.password)
    assert dump(pg, "hookshop") == original


# ---------------------------------------------------------------------- IMAP
@pytest.fixture(scope="module")
def mail() -> Iterator[Any]:
    """A Dovecot server of the fixtures on loopback."""
    from dovecot import DovecotServer

    server = DovecotServer.start()
    try:
        yield server
    finally:
        server.stop()


def mailbox(mail: Any, user: str) -> imaplib.IMAP4:
    c = imaplib.IMAP4(mail.host, mail.port)
    c.login(user, mail.password)
    return c


def seed(mail: Any, user: str) -> None:
    """INBOX with five unread messages (one flagged), Archive with one read message."""
    mail.add_user(user)
    c = mailbox(mail, user)
    c.create("Archive")
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
    """The folders, and INBOX's and Archive's messages: (Message-ID, flags), by Message-ID —
    what a restore must bring back (UIDs are the server's to assign)."""
    import re

    c = mailbox(mail, user)
    out: dict[str, Any] = {"folders": sorted(
        line.decode().rsplit(" ", 1)[-1].strip('"') for line in c.list()[1])}
    for folder in ("INBOX", "Archive"):
        status, count = c.select(folder, readonly=True)
        if status != "OK":
            out[folder] = None
            continue
        rows = []
        status, data = (c.fetch("1:*", "(FLAGS BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])")
                        if int(count[0] or 0) else ("OK", []))
        for item in data if status == "OK" else []:
            if isinstance(item, tuple):
                flags = re.search(rb"FLAGS \(([^)]*)\)", item[0])
                mid = item[1].decode().split(":", 1)[1].strip()
                words = flags.group(1).decode().split() if flags else []
                rows.append((mid, tuple(sorted(w for w in words if w != "\\Recent"))))
        out[folder] = sorted(rows)
    c.logout()
    return out


def mail_config(mail: Any, user: str, folder: Path) -> Path:
    """emails-mcp's config file (its documented JSON), plain IMAP on loopback."""
    path = folder / "mail.json"
    path.write_text(json.dumps([{"email": user, "password": mail.password, "name": user,
                                 "imap_server": mail.host, "imap_port": mail.port,
                                 "smtp_server": mail.host, "smtp_port": 1, "use_ssl": False,
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
    ("create_folder", [("create_folder", {"folder_name": "Projects"})]),
    ("delete_folder", [("delete_folder", {"folder_name": "Archive"})]),
]


def _mail_steps(mail: Any, user: str, project: Path, env: dict[str, str], server: list[str],
                hook: ClaudeHook | None, proxied: bool) -> None:
    for label, calls in MAIL_STEPS:
        before = state(mail, user)
        results = run_session(server, env, project, calls, hook=hook)
        result, answer = results[-1]
        text = context_of(answer) if hook else note_of(result)
        after = state(mail, user)
        assert after != before, f"{label}: the call changed nothing"
        # every earlier call of the session changed state too (get_emails) — restore the
        # backups newest first, as a user undoing the session would
        ids = [backup_id(context_of(a) if hook else note_of(r)) for r, a in results
               if "preimage backup" in (context_of(a) if hook else note_of(r))]
        assert backup_id(text) in ids
        for bid in reversed(ids):
            restore(env, bid, PREIMAGE_IMAP_PASSWORD=mail.password)
        assert state(mail, user) == before, f"{label}: not restored exactly"


@pytest.mark.imap
def test_emails_mcp_through_proxy(mail: Any, tmp_path: Path) -> None:
    """emails-mcp behind the proxy with its --config_file: each reading tool that sets
    \\Seen and each flag, delete and move tool is backed up and restores every folder's
    messages and flags exactly (the numbers are sequence numbers in the folder the
    session selected)."""
    seed(mail, "proxyuser")
    mail_config(mail, "proxyuser", tmp_path)
    env = clean_env(tmp_path)
    server = [os.path.join(BIN, "preimage"), "mcp-proxy", "--name", "mail", "--",
              str(executable("emails-mcp")), "--config_file", "mail.json"]
    _mail_steps(mail, "proxyuser", tmp_path, env, server, None, True)
    # A session whose first call names numbers before any folder was selected: the server
    # has none selected (its STORE fails), the layer captures those numbers in every
    # folder, and the model hears why (the decision's notes reach it through the proxy).
    (result, _), = run_session(server, env, tmp_path,
                               [("mark_emails", {"email_ids": ["1"], "status": "important"})])
    assert "no folder is known to be selected" in note_of(result), note_of(result)


@pytest.mark.imap
def test_emails_mcp_through_claude_hook(mail: Any, tmp_path: Path) -> None:
    """emails-mcp defined in .mcp.json with a relative --config_file: the hook reads the
    account from that file and the selected folder from the session's earlier calls."""
    seed(mail, "hookuser")
    project = tmp_path / "project"
    project.mkdir()
    mail_config(mail, "hookuser", project)
    server = [str(executable("emails-mcp")), "--config_file", "mail.json"]
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"inbox": {
        "command": server[0], "args": server[1:]}}}))
    env = clean_env(tmp_path)
    _mail_steps(mail, "hookuser", project, env, server, ClaudeHook("inbox", project, env), False)


# ---------------------------------------------------------------------- Kubernetes
def objects(cp: Any, ns: str) -> dict[str, Any]:
    """What a restore must bring back: each ConfigMap's data and labels, each Deployment's
    replicas and pod template, by name."""
    out: dict[str, Any] = {}
    for kind in ("configmaps", "deployments"):
        doc = json.loads(cp.kubectl("get", kind, "-n", ns, "-o", "json").stdout)
        for item in doc["items"]:
            name = f"{kind}/{item['metadata']['name']}"
            if kind == "configmaps" and name == "configmaps/kube-root-ca.crt":
                continue
            out[name] = (item.get("data"), item["metadata"].get("labels"),
                         item.get("spec", {}).get("replicas"),
                         item.get("spec", {}).get("template"))
    return out


def k8s_world(cp: Any, ns: str) -> None:
    cp.kubectl("create", "namespace", ns)
    cp.kubectl("apply", "-n", ns, "-f", "-", input="""
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, labels: {app: shop}}
data: {mode: live, limit: "10"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "registry.invalid/web:1"}]}
""")


K8S_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("kubectl_delete", {"resourceType": "configmap", "name": "settings"}),
    ("kubectl_scale", {"name": "web", "replicas": 0}),
    ("kubectl_get", {"resourceType": "pods"}),
]


def _k8s_run(cp: Any, ns: str, env: dict[str, str], project: Path, server: list[str],
             hook: ClaudeHook | None) -> None:
    k8s_world(cp, ns)
    before = objects(cp, ns)
    calls = [(t, {**a, "namespace": ns}) for t, a in K8S_CALLS]
    results = run_session(server, env, project, calls, hook=hook)
    texts = [context_of(a) if hook else note_of(r) for r, a in results]
    assert "preimage backup" not in texts[2]          # kubectl_get: read only
    assert "configmaps/settings" not in objects(cp, ns)
    for text in reversed(texts[:2]):
        restore(clean_env(project), backup_id(text))   # run without KUBECONFIG
    assert objects(cp, ns) == before


@pytest.mark.kubernetes
def test_kubernetes_mcp_through_proxy(control_plane: Any, tmp_path: Path) -> None:
    """mcp-server-kubernetes behind the proxy, its KUBECONFIG given only to the proxy and
    server: a delete and a scale to zero are backed up from that cluster, the backups name
    the kubeconfig, and `preimage restore` run without one restores the objects exactly."""
    env = clean_env(tmp_path)   # HOME without a kubeconfig, no KUBECONFIG
    server_env = {**env, "KUBECONFIG": str(control_plane.kubeconfig_path)}
    server = [os.path.join(BIN, "preimage"), "mcp-proxy", "--name", "cluster", "--",
              str(executable("kubernetes"))]
    _k8s_run(control_plane, "mcp-proxy-ns", server_env, tmp_path, server, None)


@pytest.mark.kubernetes
def test_kubernetes_mcp_through_claude_hook(control_plane: Any, tmp_path: Path) -> None:
    """mcp-server-kubernetes defined in .mcp.json with KUBECONFIG in its env only: the hook
    reads that cluster, and the backups' targets name the kubeconfig, so `preimage restore`
    run without KUBECONFIG restores the objects exactly."""
    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"k8s": {
        "command": str(executable("kubernetes")), "args": [],
        "env": {"KUBECONFIG": str(control_plane.kubeconfig_path)}}}}))
    env = clean_env(tmp_path)
    server_env = {**env, "KUBECONFIG": str(control_plane.kubeconfig_path)}
    hook = ClaudeHook("k8s", project, env)
    k8s_world(control_plane, "mcp-hook-ns")
    before = objects(control_plane, "mcp-hook-ns")
    calls = [(t, {**a, "namespace": "mcp-hook-ns"}) for t, a in K8S_CALLS]
    results = run_session([str(executable("kubernetes"))], server_env, project, calls, hook=hook)
    texts = [context_of(a) for _, a in results]
    assert "preimage backup" not in texts[2]
    assert "configmaps/settings" not in objects(control_plane, "mcp-hook-ns")
    for text in reversed(texts[:2]):
        restore(env, backup_id(text))                 # env: no KUBECONFIG
    assert objects(control_plane, "mcp-hook-ns") == before
