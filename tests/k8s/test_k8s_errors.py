"""Bad input against the real control plane: unknown context, rejected credentials,
unreachable server, RBAC gaps, a CRD gone at restore time, admission rejections,
a namespace stuck terminating."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import preimage
from preimage.store.snapshots import load_snapshot_row

if TYPE_CHECKING:
    from tests.k8s.conftest import Kube

pytestmark = [pytest.mark.kubernetes]


def extra_kubeconfig(kube: Kube, tmp_path: Path, **contexts: dict[str, Any]) -> Path:
    """A copy of the session kubeconfig with more contexts (name → cluster/user overrides)."""
    cfg = json.loads(Path(kube.cp.kubeconfig_path).read_text())
    for name, spec in contexts.items():
        cluster = dict(cfg["clusters"][0]["cluster"], **spec.get("cluster", {}))
        cfg["clusters"].append({"name": name, "cluster": cluster})
        cfg["users"].append({"name": name, "user": {"token": spec.get("token", "x")}})
        cfg["contexts"].append({"name": name, "context": {"cluster": name, "user": name}})
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(cfg))
    return path


def test_unknown_context_is_a_usage_error(kube: Kube) -> None:
    """A context the kubeconfig lacks exits 2 naming the contexts there are."""
    proc = kube.cli("capture", "k8s://no-such-context/default")
    assert proc.returncode == 2
    assert "no context 'no-such-context'" in proc.stderr
    assert "preimage-test" in proc.stderr


def test_rejected_token_says_so(kube: Kube, tmp_path: Path) -> None:
    """An expired or invalid token exits 2 with the 401 and what to do about it."""
    path = extra_kubeconfig(kube, tmp_path, expired={"token": "expired-or-revoked-token"})
    proc = kube.cli("capture", "k8s://expired/default",
                    env=kube.env(KUBECONFIG=str(path)))
    assert proc.returncode == 2
    assert "401 Unauthorized" in proc.stderr and "rejected the credentials" in proc.stderr


def test_unreachable_server_says_so(kube: Kube, tmp_path: Path) -> None:
    """A context whose server does not answer exits 2 saying it cannot be reached."""
    path = extra_kubeconfig(kube, tmp_path, down={"cluster": {"server": "https://127.0.0.1:1"}})
    proc = kube.cli("capture", "k8s://down/default", env=kube.env(KUBECONFIG=str(path)))
    assert proc.returncode == 2
    assert "cannot reach the Kubernetes API server" in proc.stderr


def test_rbac_gaps_are_reported_and_the_rest_captured(kube: Kube, store: preimage.Store) -> None:
    """With RBAC for ConfigMaps and Services only, those are captured and the rest named as denied."""
    ns = kube.namespace("rbac")
    kube.kubectl("create", "configmap", "visible", "-n", ns, "--from-literal=a=1")
    kube.kubectl("create", "secret", "generic", "hidden", "-n", ns, "--from-literal=p=2")
    kube.kubectl("create", "service", "clusterip", "api", "-n", ns, "--tcp=80:80")
    kube.kubectl("create", "role", "cm-svc", "-n", ns, "--resource=configmaps,services",
                 "--verb=get,list,create,update,patch,delete")
    kube.kubectl("create", "rolebinding", "cm-svc", "-n", ns, "--role=cm-svc",
                 f"--user={kube.cp.limited_user}")
    proc = kube.cli("capture", kube.uri(ns, context="limited"))

    assert proc.returncode == 0, proc.stderr
    assert f"not captured: secrets in namespace {ns}" in proc.stderr
    assert "cannot list resource \"secrets\"" in proc.stderr
    assert f"not captured: the Namespace object {ns}" in proc.stderr
    backup_id = proc.stdout.strip().splitlines()[-1]
    row = store.catalog.get(backup_id).snapshots[0]
    snap: Any = load_snapshot_row(store, row)
    assert {i.ref for i in snap.items} == {
        f"configmaps/{ns}/visible", f"configmaps/{ns}/kube-root-ca.crt", f"services/{ns}/api"}
    assert "secrets" in snap.denied and "configmaps" in snap.listed

    kube.kubectl("delete", "configmap", "visible", "-n", ns)
    result = json.loads(kube.cli("restore", backup_id, "--json",
                                 env=kube.env()).stdout)
    assert result["ok"]
    assert kube.get("configmap", "visible", ns)["data"] == {"a": "1"}
    assert kube.exists("secret", "hidden", ns)  # never judged, never touched


def test_crd_deleted_with_its_instances_comes_back_first(kube: Kube, store: preimage.Store) -> None:
    """A deleted CRD is re-created and Established before its custom resources are restored."""
    ns = kube.namespace("crd")
    group = f"g{kube.tag.replace('-', '')}.example.com"
    kube.apply(kube.crd_manifest(group))
    kube.cleanups.append(lambda: kube.kubectl("delete", "crd", f"widgets.{group}",
                                              "--wait=false", check=False))
    kube.wait_for("CRD to be served", lambda: kube.kubectl(
        "get", f"widgets.{group}", "-n", ns, check=False).returncode == 0)
    kube.apply(f"""
apiVersion: {group}/v1
kind: Widget
metadata: {{name: gear, namespace: {ns}}}
spec: {{teeth: 12}}
""")
    kube.kubectl("patch", f"widgets.{group}", "gear", "-n", ns, "--subresource=status",
                 "--type=merge", "-p", '{"status":{"phase":"Ready"}}')
    backup = preimage.capture([kube.uri(ns)], store=store)

    kube.kubectl("delete", "crd", f"widgets.{group}")  # takes every Widget with it

    result = preimage.restore(backup.id, store=store)
    assert result.ok
    outcomes = [(i.key, i.outcome.value) for i in result.reports[0].items]
    assert outcomes[0] == (f"customresourcedefinitions.apiextensions.k8s.io/widgets.{group}",
                           "restored")
    assert (f"widgets.{group}/{ns}/gear", "restored") in outcomes
    gear = kube.get(f"widgets.{group}", "gear", ns)
    assert gear["spec"] == {"teeth": 12} and gear["status"] == {"phase": "Ready"}
    total, _ = preimage.score(backup.id, store=store)
    assert total.classes["content"].score == 1.0, total.differences
    assert total.classes["metadata"].score == 1.0, total.differences


def test_admission_rejection_fails_one_object_and_restores_the_rest(kube: Kube) -> None:
    """A ValidatingAdmissionPolicy that rejects one object: it is reported failed, the rest restored;
    the dry run already shows the rejection because the server judges it."""
    ns = kube.namespace("guarded", labels={"guard": kube.tag})
    kube.kubectl("create", "configmap", "plain", "-n", ns, "--from-literal=a=1")
    kube.kubectl("create", "configmap", "legacy", "-n", ns, "--from-literal=b=2")
    kube.kubectl("label", "configmap", "legacy", "-n", ns, "tier=legacy")
    kube.kubectl("create", "secret", "generic", "creds", "-n", ns, "--from-literal=p=3")
    backup = kube.capture(kube.uri(ns))

    policy = f"no-legacy-{kube.tag}"
    kube.apply(f"""
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{name: {policy}}}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {{apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}}
  validations:
  - expression: "!has(object.metadata.labels) || !('tier' in object.metadata.labels) || object.metadata.labels['tier'] != 'legacy'"
    message: legacy ConfigMaps are no longer admitted
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{name: {policy}}}
spec:
  policyName: {policy}
  validationActions: [Deny]
  matchResources: {{namespaceSelector: {{matchLabels: {{guard: "{kube.tag}"}}}}}}
""")
    kube.cleanups.append(lambda: kube.kubectl(
        "delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", policy,
        "--ignore-not-found", check=False))
    kube.wait_for("the policy to be enforced", lambda: _legacy_probe_denied(kube, ns))
    kube.kubectl("delete", "configmap,secret", "--all", "-n", ns)

    planned = kube.cli("restore", backup, "--dry-run", "--json")
    plan = {i["key"]: i for i in json.loads(planned.stdout)["reports"][0]["items"]}
    assert planned.returncode == 1
    assert plan[f"configmaps/{ns}/legacy"]["outcome"] == "failed"
    assert "no longer admitted" in plan[f"configmaps/{ns}/legacy"]["reason"]
    assert plan[f"configmaps/{ns}/plain"]["outcome"] == "planned"
    assert not kube.exists("configmap", "plain", ns)  # the dry run wrote nothing

    proc = kube.cli("restore", backup, "--json")
    report = json.loads(proc.stdout)["reports"][0]
    items = {i["key"]: i for i in report["items"]}
    assert proc.returncode == 1
    assert items[f"configmaps/{ns}/legacy"]["outcome"] == "failed"
    assert "no longer admitted" in items[f"configmaps/{ns}/legacy"]["reason"]
    assert items[f"configmaps/{ns}/plain"]["outcome"] == "restored"
    assert items[f"secrets/{ns}/creds"]["outcome"] == "restored"
    assert kube.get("configmap", "plain", ns)["data"] == {"a": "1"}


def _legacy_probe_denied(kube: Kube, ns: str) -> bool:
    manifest = (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: probe, namespace: {ns}, "
                "labels: {tier: legacy}}\n")
    res = kube.kubectl("create", "--dry-run=server", "-f", "-", input=manifest, check=False)
    return "no longer admitted" in res.stderr


def test_namespace_stuck_terminating_is_waited_for_boundedly(
    kube: Kube, store: preimage.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A namespace held in Terminating fails the restore after the bounded wait; once it is gone
    the same restore brings everything back."""
    ns = kube.namespace("stuck")
    kube.apply(f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: held, namespace: {ns}, finalizers: [example.com/hold]}}
data: {{a: "1"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: free, namespace: {ns}}}
data: {{b: "2"}}
""")
    backup = preimage.capture([kube.uri(ns)], store=store)
    kube.kubectl("delete", "namespace", ns, "--wait=false")
    kube.wait_for("the namespace to be terminating", lambda: bool(
        kube.get("namespace", ns)["metadata"].get("deletionTimestamp")))

    monkeypatch.setenv("PREIMAGE_K8S_WAIT", "2")
    stuck = preimage.restore(backup.id, store=store)
    report = stuck.reports[0]
    assert not stuck.ok
    assert any("still terminating" in n for n in report.notes)
    assert {i.key: i.outcome.value for i in report.items}[f"namespaces/{ns}"] == "failed"

    kube.kubectl("patch", "configmap", "held", "-n", ns, "--type=merge",
                 "-p", '{"metadata":{"finalizers":null}}')
    monkeypatch.setenv("PREIMAGE_K8S_WAIT", "90")
    result = preimage.restore(backup.id, store=store)
    assert result.ok
    assert kube.get("configmap", "held", ns)["metadata"]["finalizers"] == ["example.com/hold"]
    kube.kubectl("patch", "configmap", "held", "-n", ns, "--type=merge",
                 "-p", '{"metadata":{"finalizers":null}}')


def test_taken_cluster_ip_is_reassigned_and_reported(kube: Kube, store: preimage.Store) -> None:
    """A Service whose clusterIP was taken meanwhile is restored with a new one, reported as a remap."""
    ns = kube.namespace("ips")
    other = kube.namespace("squatter")
    ip = f"10.0.0.{200 + int(kube.tag.split('-')[0]) % 50}"
    service = "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: {ns}}}\n" \
              "spec: {{clusterIP: {ip}, ports: [{{port: 80}}]}}\n"
    kube.apply(service.format(name="api", ns=ns, ip=ip))
    backup = preimage.capture([kube.uri(ns)], store=store)
    kube.kubectl("delete", "service", "api", "-n", ns)
    kube.apply(service.format(name="squatter", ns=other, ip=ip))

    result = preimage.restore(backup.id, store=store)

    assert result.ok
    remaps = {(r.key, r.field): r for r in result.reports[0].remaps}
    moved = remaps[(f"services/{ns}/api", "spec.clusterIP")]
    assert moved.old == ip and moved.new == kube.get("service", "api", ns)["spec"]["clusterIP"]
    assert moved.new != ip


def test_selector_target_whose_namespace_is_gone(kube: Kube, store: preimage.Store) -> None:
    """Objects captured by selector come back even when their whole namespace was deleted."""
    ns = kube.namespace("gone")
    kube.kubectl("create", "configmap", "rel-config", "-n", ns, "--from-literal=a=1")
    kube.kubectl("label", "configmap", "rel-config", "-n", ns, "release=r1")
    backup = preimage.capture([kube.uri(ns, query="selector=release=r1")], store=store)
    kube.kubectl("delete", "namespace", ns)

    result = preimage.restore(backup.id, store=store)

    assert result.ok
    items = {i.key: i for i in result.reports[0].items}
    assert items[f"namespaces/{ns}"].reason.startswith("re-created bare")
    assert kube.get("configmap", "rel-config", ns)["metadata"]["labels"] == {"release": "r1"}
