"""Capture and restore of a namespace holding 1,000 objects, next to kubectl get / create.

Usage: python benchmarks/bench_kubernetes.py [--objects N] [--json]

Starts a throw-away control plane (fixtures/kubernetes, etcd + kube-apiserver
+ kube-controller-manager on loopback), fills namespace ``bench`` with N
objects (default 1,000: ConfigMaps, Secrets, Services, ServiceAccounts, Roles
and Deployments — whose ReplicaSets come on top), then times, each as a
separate process whose peak RSS is read with GNU time:

  capture:  preimage capture k8s://preimage-test/bench
            kubectl get <every listed type> -n bench -o json
  restore:  (after kubectl delete namespace bench) preimage restore ID
            (after kubectl delete namespace bench) kubectl create -f <that dump,
            server fields and status stripped>
  score:    preimage score ID

The preimage restore includes its undo capture and waiting for nothing (the
namespace is gone first).  The kubectl pair is the floor a script gets: no
status, no managedFields, new clusterIPs, no owner rewiring.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402

NS = "bench"
KINDS = "configmaps,secrets,services,serviceaccounts,roles,deployments,replicasets"


def load_fixture() -> Any:
    """The launcher this benchmark starts."""
    return _common.load_fixture('kubernetes/control_plane.py')


run = _common.run


def seed(total: int) -> str:
    """A multi-document manifest of ``total`` objects in namespace bench."""
    shares = {"cm": 0.5, "secret": 0.25, "svc": 0.1, "sa": 0.1, "role": 0.04}
    counts = {k: int(total * v) for k, v in shares.items()}
    counts["deploy"] = total - sum(counts.values())
    docs = [f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}, labels: {{bench: 'yes'}}}}"]
    docs += [
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}, namespace: {NS}, "
        f"labels: {{app: a{i % 7}}}, annotations: {{note: n{i}}}}}\n"
        f"data: {{key: value-{i}, other: '{'x' * 200}'}}"
        for i in range(counts["cm"])
    ]
    docs += [
        f"apiVersion: v1\nkind: Secret\nmetadata: {{name: s-{i}, namespace: {NS}}}\n"
        f"stringData: {{password: p{i}}}"
        for i in range(counts["secret"])
    ]
    docs += [
        f"apiVersion: v1\nkind: Service\nmetadata: {{name: svc-{i}, namespace: {NS}}}\n"
        f"spec: {{selector: {{app: a{i}}}, ports: [{{port: 80}}]}}"
        for i in range(counts["svc"])
    ]
    docs += [
        f"apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: sa-{i}, namespace: {NS}}}"
        for i in range(counts["sa"])
    ]
    docs += [
        f"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: r-{i}, "
        f"namespace: {NS}}}\nrules: [{{apiGroups: [''], resources: [configmaps], "
        f"verbs: [get]}}]"
        for i in range(counts["role"])
    ]
    docs += [
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d-{i}, namespace: {NS}}}\n"
        f"spec:\n  replicas: 1\n  selector: {{matchLabels: {{app: d{i}}}}}\n"
        f"  template:\n    metadata: {{labels: {{app: d{i}}}}}\n"
        f"    spec: {{containers: [{{name: c, image: registry.invalid/d:{i}}}]}}"
        for i in range(counts["deploy"])
    ]
    return "\n---\n".join(docs) + "\n"


def strip_for_create(dump: dict[str, Any]) -> bytes:
    """What a script does to re-create from `kubectl get -o json`: drop server fields."""
    items = []
    for obj in dump["items"]:
        md = obj["metadata"]
        if md.get("ownerReferences") or md["name"] in ("default", "kube-root-ca.crt"):
            continue
        for k in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
            md.pop(k, None)
        obj.pop("status", None)
        if obj["kind"] == "Service":
            obj["spec"].pop("clusterIP", None)
            obj["spec"].pop("clusterIPs", None)
        items.append(obj)
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    bin_dir = subprocess.run(["bash", str(ROOT / "fixtures/kubernetes/build.sh")],
                             capture_output=True, text=True, check=True).stdout.split()[-1]
    fixture = load_fixture()
    results: dict[str, Any] = {"objects": args.objects}
    with fixture.ControlPlane(bin_dir) as cp, tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "KUBECONFIG": str(cp.kubeconfig_path),
               "PREIMAGE_HOME": str(Path(tmp) / "home"), "PREIMAGE_K8S_WAIT": "300"}
        kubectl = [str(Path(bin_dir) / "kubectl")]
        preimage = [sys.executable, "-m", "preimage"]
        results["startup_s"] = round(cp.startup_seconds, 1)

        t = time.perf_counter()
        run([*kubectl, "create", "-f", "-"], env, seed(args.objects).encode())
        results["seed_s"] = round(time.perf_counter() - t, 1)
        time.sleep(5)  # let the controllers make ReplicaSets and settle statuses

        def delete_namespace() -> None:
            run([*kubectl, "delete", "namespace", NS, "--wait=true", "--timeout=300s"], env)

        secs, rss, out = run([*preimage, "capture", f"k8s://preimage-test/{NS}", "--json"], env)
        captured = json.loads(out)
        results["preimage_capture"] = {"s": round(secs, 2), "rss_mib": rss,
                                       "items": captured["items"],
                                       "stored_bytes": captured["stored_bytes"]}
        secs, rss, dump = run([*kubectl, "get", KINDS, "-n", NS, "-o", "json"], env)
        results["kubectl_get"] = {"s": round(secs, 2), "rss_mib": rss,
                                  "bytes": len(dump)}

        delete_namespace()
        secs, rss, out = run([*preimage, "restore", captured["id"], "--json"], env)
        report = json.loads(out)
        results["preimage_restore"] = {
            "s": round(secs, 2), "rss_mib": rss, "ok": report["ok"],
            "restored": sum(1 for r in report["reports"] for i in r["items"]
                            if i["outcome"] == "restored"),
        }
        secs, rss, out = run([*preimage, "score", captured["id"], "--json", "--show", "5"], env)
        scored = json.loads(out)
        results["preimage_score"] = {"s": round(secs, 2), "rss_mib": rss,
                                     "content": scored["content"],
                                     "metadata": scored["metadata"],
                                     "server": round(scored["server"], 4)}

        delete_namespace()
        run([*kubectl, "create", "namespace", NS], env)
        secs, rss, _ = run([*kubectl, "create", "-f", "-"], env, strip_for_create(json.loads(dump)))
        results["kubectl_create"] = {"s": round(secs, 2), "rss_mib": rss}

    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"namespace with {args.objects} objects (+ ReplicaSets, namespace, defaults); "
          f"control plane up in {results['startup_s']}s, seeded in {results['seed_s']}s")
    pc, kg = results["preimage_capture"], results["kubectl_get"]
    pr, kc = results["preimage_restore"], results["kubectl_create"]
    ps = results["preimage_score"]
    print(f"{'':22}{'seconds':>9}{'peak MiB':>10}")
    print(f"{'preimage capture':22}{pc['s']:>9}{pc['rss_mib']:>10}   {pc['items']} items, "
          f"{pc['stored_bytes']} bytes stored")
    print(f"{'kubectl get -o json':22}{kg['s']:>9}{kg['rss_mib']:>10}   {kg['bytes']} bytes")
    print(f"{'preimage restore':22}{pr['s']:>9}{pr['rss_mib']:>10}   {pr['restored']} restored, "
          f"ok={pr['ok']} (includes the undo capture)")
    print(f"{'kubectl create -f':22}{kc['s']:>9}{kc['rss_mib']:>10}   (no status, managedFields, "
          "IPs or owners)")
    print(f"{'preimage score':22}{ps['s']:>9}{ps['rss_mib']:>10}   content {ps['content']}, "
          f"metadata {ps['metadata']}, server {ps['server']}")


if __name__ == "__main__":
    main()
