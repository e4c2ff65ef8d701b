"""Fixtures for the k8s connector tests: the session's real control plane (etcd +
kube-apiserver + kube-controller-manager on loopback; ``control_plane`` in the root
conftest, which the undo bench run shares), a fresh namespace per test, a private
backup store, and the CLI in a real process."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from preimage import Store

CONTEXT = "preimage-test"
LIMITED = "limited"
_counter = itertools.count(1)
_PATHS = {
    "configmap": "/api/v1/namespaces/{ns}/configmaps",
    "deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "namespace": "/api/v1/namespaces",
    "pv": "/api/v1/persistentvolumes",
    "pvc": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "rs": "/apis/apps/v1/namespaces/{ns}/replicasets",
    "service": "/api/v1/namespaces/{ns}/services",
}


CliResult = subprocess.CompletedProcess[str]


class Kube:
    """The session's cluster as one test sees it: its namespace(s), kubectl, the CLI."""

    def __init__(self, cp: Any, home: Path, tag: str) -> None:
        self.cp = cp
        self.home = home
        self.tag = tag  # unique per test: namespace names, labels, IPs derive from it
        self.namespaces: list[str] = []
        self.cleanups: list[Callable[[], None]] = []

    # ------------------------------------------------------------ cluster
    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                context: str = CONTEXT) -> CliResult:
        """Run kubectl against the session cluster."""
        res: CliResult = self.cp.kubectl(*args, input=input, check=False, context=context)
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {res.stderr}")
        return res

    def apply(self, manifest: str) -> None:
        """kubectl apply a YAML manifest (client-side apply, as most scripts do)."""
        self.kubectl("apply", "-f", "-", input=manifest)

    def get(self, what: str, name: str = "", namespace: str | None = None) -> Any:
        """The object (or list) as JSON: straight from the API for common kinds, else kubectl."""
        if what in _PATHS and "," not in what:
            path = _PATHS[what].format(ns=namespace) + (f"/{name}" if name else "")
            status, doc = self.cp.api("GET", path)
            assert status == 200, f"GET {path}: {status} {doc}"
            for item in doc.get("items", []):  # a list's items come without kind
                item.setdefault("kind", doc["kind"].removesuffix("List"))
                item.setdefault("apiVersion", doc["apiVersion"])
            return doc
        args = ["get", what, *([name] if name else []), "-o", "json", "--show-managed-fields"]
        if namespace:
            args += ["-n", namespace]
        return json.loads(self.kubectl(*args).stdout)

    def exists(self, what: str, name: str, namespace: str | None = None) -> bool:
        if what in _PATHS:
            status, _ = self.cp.api("GET", _PATHS[what].format(ns=namespace) + f"/{name}")
            return bool(status == 200)
        args = ["get", what, name, "--ignore-not-found", "-o", "name"]
        if namespace:
            args += ["-n", namespace]
        return bool(self.kubectl(*args).stdout.strip())

    def namespace(self, base: str = "shop", labels: dict[str, str] | None = None) -> str:
        """A new namespace for this test (deleted afterwards)."""
        name = f"{base}-{self.tag}"
        self.kubectl("create", "namespace", name)
        self.namespaces.append(name)
        if labels:
            self.kubectl("label", "namespace", name, *(f"{k}={v}" for k, v in labels.items()))
        return name

    def uri(self, *parts: str, query: str = "", context: str = CONTEXT) -> str:
        """A k8s:// target URI on this cluster."""
        return f"k8s://{context}/" + "/".join(parts) + (f"?{query}" if query else "")

    def wait_for(self, what: str, predicate: Callable[[], bool], timeout: float = 600.0) -> None:
        """Poll until ``predicate`` holds; fail naming ``what``.  A readiness wait: the limit
        only stops a hung test (a controller on a loaded machine may take minutes)."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(0.3)

    def wait_gone(self, what: str, name: str, namespace: str | None = None,
                  timeout: float = 600.0) -> None:
        self.wait_for(f"{what} {name} to be gone",
                      lambda: not self.exists(what, name, namespace), timeout)

    def wait_deployment_settled(self, name: str, namespace: str) -> None:
        """Until the Deployment controller has counted the (pending) pods of ``name``."""
        def settled() -> bool:
            d = self.get("deployment", name, namespace)
            st = d.get("status", {})
            return (st.get("observedGeneration") == d["metadata"]["generation"]
                    and st.get("replicas") == d["spec"].get("replicas", 1)
                    and st.get("updatedReplicas") == d["spec"].get("replicas", 1))
        self.wait_for(f"deployment {name} to settle", settled)

    @staticmethod
    def crd_manifest(group: str) -> str:
        """A namespaced Widget CRD with a status subresource."""
        return f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: widgets.{group}}}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: widgets, singular: widget, kind: Widget}}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {{status: {{}}}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
          status: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
"""

    # ------------------------------------------------------------ preimage
    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.cp.kubeconfig_path),
                "PREIMAGE_HOME": str(self.home), "PREIMAGE_K8S_WAIT": "90", **extra}

    def cli(self, *args: str, env: dict[str, str] | None = None) -> CliResult:
        """Run `preimage ARGS` in a real process against this cluster and store."""
        return subprocess.run(
            [sys.executable, "-m", "preimage", *args],
            capture_output=True, text=True, env=env or self.env(), timeout=300,
        )

    def cli_ok(self, *args: str) -> CliResult:
        proc = self.cli(*args)
        assert proc.returncode == 0, f"preimage {' '.join(args)}: {proc.stderr}{proc.stdout}"
        return proc

    def capture(self, *uris: str) -> str:
        """`preimage capture` through the CLI; the backup id."""
        return self.cli_ok("capture", *uris).stdout.strip().splitlines()[-1]

    def restore(self, backup_id: str, *args: str) -> Any:
        """`preimage restore --json`; the decoded report (asserts exit 0)."""
        return json.loads(self.cli_ok("restore", backup_id, "--json", *args).stdout)

    def score(self, backup_id: str) -> Any:
        """`preimage score --json`."""
        return json.loads(self.cli_ok("score", backup_id, "--json", "--show", "50").stdout)

    # ------------------------------------------------------------ comparing
    @staticmethod
    def comparable(obj: dict[str, Any]) -> tuple[Any, Any]:
        """An object's content and metadata leaves (server-class leaves dropped), with the
        lists whose order the server sets in key order, as the meter compares them (the
        API server orders ``managedFields`` by time)."""
        import copy

        from preimage.snapshot_schemas.kubernetes import KEYED_LISTS, split_object

        body, meta, _ = copy.deepcopy(split_object(obj))
        for doc in (body, meta):
            for path, key in KEYED_LISTS.items():
                parent: Any = doc
                for part in path[:-1]:
                    parent = parent.get(part) if isinstance(parent, dict) else None
                entries = parent.get(path[-1]) if isinstance(parent, dict) else None
                if isinstance(entries, list):
                    parent[path[-1]] = sorted(
                        entries, key=lambda e: [str(e.get(k)) for k in key])
        return body, meta

    def objects(self, kinds: str, namespace: str | None = None) -> dict[str, dict[str, Any]]:
        """``kubectl get KINDS -o json`` items by kind/namespace/name."""
        out = {}
        for obj in self.get(kinds, namespace=namespace).get("items", []):
            md = obj["metadata"]
            out[f"{obj['kind']}/{md.get('namespace', '')}/{md['name']}"] = obj
        return out

    def assert_same_objects(self, before: dict[str, dict[str, Any]],
                            after: dict[str, dict[str, Any]],
                            keys: list[str] | None = None) -> None:
        """kubectl's view of each object matches apart from server-class fields."""
        for key in keys or sorted(before):
            assert key in after, f"{key} was not restored"
            assert self.comparable(after[key]) == self.comparable(before[key]), key


@pytest.fixture
def kube(control_plane: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kube]:
    """The session cluster with a private store; namespaces made here are deleted after."""
    home = tmp_path / "preimage-home"
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig_path))
    monkeypatch.setenv("PREIMAGE_HOME", str(home))
    monkeypatch.setenv("PREIMAGE_K8S_WAIT", "90")
    k = Kube(control_plane, home, f"{next(_counter)}-{os.getpid() % 1000}")
    yield k
    for cleanup in reversed(k.cleanups):
        cleanup()
    for ns in k.namespaces:
        k.kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)


@pytest.fixture
def store(kube: Kube) -> Iterator[Store]:
    """The test's backup store (the CLI's PREIMAGE_HOME)."""
    st = Store(kube.home)
    yield st
    st.close()


