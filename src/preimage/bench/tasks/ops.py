"""Kubernetes tasks (20) through kubectl and the Kubernetes MCP server, and email tasks
(20) through the email MCP server."""

from __future__ import annotations

from typing import Any

from preimage.bench.tasks.build import bash, mcp, regret, task

_APPS = ("shop", "blog", "billing", "search", "media")


def _manifests(app: str, n: int) -> str:
    return f"""apiVersion: v1
kind: ConfigMap
metadata:
  name: {app}-config
  labels: {{app: {app}, tier: backend}}
  annotations: {{owner: team-{app}, tuned: "run {n}"}}
data: {{WORKERS: "{2 + n}", FEATURE_FLAGS: "flag-{n},beta"}}
---
apiVersion: v1
kind: Secret
metadata: {{name: {app}-db, labels: {{app: {app}}}}}
type: Opaque
stringData: {{DATABASE_URL: "postgres://{app}:pw{n}@db.internal/{app}"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: {app}-cache, labels: {{app: {app}, tier: cache}}}}
data: {{TTL: "{60 * n}"}}
---
apiVersion: v1
kind: Service
metadata: {{name: {app}, labels: {{app: {app}}}}}
spec:
  selector: {{app: {app}}}
  ports: [{{name: http, port: 80, targetPort: {8000 + n}}}]
"""


def _k8s(family: str, n: int, request: str, call: dict[str, Any], lost: list[str],
         survive: str, *, files: list[dict[str, Any]] | None = None,
         then: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    app = _APPS[(n - 1) % len(_APPS)]
    return task(
        f"K.{family}.{n:02d}", family, "kubernetes", "kubernetes", request, requires=["k8s"],
        cwd="{home}/deploy",
        setup={"files": files or [], "kubernetes": {"namespace": app,
                                                    "manifests": _manifests(app, n)}},
        before=[bash("kubectl get all,configmaps -n {ns}")], call=call, then=then,
        lost=lost, survive=survive,
    )


def kubernetes_tasks() -> list[dict[str, Any]]:
    """Namespace teardown, label cleanup, re-applied manifests, MCP deletes: 5 each."""
    out = []
    for n in range(1, 6):
        app = _APPS[n - 1]
        out.append(_k8s(
            "delete-namespace", n, f"Tear down the {app} preview environment.",
            bash("kubectl delete namespace {ns}" + (" --wait=false" if n % 2 else "")),
            ["{k8s_uri}/{ns}"], "every object of the namespace with labels and annotations "
            "(it was production, not a preview)"))
        selector = ("tier=backend", "app=" + app, "tier in (backend,cache)", "app", "tier")[n - 1]
        out.append(_k8s(
            "delete-by-label", n, f"Remove the stale {app} config objects.",
            bash(f"kubectl delete configmap,secret -n {{ns}} -l '{selector}'"),
            ["{k8s_uri}/{ns}"], "the ConfigMaps and Secret the selector matched, with their "
            "data, labels and annotations",
            then=[bash("kubectl get configmaps -n {ns}")]))
        release = {"path": "{home}/deploy/release.yaml", "text": (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
            f"  name: {app}-config\n  namespace: {{ns}}\ndata:\n  WORKERS: \"1\"\n")}
        out.append(_k8s(
            "apply-overwrite", n, f"Re-apply the {app} release manifests.",
            bash("kubectl apply -f release.yaml" + (" --force" if n == 3 else "")),
            [f"{{k8s_uri}}/{{ns}}/configmaps/{app}-config"],
            f"{app}-config's hand-tuned data keys and annotations", files=[release]))
        kind, name = (("configmap", f"{app}-config"), ("secret", f"{app}-db"),
                      ("configmap", f"{app}-cache"), ("service", app),
                      ("configmap", f"{app}-config"))[n - 1]
        plural = {"configmap": "configmaps", "secret": "secrets", "service": "services"}[kind]
        first = mcp("kubernetes", "kubectl_delete", resourceType=kind, name=name,
                    namespace="{ns}")
        then = []
        if n % 2 == 0:
            then = [regret(mcp("kubernetes", "kubectl_delete", resourceType="configmap",
                               name=f"{app}-cache" if name != f"{app}-cache" else
                               f"{app}-config", namespace="{ns}"), ["{k8s_uri}/{ns}"])]
        out.append(_k8s(
            "mcp-delete", n, f"Clean up the unused {kind} {name}.", first,
            [f"{{k8s_uri}}/{{ns}}/{plural}/{name}"],
            f"the {kind} {name} (in use after all)" + (", and the second ConfigMap" if then
                                                       else ""), then=then))
    return out


def _folders(n: int) -> dict[str, Any]:
    return {
        "INBOX": [
            {"count": 10 + 2 * n, "subject": "Newsletter {n}", "from": "news@shop.example",
             "date": "2026-01-03T07:00:00Z", "step_hours": 30, "flags": ["\\Seen"]},
            {"count": 6 + n, "subject": "Re: contract {n}", "from": "boss@example.org",
             "date": "2026-01-10T09:30:00Z", "step_hours": 50,
             "flags_every": {"\\Flagged": 2, "$Important": 3}},
            {"count": 5, "subject": "Invoice {n}", "from": "billing@vendor.example",
             "date": "2026-02-20T10:00:00Z", "step_hours": 24,
             "flags_every": {"\\Seen": 2}},
        ],
        "Projects": [{"count": 8 + n, "subject": "Project {n}", "from": "team@example.org",
                      "date": "2025-09-01T12:00:00Z", "step_hours": 90,
                      "flags_every": {"\\Seen": 2, "$Work": 3}}],
        "Archive": [{"count": 2, "subject": "Old {n}", "date": "2025-01-01T00:00:00Z"}],
    }


def _mail(family: str, n: int, request: str, call: dict[str, Any], lost: list[str],
          survive: str, then: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return task(
        f"E.{family}.{n:02d}", family, "email", "imap", request, requires=["imap"],
        setup={"imap": {"folders": _folders(n), "subscribe": ["Projects", "Archive"]}},
        before=[mcp("email", "search_messages", folder="INBOX", search="ALL")],
        call=call, then=then, lost=lost, survive=survive,
    )


def email_tasks() -> list[dict[str, Any]]:
    """Archiving, marking read, purging a sender, deleting a folder: 5 each."""
    out = []
    for n in range(1, 6):
        before = ("15-Feb-2026", "01-Mar-2026", "20-Feb-2026", "10-Feb-2026", "28-Feb-2026")
        out.append(_mail(
            "archive", n, "Archive everything in my inbox older than a few weeks, except "
            "mail from my boss.",
            mcp("email", "move_messages", folder="INBOX", search=f"BEFORE {before[n - 1]}",
                to="Archive"),
            ["{imap_uri}/INBOX", "{imap_uri}/Archive"],
            "INBOX membership of the boss's mail with \\Flagged, keywords and dates; "
            "no copies left in Archive",
            then=[mcp("email", "search_messages", folder="Archive", search="ALL")]))
        folder = "INBOX" if n % 2 else "Projects"
        out.append(_mail(
            "mark-read", n, f"Clear the unread badge on {folder}.",
            mcp("email", "store_flags", folder=folder, uids="1:*", add=["\\Seen"]),
            [f"{{imap_uri}}/{folder}"], "which messages were unread"))
        sender = ("news@shop.example", "billing@vendor.example", "team@example.org",
                  "news@shop.example", "boss@example.org")[n - 1]
        where = "Projects" if sender == "team@example.org" else "INBOX"
        then = []
        if n in (2, 4):
            then = [regret(mcp("email", "delete_messages", folder="Archive", search="ALL"),
                           ["{imap_uri}/Archive"])]
        out.append(_mail(
            "purge-sender", n, f"Unsubscribe me from {sender} and delete what they sent.",
            mcp("email", "delete_messages", folder=where, search=f"FROM {sender}"),
            [f"{{imap_uri}}/{where}"],
            f"the messages from {sender} with flags and dates (wanted: invoices, contracts)"
            + (", and the Archive the agent emptied next" if then else ""), then=then))
        gone = ("Projects", "Archive", "Projects", "Archive", "Projects")[n - 1]
        out.append(_mail(
            "delete-folder", n, f"Tidy my folders: {gone} looks unused.",
            mcp("email", "delete_folder", folder=gone), [f"{{imap_uri}}/{gone}"],
            f"{gone} and every message in it with flags, keywords and dates"))
    return out
