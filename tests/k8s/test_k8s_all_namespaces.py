"""`k8s://CTX/_all/RESOURCE`: one resource across every namespace (what `kubectl … -A` touches)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.kubernetes


def test_all_namespaces_target_restores_objects_in_every_namespace(kube: Any) -> None:
    """ConfigMaps with one label in two namespaces, deleted with -A, come back in both."""
    ns_a = kube.namespace("alla")
    ns_b = kube.namespace("allb")
    label = f"sweep={kube.tag}"
    for ns in (ns_a, ns_b):
        kube.kubectl("create", "configmap", "settings", "-n", ns, "--from-literal=k=v-" + ns)
        kube.kubectl("label", "configmap", "settings", "-n", ns, label)
    before = {ns: kube.get("configmaps", "settings", ns)["data"] for ns in (ns_a, ns_b)}
    backup = kube.capture(kube.uri("_all", "configmaps", query=f"selector={label}"))
    kube.kubectl("delete", "configmaps", "-A", "-l", label)
    assert not kube.exists("configmaps", "settings", ns_a)
    kube.restore(backup)
    after = {ns: kube.get("configmaps", "settings", ns)["data"] for ns in (ns_a, ns_b)}
    assert after == before
    scored = kube.score(backup)
    assert scored["content"] == 1.0
    assert scored["metadata"] == 1.0


def test_all_namespaces_needs_exactly_one_resource(kube: Any) -> None:
    """`_all` without a resource is refused with the form to use."""
    proc = kube.cli("capture", kube.uri("_all"))
    assert proc.returncode == 2
    assert "_all takes exactly one resource" in proc.stderr
