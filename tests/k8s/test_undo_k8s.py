"""Undo one kubectl call on a real API server: objects by identity, fields by path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import preimage
from preimage import Store
from preimage.engine.undo import capture_after

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
    assert conflict.label == f"configmaps/{ns}/limits"
    assert any(c.path.endswith("cpu") and (c.theirs, c.live) == ("8", "4")
               for c in conflict.conflicts)


def test_undo_of_a_namespace_deletion_still_under_way_brings_back_every_object(
        kube: Any) -> None:
    """``kubectl delete namespace --wait=false``: the call returns while the namespace is
    still Terminating and its objects still exist (a finalizer holds one), so the capture
    right after the call sees them.  They are on their way out all the same: undo counts
    every object in a namespace being deleted as deleted by the call, waits for the
    deletion to finish and brings the namespace back with all of them — not only the
    namespace's phase."""
    ns = kube.namespace("leaving")
    kube.apply(f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: held, namespace: {ns}, finalizers: [preimage.test/hold],
           labels: {{tier: backend}}}}
data: {{region: eu, replicas: "3"}}
---
apiVersion: v1
kind: Secret
metadata: {{name: db, namespace: {ns}, annotations: {{owner: payments}}}}
stringData: {{password: s3cret}}
""")
    release = ["-n", ns, "patch", "configmap", "held", "--type", "merge",
               "-p", '{"metadata":{"finalizers":null}}']
    with Store() as store:
        pre = preimage.capture([kube.uri(ns)], store=store, kind="layer", session="k")
        kube.kubectl("delete", "namespace", ns, "--wait=false")
        kube.wait_for("the held ConfigMap marked for deletion", lambda: bool(
            kube.get("configmap", "held", ns)["metadata"].get("deletionTimestamp")))
        capture_after(pre.id, store=store)
        kube.kubectl(*release)  # the deletion finishes
        result = preimage.undo(pre.id, store=store)
    try:
        assert result.ok, json.dumps(result.to_dict()["plans"])[:2000]
        assert not kube.get("namespace", ns).get("metadata", {}).get("deletionTimestamp")
        held = kube.get("configmap", "held", ns)
        assert held["data"] == {"region": "eu", "replicas": "3"}
        assert held["metadata"]["labels"] == {"tier": "backend"}
        secret = kube.get("secret", "db", ns)
        assert secret["metadata"]["annotations"]["owner"] == "payments"
    finally:
        kube.kubectl(*release, check=False)


def _hook(kube: Any, event: str, command: str, cwd: Path, **extra: Any) -> Any:
    """One Claude Code hook event, through `preimage hook` in its own process."""
    payload = json.dumps({"hook_event_name": event, "tool_name": "Bash",
                          "tool_input": {"command": command}, "cwd": str(cwd),
                          "session_id": "kube-1", "tool_use_id": "toolu_kube", **extra})
    proc = subprocess.run([sys.executable, "-m", "preimage", "hook", "claude-code"],
                          input=payload, capture_output=True, text=True, env=kube.env(),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def test_hook_flow_delete_by_selector_undone_by_call_id(kube: Any, tmp_path: Path) -> None:
    """`kubectl delete configmap -l app=web` through the hook processes: PreToolUse backs
    the namespace's ConfigMaps up, PostToolUse captures them again; after a person
    creates a ConfigMap with the same label, edits another one and creates one the call
    deleted again, `preimage undo` by the call's id brings the deleted ones back, keeps
    the person's work, and reports the re-created one as a conflict left as it is."""
    ns = kube.namespace("undohook")
    kube.apply(f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: web-config, namespace: {ns}, labels: {{app: web}}}}
data: {{THEME: dark}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: web-cache, namespace: {ns}, labels: {{app: web}}}}
data: {{size: 512Mi}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: api-config, namespace: {ns}, labels: {{app: api}}}}
data: {{DB: "postgres://db:5432/app"}}
""")
    command = f"kubectl -n {ns} delete configmap -l app=web"
    answer = _hook(kube, "PreToolUse", command, tmp_path)
    assert "preimage backup" in json.dumps(answer), answer
    kube.kubectl("-n", ns, "delete", "configmap", "-l", "app=web")
    _hook(kube, "PostToolUse", command, tmp_path, tool_response={"stdout": "deleted"})
    # a person, after the agent
    kube.kubectl("-n", ns, "create", "configmap", "web-flags", "--from-literal=beta=on")
    kube.kubectl("-n", ns, "label", "configmap", "web-flags", "app=web")
    kube.kubectl("-n", ns, "patch", "configmap", "api-config", "--type", "merge", "-p",
                 '{"data":{"POOL":"20"}}')
    kube.kubectl("-n", ns, "create", "configmap", "web-cache", "--from-literal=size=1Gi")

    log = json.loads(kube.cli_ok("log", "--json", "--session", "kube-1").stdout)
    assert len(log) == 1 and log[0]["post_backup"], log
    assert "removed" in log[0]["delta"], log[0]["delta"]
    proc = kube.cli("undo", "toolu_kube", "--json")
    assert proc.returncode == 1, proc.stderr  # a conflict is left: exit 1, nothing forced
    done = json.loads(proc.stdout)
    assert done["conflicts"] == 1, json.dumps(done)[:2000]
    assert kube.get("configmap", "web-config", ns)["data"] == {"THEME": "dark"}
    assert kube.get("configmap", "web-cache", ns)["data"] == {"size": "1Gi"}
    assert kube.get("configmap", "web-flags", ns)["data"] == {"beta": "on"}
    assert kube.get("configmap", "api-config", ns)["data"] == {
        "DB": "postgres://db:5432/app", "POOL": "20"}
