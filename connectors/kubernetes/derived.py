"""What the cluster derives by itself and a capture therefore leaves out.

Every rule says why, and the reason shows up in snapshot notes.  Derived
objects are never captured (unless asked for), never restored and never
removed by a restore: their controllers make them again from the objects that
are restored.
"""

from __future__ import annotations

from typing import Any

from preimage.connectors.kubernetes.discovery import ResourceType

#: Types never captured, by ``resource.group``, with the reason.
SKIPPED_TYPES: dict[str, str] = {
    "events": "events are a log the cluster writes, not state",
    "events.events.k8s.io": "events are a log the cluster writes, not state",
    "nodes": "nodes register themselves (kubelet)",
    "csinodes.storage.k8s.io": "written by each node's kubelet",
    "volumeattachments.storage.k8s.io": "written by the attach/detach controller",
    "resourceslices.resource.k8s.io": "published by device drivers",
    "componentstatuses": "computed on read",
}

#: Controllers whose owned objects are derived: owner kind → dependent kinds.
#: A Deployment's ReplicaSets are *not* here: old ReplicaSets are the rollout
#: history (``kubectl rollout undo``) and the current one keeps its name, so
#: they are captured and restored before the Deployment, which adopts them.
_OWNED_DERIVED: dict[str, str] = {
    "Pod": "created by its controller",
    "Job": "a run of its CronJob; restoring it would run it again",
    "ControllerRevision": "history the StatefulSet/DaemonSet controller keeps",
    "EndpointSlice": "kept up to date from its Service",
}

_MANAGED_BY_LABELS: dict[str, tuple[str, ...]] = {
    "endpoints.kubernetes.io/managed-by": ("endpoint-controller",),
    "endpointslice.kubernetes.io/managed-by": (
        "endpointslice-controller.k8s.io", "endpointslicemirroring-controller.k8s.io",
    ),
    "ipaddress.kubernetes.io/managed-by": ("ipallocator.k8s.io",),
}


def controller_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The ownerReference marked ``controller: true``, if any."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def derived_reason(obj: dict[str, Any], rtype: ResourceType, *, include_owned: bool) -> str | None:
    """Why ``obj`` is derived by the cluster (``None``: it is state to capture)."""
    md = obj.get("metadata", {})
    labels = md.get("labels") or {}
    annotations = md.get("annotations") or {}
    for label, values in _MANAGED_BY_LABELS.items():
        if labels.get(label) in values:
            return f"maintained by {labels[label]}"
    if labels.get("kubernetes.io/bootstrapping") == "rbac-defaults":
        return "default RBAC the API server reconciles at start"
    if annotations.get("apf.kubernetes.io/autoupdate-spec") == "true":
        return "default flow control the API server keeps up to date"
    if labels.get("kube-aggregator.kubernetes.io/automanaged"):
        return "registered by the API server for a built-in group"
    if rtype.qualified == "priorityclasses.scheduling.k8s.io" and md.get("name", "").startswith(
        "system-"
    ):
        return "built-in priority class"
    if rtype.qualified == "servicecidrs.networking.k8s.io" and md.get("name") == "kubernetes":
        return "made by the API server from --service-cluster-ip-range"
    if md.get("namespace") == "default" and md.get("name") == "kubernetes" and \
            labels.get("provider") == "kubernetes" and labels.get("component") == "apiserver":
        return "the API server's own Service, kept by the API server"
    if md.get("namespace") == "kube-node-lease":
        return "node heartbeats"
    owner = controller_of(obj)
    if owner is not None and not include_owned and rtype.kind in _OWNED_DERIVED:
        return f"{_OWNED_DERIVED[rtype.kind]} ({owner.get('kind')}/{owner.get('name')})"
    return None
