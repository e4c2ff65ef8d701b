"""`k8s://CTX/_all/pods?node=NODE`: the pods bound to one node, in every namespace — what a
`kubectl drain NODE` evicts, and all its backup holds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from preimage import Store
from preimage.store.snapshots import load_snapshot_row

pytestmark = pytest.mark.kubernetes

CONTEXT = "preimage-test"   # the session cluster's context (tests/k8s/conftest.py)
Kube = Any


def _node(kube: Kube, name: str) -> str:
    """A Node object (the control plane runs no kubelet: pods bound to it stay Pending, as
    on a node that stopped reporting), deleted after the test."""
    kube.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}))
    kube.cleanups.append(lambda: kube.kubectl("delete", "node", name, "--ignore-not-found",
                                              check=False))
    return name


def _pod(kube: Kube, ns: str, name: str, node: str) -> None:
    kube.kubectl("create", "-n", ns, "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"nodeName": node, "containers": [{"name": name, "image": "registry.invalid/a:1"}]}}))


def _pods(kube: Kube, *namespaces: str) -> dict[str, Any]:
    """Every pod of ``namespaces`` by namespace/name: its node, labels and containers."""
    out = {}
    for ns in namespaces:
        for p in kube.get("pods", namespace=ns)["items"]:
            out[f"{ns}/{p['metadata']['name']}"] = (p["spec"].get("nodeName"),
                                                    p["metadata"].get("labels"),
                                                    p["spec"]["containers"])
    return out


def test_a_drain_backs_up_only_the_nodes_pods_and_restore_brings_them_back(
        kube: Kube, store: Store) -> None:
    """`preimage guard -- kubectl drain A`: the backup holds node A and the pods bound to A
    in both namespaces, not B's pod; after the real drain, restoring it brings A's pods back,
    uncordons A and leaves B's pod as it was."""
    a, b = _node(kube, f"drain-a-{kube.tag}"), _node(kube, f"drain-b-{kube.tag}")
    shop, jobs = kube.namespace("drshop"), kube.namespace("drjobs")
    _pod(kube, shop, "web", a)
    _pod(kube, jobs, "cache", a)
    _pod(kube, shop, "other", b)
    before = _pods(kube, shop, jobs)
    proc = kube.cli("guard", "--json", "--", "kubectl", f"--context={CONTEXT}",
                    f"--cache-dir={kube.home.parent / 'kube-cache'}", "drain", a, "--force",
                    "--grace-period=0", "--ignore-daemonsets")
    assert proc.returncode == 0, proc.stderr
    decision = json.loads(proc.stderr.splitlines()[0])
    assert decision["targets"] == [f"k8s://{CONTEXT}/_/nodes/{a}",
                                   f"k8s://{CONTEXT}/_all/pods?node={a}"]
    assert _pods(kube, shop, jobs) == {f"{shop}/other": before[f"{shop}/other"]}
    rows = store.catalog.get(decision["backup_id"]).snapshots
    pods = [f"{i.namespace}/{i.name}" for row in rows
            for i in load_snapshot_row(store, row).items if i.kind == "Pod"]
    assert sorted(pods) == sorted([f"{shop}/web", f"{jobs}/cache"])
    kube.restore(decision["backup_id"])
    assert _pods(kube, shop, jobs) == before
    assert not kube.get("nodes", a)["spec"].get("unschedulable")


def test_node_is_refused_for_anything_but_pods(kube: Kube) -> None:
    """`node=` on another resource, or on a named object, is refused with the form to use."""
    proc = kube.cli("capture", kube.uri("_all", "configmaps", query="node=n1"))
    assert proc.returncode == 2 and "not pods" in proc.stderr
    proc = kube.cli("capture", kube.uri("shop", "pods", "web", query="node=n1"))
    assert proc.returncode == 2 and "node= selects pods" in proc.stderr
