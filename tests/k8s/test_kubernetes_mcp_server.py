"""mcp-server-kubernetes 4.1.6, from the registry (fixtures/mcp_packages.py; 4.1.4 is not
published), against the session's control plane, through `preimage mcp-proxy` and through
the Claude Code hook (fixtures/mcp_clients.py).  Its kubeconfig is given to the server
alone (its definition's `env`, or the proxy that starts it): the backups name it, so a
`preimage restore` run without one restores the same cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp_clients import (
    PREIMAGE,
    ClaudeHook,
    backup_id,
    clean_env,
    context_of,
    restore,
    run_session,
    told,
)
from mcp_packages import PINNED, executable

pytestmark = [pytest.mark.kubernetes, pytest.mark.slow]

assert PINNED["kubernetes"][2] == "4.1.6"   # the version these tests pin


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
    node = json.loads(cp.kubectl("get", "node", f"{ns}-node", "-o", "json").stdout)
    out["node"] = (node["spec"].get("unschedulable"), node["spec"].get("taints"))
    return out


def k8s_world(cp: Any, ns: str) -> None:
    """A namespace with a ConfigMap and a two-replica Deployment, and a Node object (the
    control plane runs no kubelet: the Node is the API object alone)."""
    cp.kubectl("create", "namespace", ns)
    cp.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": f"{ns}-node", "labels": {"pool": "test"}}}))
    cp.kubectl("apply", "-n", ns, "-f", "-", input="""
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, labels: {app: shop}}
data: {mode: live, limit: "10"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: flags}
data: {beta: "off"}
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


def k8s_calls(ns: str) -> list[tuple[str, dict[str, Any]]]:
    """A delete, a scale to zero, a cordon, a read (no backup), an apply over a ConfigMap,
    a patch of the pod template, a rollout restart, a label and a read through
    kubectl_generic (each change backed up)."""
    return [("kubectl_delete", {"resourceType": "configmap", "name": "settings",
                                "namespace": ns}),
            ("kubectl_scale", {"name": "web", "replicas": 0, "namespace": ns}),
            ("node_management", {"operation": "cordon", "nodeName": f"{ns}-node"}),
            ("kubectl_get", {"resourceType": "pods", "namespace": ns}),
            ("kubectl_apply", {"namespace": ns, "manifest": (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flags, labels: {by: agent}}"
                "\ndata: {beta: \"on\", new: \"1\"}\n")}),
            ("kubectl_patch", {"resourceType": "deployment", "name": "web", "namespace": ns,
                               "patchType": "merge", "patchData": {"spec": {"template": {
                                   "metadata": {"annotations": {"patched": "yes"}}}}}}),
            ("kubectl_rollout", {"subCommand": "restart", "resourceType": "deployment",
                                 "name": "web", "namespace": ns}),
            ("kubectl_generic", {"command": "label", "resourceType": "configmap",
                                 "name": "flags", "namespace": ns, "args": ["tier=gold"],
                                 "flags": {"overwrite": True}}),
            ("kubectl_generic", {"command": "get", "resourceType": "configmaps",
                                 "namespace": ns})]


READS = (3, 8)   # the calls above that change nothing and take no backup


def _changes(texts: list[str]) -> list[str]:
    """The notes of the calls that change something, checking the reads took no backup."""
    for i in READS:
        assert "preimage backup" not in texts[i], texts[i]
    return [t for i, t in enumerate(texts) if i not in READS]


def _k8s_run(cp: Any, ns: str, env: dict[str, str], project: Path, server: list[str],
             hook: ClaudeHook | None) -> None:
    k8s_world(cp, ns)
    before = objects(cp, ns)
    results = run_session(server, env, project, k8s_calls(ns), hook=hook)
    texts = [told(r, hook is not None) for r in results]
    changed = objects(cp, ns)
    assert "configmaps/settings" not in changed and changed["node"][0] is True
    assert changed["configmaps/flags"][:2] == ({"beta": "on", "new": "1"},
                                               {"by": "agent", "tier": "gold"})
    assert changed["deployments/web"][3]["metadata"]["annotations"]["patched"] == "yes"
    for text in reversed(_changes(texts)):
        restore(clean_env(project), backup_id(text))   # run without KUBECONFIG
    assert objects(cp, ns) == before


def test_kubernetes_mcp_through_proxy(control_plane: Any, tmp_path: Path) -> None:
    """mcp-server-kubernetes behind the proxy, its KUBECONFIG given only to the proxy and
    server: a delete, a scale to zero and a cordon are backed up from that cluster, the
    backups name the kubeconfig, and `preimage restore` run without one restores exactly."""
    env = clean_env(tmp_path)   # HOME without a kubeconfig, no KUBECONFIG
    server_env = {**env, "KUBECONFIG": str(control_plane.kubeconfig_path)}
    server = [PREIMAGE, "mcp-proxy", "--name", "cluster", "--",
              str(executable("kubernetes"))]
    _k8s_run(control_plane, "mcp-proxy-ns", server_env, tmp_path, server, None)


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
    results = run_session([str(executable("kubernetes"))], server_env, project,
                          k8s_calls("mcp-hook-ns"), hook=hook)
    texts = [context_of(a) for _, a in results]
    changed = objects(control_plane, "mcp-hook-ns")
    assert "configmaps/settings" not in changed and changed["node"][0] is True
    assert changed["configmaps/flags"][1] == {"by": "agent", "tier": "gold"}
    for text in reversed(_changes(texts)):
        restore(env, backup_id(text))                 # env: no KUBECONFIG
    assert objects(control_plane, "mcp-hook-ns") == before


@pytest.mark.harness
def test_kubernetes_mcp_in_claude_code(control_plane: Any, tmp_path: Path) -> None:
    """The real Claude Code, mcp-server-kubernetes in .mcp.json with KUBECONFIG in its env
    only: the model deletes a ConfigMap and scales a Deployment to zero; the hook backs up
    each object before the call, the model is told the IDs, and `preimage restore` run
    without a kubeconfig brings both objects back exactly."""
    from mcp_claude_code import claude_code_run

    ns = "mcp-claude-ns"
    k8s_world(control_plane, ns)
    before = objects(control_plane, ns)
    ran = claude_code_run(tmp_path, "cluster", {
        "command": str(executable("kubernetes")), "args": [],
        "env": {"KUBECONFIG": str(control_plane.kubeconfig_path)}},
        [("kubectl_delete", {"resourceType": "configmap", "name": "settings", "namespace": ns}),
         ("kubectl_scale", {"name": "web", "replicas": 0, "namespace": ns})])
    changed = objects(control_plane, ns)
    assert "configmaps/settings" not in changed and changed["deployments/web"][2] == 0
    deleted, scaled = ran.backup_of("kubectl_delete"), ran.backup_of("kubectl_scale")
    assert ran.told(deleted) and ran.told(scaled)
    assert "KUBECONFIG" not in ran.env
    for backup in (scaled, deleted):
        ran.restore(backup["id"])
    assert objects(control_plane, ns) == before


def drain_world(cp: Any, ns: str) -> str:
    """A Node object and two pods bound to it (``spec.nodeName``; the control plane runs no
    kubelet, so they stay Pending there, as pods on a node that stopped reporting do)."""
    node = f"{ns}-worker"
    cp.kubectl("create", "namespace", ns)
    cp.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}))
    for name in ("cache", "worker"):
        cp.kubectl("create", "-n", ns, "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 30,
                     "containers": [{"name": name, "image": "registry.invalid/app:1"}]}}))
    return node


def on_node(cp: Any, ns: str, node: str) -> dict[str, Any]:
    """The node's schedulability and the pods bound to it: name, labels, node, containers."""
    doc = json.loads(cp.kubectl("get", "node", node, "-o", "json").stdout)
    pods = json.loads(cp.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]
    return {"unschedulable": doc["spec"].get("unschedulable"),
            "pods": sorted((p["metadata"]["name"], p["metadata"].get("labels"),
                            p["spec"].get("nodeName"), p["spec"]["containers"]) for p in pods)}


@pytest.mark.parametrize("path", ["proxy", "claude-hook"])
def test_kubernetes_mcp_drain_evicts_and_restores(control_plane: Any, tmp_path: Path,
                                                  path: str) -> None:
    """node_management drain, as the server runs it (`kubectl drain NODE --force
    --grace-period 0 --ignore-daemonsets`): the eviction API really deletes the pods bound to
    the node and the node is cordoned; the backup taken before it restores both pods and
    the node's schedulability exactly."""
    ns = f"mcp-drain-{path}"
    node = drain_world(control_plane, ns)
    before = on_node(control_plane, ns, node)
    assert len(before["pods"]) == 2 and not before["unschedulable"]
    env = clean_env(tmp_path)
    kubeconfig = {"KUBECONFIG": str(control_plane.kubeconfig_path)}
    drain = ("node_management", {"operation": "drain", "nodeName": node, "force": True,
                                 "gracePeriod": 0, "confirmDrain": True})
    if path == "proxy":
        server = [PREIMAGE, "mcp-proxy", "--name", "cluster", "--", str(executable("kubernetes"))]
        hook = None
        project = tmp_path
    else:
        project = tmp_path / "project"
        project.mkdir()
        (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"k8s": {
            "command": str(executable("kubernetes")), "args": [], "env": kubeconfig}}}))
        server, hook = [str(executable("kubernetes"))], ClaudeHook("k8s", project, env)
    (answer,) = run_session(server, {**env, **kubeconfig}, project, [drain], hook=hook)
    drained = on_node(control_plane, ns, node)
    assert drained == {"unschedulable": True, "pods": []}, told(answer, hook is not None)
    restore(env, backup_id(told(answer, hook is not None)))   # no KUBECONFIG
    assert on_node(control_plane, ns, node) == before


def test_kubernetes_mcp_exec_in_pod_is_asked_or_refused(control_plane: Any,
                                                        tmp_path: Path) -> None:
    """exec_in_pod cannot be backed up (what a command changes inside a container is out of
    reach): the Claude Code hook hands it to the user with that reason, and the proxy, which
    cannot ask, refuses it without forwarding, saying the same."""
    ns = "mcp-exec-ns"
    control_plane.kubectl("create", "namespace", ns)
    call = ("exec_in_pod", {"name": "web-0", "namespace": ns, "command": "rm -rf /data"})
    env = clean_env(tmp_path)
    kubeconfig = {"KUBECONFIG": str(control_plane.kubeconfig_path)}
    (refused, _), = run_session([PREIMAGE, "mcp-proxy", "--name", "cluster", "--",
                                 str(executable("kubernetes"))], {**env, **kubeconfig},
                                tmp_path, [call])
    text = " ".join(c.text for c in refused.content if hasattr(c, "text"))
    assert refused.isError and "NOT backed up" in text and "inside a container" in text, text
    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"k8s": {
        "command": str(executable("kubernetes")), "args": [], "env": kubeconfig}}}))
    answer = ClaudeHook("k8s", project, env)(*call)
    spec = answer["hookSpecificOutput"]
    assert spec["permissionDecision"] == "ask", answer
    assert "inside a container" in spec["permissionDecisionReason"], answer


CHART = {"Chart.yaml": "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
         "values.yaml": "mode: live\nlimit: \"10\"\n",
         "templates/settings.yaml": (
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\n"
             "data:\n  mode: {{ .Values.mode | quote }}\n  limit: {{ .Values.limit | quote }}\n")}


def releases(cp: Any, ns: str) -> dict[str, Any]:
    """What Helm left in the namespace: each ConfigMap's data, and each release record (a
    Secret of type helm.sh/release.v1) whole — its data and labels (status, version)."""
    out: dict[str, Any] = {}
    for kind in ("configmaps", "secrets"):
        for item in json.loads(cp.kubectl("get", kind, "-n", ns, "-o", "json").stdout)["items"]:
            name = item["metadata"]["name"]
            if name != "kube-root-ca.crt":
                out[f"{kind}/{name}"] = (item.get("data"), item["metadata"].get("labels"))
    return out


@pytest.mark.parametrize("path", ["proxy", "claude-hook"])
def test_kubernetes_mcp_helm_tools_restore(control_plane: Any, tmp_path: Path,
                                           path: str) -> None:
    """install_helm_chart, upgrade_helm_chart (new values) and uninstall_helm_chart of a
    chart in a local folder, run by the server with the pinned helm: each is backed up (the
    release's namespace, its release records included) and its restore brings the
    namespace back exactly — after the uninstall, `helm list` shows the release again."""
    import subprocess

    from mcp_packages import helm_dir

    helm = helm_dir() / "helm"
    assert helm.exists(), "helm is not built: run bash fixtures/setup.d/83-helm.sh"
    ns = f"mcp-helm-{path}"
    control_plane.kubectl("create", "namespace", ns)
    chart = tmp_path / "shop-chart"
    for name, text in CHART.items():
        (chart / name).parent.mkdir(parents=True, exist_ok=True)
        (chart / name).write_text(text)
    env = clean_env(tmp_path)
    server_env = {**env, "KUBECONFIG": str(control_plane.kubeconfig_path),
                  "PATH": f"{helm.parent}:{env['PATH']}"}
    if path == "proxy":
        server = [PREIMAGE, "mcp-proxy", "--name", "cluster", "--", str(executable("kubernetes"))]
        project, hook = tmp_path, None
    else:
        project = tmp_path / "project"
        project.mkdir()
        (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"k8s": {
            "command": str(executable("kubernetes")), "args": [],
            "env": {"KUBECONFIG": str(control_plane.kubeconfig_path),
                    "PATH": server_env["PATH"]}}}}))
        server, hook = [str(executable("kubernetes"))], ClaudeHook("k8s", project, env)
    release = {"name": "shop", "chart": str(chart), "namespace": ns}
    steps = [("install_helm_chart", release, ["install", "shop", str(chart)]),
             ("upgrade_helm_chart", {**release, "values": {"mode": "test"}},
              ["upgrade", "shop", str(chart), "--set", "mode=test"]),
             ("uninstall_helm_chart", {"name": "shop", "namespace": ns}, ["uninstall", "shop"])]
    for tool, args, by_hand in steps:
        before = releases(control_plane, ns)
        (answer,) = run_session(server, server_env, project, [(tool, args)], hook=hook)
        text = told(answer, hook is not None)
        assert releases(control_plane, ns) != before, f"{tool}: {answer[0].content}"
        restore(env, backup_id(text))                     # no KUBECONFIG, no helm
        assert releases(control_plane, ns) == before, tool
        subprocess.run([str(helm), *by_hand, "--namespace", ns], env=server_env, check=True,
                       capture_output=True, timeout=300)   # then on, for the next step
    restore(env, backup_id(text))   # the uninstall's backup once more: the release is back
    listed = subprocess.run([str(helm), "list", "--namespace", ns, "-o", "json"],
                            env=server_env, check=True, capture_output=True, text=True)
    assert [(r["name"], r["status"], r["revision"]) for r in json.loads(listed.stdout)] == [
        ("shop", "deployed", "2")]
