"""The k8s connector passes the conformance kit against the real control plane."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from preimage.testing import ConnectorContract

if TYPE_CHECKING:
    from tests.k8s.conftest import Kube

pytestmark = [pytest.mark.kubernetes]


class TestKubernetesConnectorContract(ConnectorContract):
    """A namespace with ConfigMaps, a Secret, a Service, a Role and a ServiceAccount."""

    connector = "k8s"

    @pytest.fixture
    def observe(self, kube: Kube) -> Callable[[str], dict[str, dict[str, Any]]]:
        """kubectl (not the connector): every object of the kinds seeded, by kind and name,
        with its labels, annotations and body (what the server assigns left out); a
        RESOURCE/NAME URI: that object."""
        kinds = "configmaps,secrets,services,serviceaccounts,roles"
        assigned = ("uid", "resourceVersion", "creationTimestamp", "managedFields",
                    "generation")

        def read(uri: str) -> dict[str, dict[str, Any]]:
            ns, _, rest = uri.split("/", 3)[3].partition("/")
            got = json.loads(kube.kubectl("get", kinds, "-n", ns, "-o", "json").stdout)
            items: dict[str, dict[str, Any]] = {}
            for obj in got["items"]:
                meta = obj.pop("metadata")
                obj.pop("status", None)
                kind, name = obj["kind"], meta["name"]
                if rest and rest != f"{kind.lower()}s/{name}":
                    continue
                items[f"{kind} {name}"] = {
                    "labels": meta.get("labels", {}), "annotations": meta.get("annotations", {}),
                    "body": obj, "other": {k: v for k, v in meta.items()
                                           if k not in (*assigned, "labels", "annotations")}}
            return items

        return read

    @pytest.fixture
    def elsewhere_uri(self, kube: Kube) -> str:
        """Another namespace, not there yet (deleted afterwards)."""
        name = f"elsewhere-{kube.tag}"
        kube.namespaces.append(name)
        return kube.uri(name)

    @pytest.fixture
    def target_uri(self, kube: Kube) -> str:
        ns = kube.namespace("contract", labels={"env": "test"})
        kube.apply(f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: a, namespace: {ns}, labels: {{app: x}}}}
data: {{k: v}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: b, namespace: {ns}, annotations: {{owner: ops}}}}
data: {{level: info}}
---
apiVersion: v1
kind: Secret
metadata: {{name: s, namespace: {ns}}}
stringData: {{password: hunter2}}
---
apiVersion: v1
kind: Service
metadata: {{name: api, namespace: {ns}}}
spec: {{selector: {{app: x}}, ports: [{{port: 80}}]}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: robot, namespace: {ns}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: reader, namespace: {ns}}}
rules: [{{apiGroups: [""], resources: [configmaps], verbs: [get, list]}}]
""")
        return kube.uri(ns)

    @pytest.fixture
    def mutate(self, kube: Kube) -> Callable[[str], None]:
        def damage(uri: str) -> None:
            ns = uri.rsplit("/", 1)[-1]
            kube.kubectl("delete", "configmap", "a", "-n", ns)
            kube.kubectl("patch", "configmap", "b", "-n", ns, "--type=merge", "-p",
                         '{"data":{"level":"debug"},"metadata":{"labels":{"edited":"yes"}}}')
            kube.kubectl("create", "configmap", "added", "-n", ns, "--from-literal=x=1")
            kube.kubectl("delete", "secret", "s", "-n", ns)
            kube.kubectl("annotate", "service", "api", "-n", ns, "note=changed")

        return damage

    @pytest.fixture
    def malformed_uris(self, kube: Kube) -> list[str]:
        return [kube.uri("shop").replace("k8s://", "k8s://user@"),
                kube.uri("shop", "configmaps", "a", "extra"),
                kube.uri("shop", query="owned=perhaps")]

    @pytest.fixture
    def sub_scope(self, target_uri: str) -> str:
        """ConfigMap a, which the mutation deleted; the Secret and ConfigMap b stay as left."""
        return f"{target_uri}/configmaps/a"

    @pytest.fixture
    def absent_uri(self, kube: Kube) -> str:
        ns = kube.namespace("absent")
        return kube.uri(ns, "configmaps", "not-yet")

    @pytest.fixture
    def create(self, kube: Kube) -> Callable[[str], None]:
        def make(uri: str) -> None:
            ns = uri.split("/")[3]
            kube.kubectl("create", "configmap", "not-yet", "-n", ns, "--from-literal=k=v")

        return make

    @pytest.fixture
    def unreachable_uri(
        self, tmp_path: Path, dead_port: int, monkeypatch: pytest.MonkeyPatch
    ) -> str:
        """A second kubeconfig file with a context whose API server is not listening."""
        dead = tmp_path / "dead-kubeconfig"
        dead.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: dead, cluster: {{server: "https://127.0.0.1:{dead_port}",
             insecure-skip-tls-verify: true}}}}]
users: [{{name: nobody, user: {{token: none}}}}]
contexts: [{{name: dead, context: {{cluster: dead, user: nobody}}}}]
""")
        import os

        monkeypatch.setenv("KUBECONFIG", f"{os.environ['KUBECONFIG']}:{dead}")
        return "k8s://dead/shop"
