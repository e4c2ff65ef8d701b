"""Turning a captured object into the body of a create or replace request.

Dropped or rewritten before writing, and why:

* ``metadata.uid``, ``resourceVersion``, ``generation``, ``creationTimestamp``,
  ``selfLink`` — server-assigned; a replace carries the live
  ``resourceVersion`` instead, so it fails rather than overwrite a change it
  did not see;
* ``metadata.deletionTimestamp``/``deletionGracePeriodSeconds`` — a restored
  object is not being deleted;
* ``metadata.managedFields`` — written last by a patch of their own (any other
  write would re-attribute the fields it touches to the writer);
* ``status`` of types with a status subresource — the server ignores it on
  create; it is written through ``/status`` afterwards;
* ``ownerReferences[].uid`` — the owner's current UID; a reference to an owner
  restored later is added after the last tier, and one to an owner that is
  gone and not in the backup is dropped (the garbage collector would delete
  the object at once);
* a PersistentVolume's ``claimRef.uid``/``resourceVersion`` — the claim's
  current UID, or left out while the claim is not restored yet: a volume
  bound to a claim UID that does not exist is reclaimed (deleted, when its
  policy is Delete);
* the ``kubernetes.io/service-account.uid`` annotation of a token Secret —
  its ServiceAccount's current UID (else the token controller deletes it);
* a Job's ``spec.selector`` and ``controller-uid`` labels, on create — the
  server generates them from the new Job's UID;
* a Service's ``clusterIP``/``clusterIPs``/``nodePort`` only when the server
  says they are taken — it then picks new ones, reported as id remaps.
"""

from __future__ import annotations

import copy
from typing import Any

from preimage.snapshot_schemas.kubernetes import JOB_UID_LABELS

_SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "selfLink",
                    "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields")
SA_UID_ANNOTATION = "kubernetes.io/service-account.uid"


def strip_for_write(obj: dict[str, Any], *, has_status: bool) -> dict[str, Any]:
    """A copy of ``obj`` without what the server assigns (see the module docstring)."""
    out = copy.deepcopy(obj)
    md = out.setdefault("metadata", {})
    for k in _SERVER_METADATA:
        md.pop(k, None)
    if has_status:
        out.pop("status", None)
    if out.get("kind") == "PersistentVolume":
        claim = out.get("spec", {}).get("claimRef")
        if isinstance(claim, dict):
            claim.pop("resourceVersion", None)
    return out


def drop_job_uid_selector(obj: dict[str, Any]) -> None:
    """Let the server generate a new Job's selector and ``controller-uid`` labels."""
    spec = obj.get("spec", {})
    selector = spec.get("selector", {})
    labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
    if any(k in selector.get("matchLabels", {}) for k in JOB_UID_LABELS):
        spec.pop("selector", None)
    for k in JOB_UID_LABELS:
        labels.pop(k, None)


def keep_live_job_selector(obj: dict[str, Any], live: dict[str, Any]) -> None:
    """A replaced Job keeps the selector and labels the server made for it."""
    spec, live_spec = obj.setdefault("spec", {}), live.get("spec", {})
    if "selector" in live_spec:
        spec["selector"] = live_spec["selector"]
    live_labels = live_spec.get("template", {}).get("metadata", {}).get("labels", {})
    labels = spec.setdefault("template", {}).setdefault("metadata", {}).setdefault("labels", {})
    for k in JOB_UID_LABELS:
        if k in live_labels:
            labels[k] = live_labels[k]


def drop_service_ips(obj: dict[str, Any]) -> str | None:
    """Forget a Service's fixed cluster IPs; the old IP (``None`` if there was none)."""
    spec = obj.get("spec", {})
    old = spec.get("clusterIP")
    if old in (None, "", "None"):
        return None
    spec.pop("clusterIP", None)
    spec.pop("clusterIPs", None)
    return str(old)


def drop_node_ports(obj: dict[str, Any]) -> dict[str, int]:
    """Forget a Service's node ports; the old ones by port name (or number)."""
    old = {}
    spec = obj.get("spec", {})
    for port in spec.get("ports") or []:
        if "nodePort" in port:
            old[str(port.get("name") or port.get("port"))] = int(port.pop("nodePort"))
    if "healthCheckNodePort" in spec:
        old["healthCheckNodePort"] = int(spec.pop("healthCheckNodePort"))
    return old


def set_observed_generation(status: dict[str, Any], generation: int | None) -> dict[str, Any]:
    """Status pointing at ``generation`` (the restored object's), so controllers
    do not take it for stale; conditions' ``observedGeneration`` likewise."""
    out = copy.deepcopy(status)
    if generation is None:
        return out
    if "observedGeneration" in out:
        out["observedGeneration"] = generation
    for cond in out.get("conditions") or []:
        if isinstance(cond, dict) and "observedGeneration" in cond:
            cond["observedGeneration"] = generation
    return out
