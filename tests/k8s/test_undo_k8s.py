"""Undo one kubectl call on a real API server: objects by identity, fields by path."""

from __future__ import annotations

import json
from typing import Any

import pytest

import preimage
from preimage import Store
from preimage._undo import capture_after

pytestmark = pytest.mark.kubernetes


def test_bad_apply_reverted_later_relabel_and_new_object_kept(kube: Any) -> None:
    """The agent patches two ConfigMaps and deletes a Secret; a person then labels one
    ConfigMap, sets again a key the agent set in the other, and creates a third.  `preimage
    undo` brings the first one's data and the Secret back and keeps the label and the new
    object; the other ConfigMap is a conflict, left as the person left it (and written as
    before the call with --take-backup)."""
    ns = kube.namespace("undo")
    kube.apply(f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: features, namespace: {ns}}}
data: {{autoscaling: enabled, max-scale: "250", region: eu}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: limits, namespace: {ns}}}
data: {{cpu: "2", memory: 4Gi}}
---
apiVersion: v1
kind: Secret
metadata: {{name: token, namespace: {ns}}}
stringData: {{token: abc}}
""")
    with Store() as store:
        pre = preimage.capture([kube.uri(ns)], store=store, kind="layer", session="k")
        # the agent's call
        kube.kubectl("-n", ns, "patch", "configmap", "features", "--type", "merge", "-p",
                     '{"data":{"autoscaling":"disabled","max-scale":"10"}}')
        kube.kubectl("-n", ns, "patch", "configmap", "limits", "--type", "merge", "-p",
                     '{"data":{"cpu":"8"}}')
        kube.kubectl("-n", ns, "delete", "secret", "token")
        capture_after(pre.id, store=store)
        # a person, after it
        kube.kubectl("-n", ns, "label", "configmap", "features", "reviewed=yes")
        kube.kubectl("-n", ns, "patch", "configmap", "limits", "--type", "merge", "-p",
                     '{"data":{"cpu":"4"}}')
        kube.kubectl("-n", ns, "create", "configmap", "later", "--from-literal=a=b")
        result = preimage.undo(pre.id, store=store)
        assert kube.get("configmap", "limits", ns)["data"]["cpu"] == "4"
        forced = preimage.undo(pre.id, store=store, resolution="take-backup")
    assert forced.conflicts == 0
    assert kube.get("configmap", "limits", ns)["data"] == {"cpu": "2", "memory": "4Gi"}
    assert result.ok and result.conflicts == 1, json.dumps(result.to_dict()["plans"])[:2000]
    cm = kube.get("configmap", "features", ns)
    assert cm["data"] == {"autoscaling": "enabled", "max-scale": "250", "region": "eu"}
    assert cm["metadata"]["labels"]["reviewed"] == "yes"
    assert kube.exists("secret", "token", ns) and kube.exists("configmap", "later", ns)
    (conflict,) = result.plans[0].conflicts
    assert conflict.label == f"ConfigMap {ns}/limits"
    assert any(c.path.endswith("cpu") and (c.theirs, c.live) == ("8", "4")
               for c in conflict.conflicts)
