"""A cluster-scoped object restored under another name (``restore ID --to
k8s://ctx/_/clusterroles/NEW`` for a backup of ``k8s://ctx/_/clusterroles/OLD``).

A cluster-scoped object has no namespace to map, so the only way to put a copy
beside the original is a new name.  The API lets a ClusterRole and a
ClusterRoleBinding take any name, and nothing outside RBAC finds them by name
alone, so those two are renamed (a binding keeps its ``roleRef`` and subjects: the
copy grants the same role to the same subjects).  One object at a time: a backup of
several cluster-scoped objects has no one new name, so it is refused.
Every other cluster-scoped kind is refused with the reason: a CRD's name is fixed
by its group and plural, a Namespace moves with a namespace mapping, and the rest
(PersistentVolumes, StorageClasses, PriorityClasses, webhooks…) are found by name
by objects outside the backup, which a copy would leave pointing at the original.
"""

from __future__ import annotations

import copy
from typing import Any

from preimage.connectors.kubernetes.address import CLUSTER, Address, k8s_uri
from preimage.interface.errors import UsageError
from preimage.interface.target import Target
from preimage.restoration import IdentityMapping, Relocation
from preimage.snapshot_schemas.kubernetes import KubeObject, KubernetesSnapshot

RENAMEABLE = frozenset({"ClusterRole", "ClusterRoleBinding"})

_WHY_NOT = {
    "CustomResourceDefinition": "its name is fixed by the API as PLURAL.GROUP",
    "Namespace": "a namespace moves with a namespace mapping, --to k8s://CONTEXT/NEW",
}


def _why_not(kind: str) -> str:
    return _WHY_NOT.get(kind, "objects outside the backup find it by name and would keep "
                              "pointing at the original")


def _renamed(item: KubeObject, new: str) -> KubeObject:
    parts: dict[str, Any] = {p: copy.deepcopy(getattr(item, p)) for p in ("body", "meta", "assigned")}
    for doc in parts.values():
        md = doc.get("metadata") if isinstance(doc, dict) else None
        if isinstance(md, dict) and md.get("name") == item.name:
            md["name"] = new
    return item.model_copy(update={"name": new, **parts})


def rename_cluster_object(snapshot: KubernetesSnapshot, src: Address, dst: Address,
                          destination: Target) -> Relocation:
    """The backup's one cluster-scoped object under the destination's name (see above)."""
    if dst.namespace is not None or dst.all_namespaces or not dst.resource or not dst.name \
            or dst.selector:
        raise UsageError(
            f"--to {destination.redacted}: a cluster-scoped object restores under a new name, "
            f"k8s://CONTEXT/{CLUSTER}/RESOURCE/NEWNAME. Nothing was written")
    if not src.name:
        raise UsageError(
            f"{snapshot.target} holds several cluster-scoped objects: one new name cannot fit "
            f"them all; capture and restore each one (k8s://CONTEXT/{CLUSTER}/RESOURCE/NAME). "
            "Nothing was written")
    main = [i for i in snapshot.items if i.name == src.name and not i.namespace
            and i.natural_key() not in set(snapshot.dependencies)]
    if len(main) != 1:
        raise UsageError(f"{snapshot.target}: the backup does not hold that object, so there "
                         "is nothing to rename. Nothing was written")
    item = main[0]
    if item.kind not in RENAMEABLE:
        raise UsageError(f"{snapshot.target}: a {item.kind} is not restored under another name "
                         f"— {_why_not(item.kind)}; restore it in place. Nothing was written")
    kinds = {item.resource, item.kind.lower(), f"{item.resource}.{item.group}"}
    if dst.resource.lower() not in kinds:
        raise UsageError(f"--to {destination.redacted}: the backup holds a {item.kind}; name "
                         f"the same resource, k8s://CONTEXT/{CLUSTER}/{item.resource}/NEWNAME. "
                         "Nothing was written")
    old, new = item.name, dst.name
    context = dst.context or snapshot.context
    if old == new and (context or "").lower() == (snapshot.context or "").lower():
        raise UsageError(f"--to {destination.redacted} is the backup's own target "
                         f"({snapshot.target}); restore in place without --to. Nothing was written")
    mappings = [IdentityMapping(what=f"{item.resource} name", old=old, new=new)]
    items = [_renamed(it, new) if it is item else it for it in snapshot.items]
    moved_snap = snapshot.model_copy(update={
        "target": k8s_uri(context or "", CLUSTER, src.resource, new), "context": context,
        "items": items,
    })
    if context != snapshot.context:
        mappings.insert(0, IdentityMapping(what="context", old=snapshot.context or "",
                                           new=context or ""))
    return Relocation(moved_snap, tuple(mappings))
