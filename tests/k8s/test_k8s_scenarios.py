"""The K-* regret scenarios, end to end through the CLI against the real control plane:
seed, `preimage capture`, the destructive call, `preimage restore`, `preimage score`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.k8s.conftest import Kube

pytestmark = [pytest.mark.kubernetes]


def assert_perfect(score: dict[str, Any]) -> None:
    assert score["content"] == 1.0, score["differences"]
    assert score["metadata"] == 1.0, score["differences"]


def test_delete_namespace(kube: Kube) -> None:
    """K-delete-namespace: `kubectl delete namespace` is undone, fixed clusterIP and nodePort kept."""
    ns = kube.namespace("shop", labels={"team": "payments"})
    kube.kubectl("annotate", "namespace", ns, "owner=alice@example.com")
    n = int(kube.tag.split("-")[0])
    cluster_ip, node_port = f"10.0.0.{100 + n % 100}", 30000 + n
    kube.apply(f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: settings, namespace: {ns}, labels: {{tier: web}}, annotations: {{note: hand-tuned}}}}
data: {{timeout: "30", mode: strict}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: feature-flags, namespace: {ns}}}
data: {{checkout-v2: "on"}}
---
apiVersion: v1
kind: Secret
metadata: {{name: db-credentials, namespace: {ns}}}
type: Opaque
stringData: {{password: s3cret}}
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: {ns}, labels: {{app: web}}}}
spec:
  type: NodePort
  clusterIP: {cluster_ip}
  selector: {{app: web}}
  ports: [{{name: http, port: 80, targetPort: 8080, nodePort: {node_port}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {ns}, labels: {{app: web}}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: web, image: registry.invalid/web:1.4}}]}}
""")
    kube.wait_deployment_settled("web", ns)
    kinds = "configmaps,secrets,services,deployments,replicasets,serviceaccounts"
    before = kube.objects(kinds, ns)
    backup = kube.capture(kube.uri(ns))

    kube.kubectl("delete", "namespace", ns, "--wait=false")  # the agent's call
    result = kube.restore(backup)  # waits for the terminating namespace to go

    assert result["ok"]
    assert_perfect(kube.score(backup))
    after = kube.objects(kinds, ns)
    kube.assert_same_objects(before, after)
    svc = kube.get("service", "web", ns)
    assert svc["spec"]["clusterIP"] == cluster_ip
    assert svc["spec"]["ports"][0]["nodePort"] == node_port
    namespace = kube.get("namespace", ns)
    assert namespace["metadata"]["labels"]["team"] == "payments"
    assert namespace["metadata"]["annotations"]["owner"] == "alice@example.com"
    remapped = {r["key"] for r in result["reports"][0]["remaps"] if r["field"] == "metadata.uid"}
    assert f"configmaps/{ns}/settings" in remapped


def test_apply_overwrite(kube: Kube) -> None:
    """K-apply-overwrite: a re-applied release manifest loses to the hand edits it reset."""
    ns = kube.namespace("release")
    manifest = f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: app-config, namespace: {ns}, labels: {{app: shop}}}}
data: {{log_level: info, workers: "4"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: untouched, namespace: {ns}}}
data: {{a: b}}
"""
    kube.apply(manifest)
    # the operator's hand edit (kubectl edit)
    kube.kubectl("patch", "configmap", "app-config", "-n", ns, "--field-manager=kubectl-edit",
                 "-p", '{"data":{"log_level":"debug","workers":"16"},'
                       '"metadata":{"annotations":{"edited-by":"oncall"}}}')
    before = kube.get("configmap", "app-config", ns)
    backup = kube.capture(kube.uri(ns))

    kube.apply(manifest.replace("{app: shop}", "{app: shop, version: v2}"))  # the agent's call
    assert kube.get("configmap", "app-config", ns)["data"]["log_level"] == "info"

    refused = kube.cli("restore", backup, "--policy", "refuse")
    assert refused.returncode == 2 and "changed since the capture" in refused.stderr
    kept = kube.restore(backup, "--policy", "merge", "--only",
                        kube.uri(ns, "configmaps", "app-config"))
    assert {i["key"]: i["outcome"] for i in kept["reports"][0]["items"]} == {
        f"configmaps/{ns}/app-config": "skipped"}
    assert kube.get("configmap", "app-config", ns)["data"]["log_level"] == "info"

    result = kube.restore(backup)
    outcomes = {i["key"]: i["outcome"] for i in result["reports"][0]["items"]}
    assert outcomes[f"configmaps/{ns}/app-config"] == "restored"
    assert outcomes[f"configmaps/{ns}/untouched"] == "unchanged"
    assert_perfect(kube.score(backup))
    after = kube.get("configmap", "app-config", ns)
    assert after["metadata"]["uid"] == before["metadata"]["uid"]  # updated in place
    assert kube.comparable(after) == kube.comparable(before)
    managers = [e["manager"] for e in after["metadata"]["managedFields"]]
    assert "kubectl-edit" in managers and "preimage" not in managers


def test_delete_pv(kube: Kube) -> None:
    """K-delete-pv: deleted PersistentVolumes come back and their claims are Bound to them again."""
    ns = kube.namespace("data")
    label = f"test-{kube.tag}"
    docs = []
    for i, policy in enumerate(("Retain", "Delete")):
        docs.append(f"""
apiVersion: v1
kind: PersistentVolume
metadata: {{name: pv-{i}-{kube.tag}, labels: {{suite: {label}}}}}
spec:
  capacity: {{storage: 1Gi}}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: {policy}
  storageClassName: manual
  hostPath: {{path: /tmp/preimage-pv-{i}}}
  claimRef: {{namespace: {ns}, name: data-{i}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data-{i}, namespace: {ns}}}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  volumeName: pv-{i}-{kube.tag}
  resources: {{requests: {{storage: 1Gi}}}}
""")
    kube.apply("\n---\n".join(docs))
    kube.cleanups.append(lambda: kube.kubectl("delete", "pv", "-l", f"suite={label}",
                                              "--wait=false", check=False))

    def bound() -> bool:
        return all(kube.get("pvc", f"data-{i}", ns)["status"].get("phase") == "Bound"
                   for i in range(2))
    kube.wait_for("claims to bind", bound)
    kube.wait_for("volumes to bind", lambda: all(
        p["status"].get("phase") == "Bound" for p in kube.get("pv", namespace=None)["items"]
        if p["metadata"].get("labels", {}).get("suite") == label))
    before = {p["metadata"]["name"]: p for p in kube.get("pv")["items"]
              if p["metadata"].get("labels", {}).get("suite") == label}
    backup = kube.capture(kube.uri("_", "persistentvolumes", query=f"selector=suite={label}"))

    # the agent's `kubectl delete pv --all`; the pv-protection finalizer holds bound volumes,
    # so it is forced away as people do with volumes stuck in Terminating
    kube.kubectl("delete", "pv", "-l", f"suite={label}", "--wait=false")
    for name in before:
        kube.kubectl("patch", "pv", name, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
        kube.wait_gone("pv", name)

    result = kube.restore(backup)

    assert result["ok"]
    kube.wait_for("claims to be Bound again", bound)
    for i in range(2):
        claim = kube.get("pvc", f"data-{i}", ns)
        volume = kube.get("pv", f"pv-{i}-{kube.tag}")
        assert claim["spec"]["volumeName"] == volume["metadata"]["name"]
        assert volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
        assert volume["spec"]["persistentVolumeReclaimPolicy"] == ("Retain", "Delete")[i]
    assert_perfect(kube.score(backup))
    after = {p["metadata"]["name"]: p for p in kube.get("pv")["items"] if p["metadata"].get(
        "labels", {}).get("suite") == label}
    for name, obj in before.items():
        assert kube.comparable(after[name]) == kube.comparable(obj), name


def test_uninstall_release(kube: Kube) -> None:
    """K-uninstall-release: every object with the release label comes back, PVC re-bound to its PV."""
    ns = kube.namespace("apps")
    rel = {"app.kubernetes.io/instance": "shop", "app.kubernetes.io/managed-by": "Helm"}
    labels = "{" + ", ".join(f"{k}: {v}" for k, v in rel.items()) + "}"
    pv = f"shop-data-{kube.tag}"
    kube.apply(f"""
apiVersion: v1
kind: PersistentVolume
metadata: {{name: {pv}}}
spec:
  capacity: {{storage: 2Gi}}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: manual
  hostPath: {{path: /tmp/preimage-shop}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: shop-data, namespace: {ns}, labels: {labels}}}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  resources: {{requests: {{storage: 2Gi}}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: shop-config, namespace: {ns}, labels: {labels},
           annotations: {{meta.helm.sh/release-name: shop, meta.helm.sh/release-namespace: {ns}}}}}
data: {{db: postgres://db/shop}}
---
apiVersion: v1
kind: Secret
metadata: {{name: shop-token, namespace: {ns}, labels: {labels}}}
stringData: {{token: abc123}}
---
apiVersion: v1
kind: Service
metadata: {{name: shop, namespace: {ns}, labels: {labels}}}
spec:
  selector: {{app.kubernetes.io/instance: shop}}
  ports: [{{port: 8080}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: shop, namespace: {ns}, labels: {labels}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app.kubernetes.io/instance: shop}}}}
  template:
    metadata: {{labels: {labels}}}
    spec: {{containers: [{{name: shop, image: registry.invalid/shop:2.0}}]}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: not-in-release, namespace: {ns}}}
data: {{keep: me}}
""")
    kube.cleanups.append(lambda: kube.kubectl("delete", "pv", pv, "--wait=false", check=False))
    kube.wait_for("claim to bind",
                  lambda: kube.get("pvc", "shop-data", ns)["status"].get("phase") == "Bound")
    kube.wait_deployment_settled("shop", ns)
    selector = "app.kubernetes.io/instance=shop"
    before = kube.objects("configmaps,secrets,services,deployments,pvc", ns)
    backup = kube.capture(kube.uri(ns, query=f"selector={selector}"))

    kube.kubectl("delete", "deployments,services,configmaps,secrets,pvc", "-n", ns,
                 "-l", selector, "--wait=true")  # what `helm uninstall shop` does
    kube.wait_for("volume to be Released",
                  lambda: kube.get("pv", pv)["status"].get("phase") == "Released")

    result = kube.restore(backup)

    assert result["ok"]
    kube.wait_for("claim to be Bound again",
                  lambda: kube.get("pvc", "shop-data", ns)["status"].get("phase") == "Bound")
    claim = kube.get("pvc", "shop-data", ns)
    assert claim["spec"]["volumeName"] == pv
    assert kube.get("pv", pv)["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
    assert_perfect(kube.score(backup))
    # kubectl's view is compared once the controller has acted on the restored Deployment
    # (as it had before the capture): its annotations and status are the controller's.
    kube.wait_deployment_settled("shop", ns)
    after = kube.objects("configmaps,secrets,services,deployments,pvc", ns)
    release_keys = [k for k, o in before.items()
                    if o["metadata"].get("labels", {}).get("app.kubernetes.io/instance") == "shop"]
    assert len(release_keys) == 5
    kube.assert_same_objects(before, after, release_keys)
    assert kube.get("configmap", "not-in-release", ns)["data"] == {"keep": "me"}


def test_delete_custom_resources(kube: Kube) -> None:
    """K-delete-custom-resources: deleted custom resources come back with their status."""
    ns = kube.namespace("crs")
    group = f"g{kube.tag.replace('-', '')}.example.com"
    kube.apply(kube.crd_manifest(group))
    kube.wait_for("CRD to be served", lambda: kube.kubectl(
        "get", f"widgets.{group}", "-n", ns, check=False).returncode == 0)
    for i, size in enumerate(("small", "large")):
        kube.apply(f"""
apiVersion: {group}/v1
kind: Widget
metadata: {{name: w{i}, namespace: {ns}, labels: {{size: {size}}}, finalizers: [{group}/cleanup]}}
spec: {{size: {size}, replicas: {i + 1}}}
""")
        kube.kubectl("patch", f"widgets.{group}", f"w{i}", "-n", ns, "--subresource=status",
                     "--type=merge", "-p",
                     f'{{"status":{{"phase":"Ready","observed":{i + 1},"conditions":[{{"type":'
                     f'"Ready","status":"True","reason":"Provisioned","lastTransitionTime":'
                     f'"2024-01-0{i + 1}T00:00:00Z"}}]}}}}')
    before = kube.objects(f"widgets.{group}", ns)
    backup = kube.capture(kube.uri(ns))

    kube.kubectl("delete", f"widgets.{group}", "--all", "-n", ns, "--wait=false")
    for i in range(2):  # the operator's finalizer runs
        kube.kubectl("patch", f"widgets.{group}", f"w{i}", "-n", ns, "--type=merge",
                     "-p", '{"metadata":{"finalizers":null}}')
    kube.wait_for("widgets to be gone", lambda: not kube.get(f"widgets.{group}",
                                                               namespace=ns)["items"])

    result = kube.restore(backup)

    assert result["ok"]
    assert_perfect(kube.score(backup))
    after = kube.objects(f"widgets.{group}", ns)
    kube.assert_same_objects(before, after)
    assert after[f"Widget/{ns}/w1"]["status"]["observed"] == 2


def test_owner_chain(kube: Kube) -> None:
    """K-owner-chain: a deleted Deployment and its ReplicaSets return owned by the new Deployment."""
    ns = kube.namespace("chain")
    kube.kubectl("create", "deployment", "api", "-n", ns, "--image=registry.invalid/api:1",
                 "--replicas=2")
    # pods never become ready without nodes: Recreate lets the rollout finish anyway
    kube.kubectl("patch", "deployment", "api", "-n", ns, "-p",
                 '{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}')
    kube.wait_deployment_settled("api", ns)
    kube.kubectl("set", "image", "deployment/api", "-n", ns, "api=registry.invalid/api:2")
    kube.wait_for("the second ReplicaSet", lambda: len(kube.get("rs", namespace=ns)["items"]) == 2)
    kube.wait_deployment_settled("api", ns)
    before = kube.objects("deployments,replicasets", ns)
    revisions = sorted(o["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                       for o in before.values() if o["kind"] == "ReplicaSet")
    assert revisions == ["1", "2"]
    backup = kube.capture(kube.uri(ns, "deployments", "api"))

    kube.kubectl("delete", "deployment", "api", "-n", ns)  # cascades to its ReplicaSets
    kube.wait_for("ReplicaSets to be collected", lambda: not kube.get("rs", namespace=ns)["items"])

    result = kube.restore(backup)

    assert result["ok"]
    deployment = kube.get("deployment", "api", ns)
    for rs in kube.get("rs", namespace=ns)["items"]:
        owners = rs["metadata"]["ownerReferences"]
        assert [o["uid"] for o in owners] == [deployment["metadata"]["uid"]]
    remaps = {(r["key"], r["old"]): r["new"] for r in result["reports"][0]["remaps"]}
    old_uid = before[f"Deployment/{ns}/api"]["metadata"]["uid"]
    assert remaps[(f"deployments.apps/{ns}/api", old_uid)] == deployment["metadata"]["uid"]
    kube.wait_deployment_settled("api", ns)
    assert_perfect(kube.score(backup))
    kube.assert_same_objects(before, kube.objects("deployments,replicasets", ns))
    history = kube.kubectl("rollout", "history", "deployment/api", "-n", ns).stdout
    assert "1" in history and "2" in history
