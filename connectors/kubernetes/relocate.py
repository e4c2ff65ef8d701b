"""A namespace's objects re-addressed to another namespace (``restore --to
k8s://ctx/staging``, ``score --against``), like Velero's ``--namespace-mappings``.

What moves, and how (each rewrite is reported as an identity mapping):

* every namespaced object's ``metadata.namespace``;
* references inside objects that name the namespace in a field called
  ``namespace`` (RoleBinding subjects, a webhook's service, a claim reference) —
  only where the value is the source namespace, so references to other
  namespaces stay as they are;
* in-cluster DNS names of the source namespace inside strings
  (``db.shop.svc``, ``db.shop.svc.cluster.local``) → the destination's;
* the Namespace object itself: renamed, with its ``kubernetes.io/metadata.name``
  label;
* compared with a live or captured destination (``score --against``): a
  Service's ``clusterIP``/``clusterIPs``/``nodePort``/``healthCheckNodePort`` are
  taken from the destination's Service — the source still holds its addresses, so
  the cluster gave the copy new ones (a restore reports them as id remaps).

Cluster-scoped objects that came along as dependencies: a CustomResourceDefinition
is shared by every namespace and kept as it is; any other (a PersistentVolume bound
to a claim of the source namespace) cannot belong to two namespaces at once, so it
is not restored elsewhere and is recorded as uncaptured with that reason — the
score of a relocated namespace then says it did not come whole.  A cluster-scoped
source (one ClusterRole or ClusterRoleBinding) is renamed instead
(:mod:`.cluster_rename`).  Refused: the source namespace itself, an all-namespaces
source, a cluster-scoped or all-namespaces destination for a namespace.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from preimage.connectors.kubernetes.address import Address, k8s_uri
from preimage.connectors.kubernetes.cluster_rename import rename_cluster_object
from preimage.interface.errors import UsageError
from preimage.interface.target import Target
from preimage.restoration import IdentityMapping, Relocation
from preimage.snapshot_schemas import Uncaptured
from preimage.snapshot_schemas.kubernetes import KubeObject, KubernetesSnapshot

_SHARED_KINDS = frozenset({"CustomResourceDefinition"})
_NAME_LABEL = "kubernetes.io/metadata.name"


class _Rewriter:
    """Rewrites one object's documents from namespace ``old`` to ``new``, counting where."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new
        self.dns = re.compile(rf"(?<=\.){re.escape(old)}(?=\.svc\b)")
        self.paths: list[str] = []

    def walk(self, value: Any, path: str) -> Any:
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                here = f"{path}.{k}" if path else str(k)
                if k == "namespace" and v == self.old:
                    out[k] = self.new
                    if here != "metadata.namespace":
                        self.paths.append(here)
                else:
                    out[k] = self.walk(v, here)
            return out
        if isinstance(value, list):
            return [self.walk(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, str) and ".svc" in value:
            moved, n = self.dns.subn(self.new, value)
            if n:
                self.paths.append(path)
            return moved
        return value


def _moved_object(item: KubeObject, old: str, new: str) -> tuple[KubeObject, list[str]]:
    rw = _Rewriter(old, new)
    update: dict[str, Any] = {part: rw.walk(getattr(item, part), "")
                              for part in ("body", "meta", "assigned")}
    if item.namespace == old:
        update["namespace"] = new
    elif item.kind == "Namespace" and item.name == old:
        update["name"] = new
        for part in ("body", "meta", "assigned"):
            doc = update[part]
            md = doc.get("metadata") if isinstance(doc, dict) else None
            if isinstance(md, dict):
                if md.get("name") == old:
                    md["name"] = new
                labels = md.get("labels")
                if isinstance(labels, dict) and labels.get(_NAME_LABEL) == old:
                    labels[_NAME_LABEL] = new
    return item.model_copy(update=update), rw.paths


_PLACED = ("clusterIP", "clusterIPs", "healthCheckNodePort")


def _placed_values(doc: dict[str, Any]) -> dict[str, Any]:
    """A Service's address fields by path: ``spec.clusterIP``, ``spec.ports[name].nodePort``."""
    found = doc.get("spec")
    spec: dict[str, Any] = found if isinstance(found, dict) else {}
    out = {f"spec.{k}": spec[k] for k in _PLACED if k in spec}
    for port in spec.get("ports") or []:
        if isinstance(port, dict) and "nodePort" in port:
            out[f"spec.ports[{port.get('name', '')}:{port.get('port')}].nodePort"] = port["nodePort"]
    return out


def _set_placed(part: dict[str, Any], path: str, value: Any) -> bool:
    spec = part.get("spec")
    if not isinstance(spec, dict):
        return False
    if not path.startswith("spec.ports["):
        field = path.removeprefix("spec.")
        if field in spec:
            spec[field] = value
            return True
        return False
    wanted = path[len("spec.ports["):path.index("]")]
    for port in spec.get("ports") or []:
        if isinstance(port, dict) and f"{port.get('name', '')}:{port.get('port')}" == wanted \
                and "nodePort" in port:
            port["nodePort"] = value
            return True
    return False


def _take_placed(item: KubeObject, theirs: KubeObject) -> tuple[KubeObject, list[IdentityMapping]]:
    """``item`` with the address fields ``theirs`` was given, each reported."""
    mine, live = _placed_values(item.manifest()), _placed_values(theirs.manifest())
    parts = {p: copy.deepcopy(getattr(item, p)) for p in ("body", "meta", "assigned")}
    mappings = []
    for path, old in mine.items():
        new = live.get(path)
        if new is None or new == old:
            continue
        if any(_set_placed(part, path, new) for part in parts.values()):
            mappings.append(IdentityMapping(
                what=f"{item.ref} {path}", old=str(old), new=str(new),
                note="assigned by the cluster: the source still holds the original"))
    return (item.model_copy(update=parts), mappings) if mappings else (item, [])


def relocate_namespace(
    snapshot: KubernetesSnapshot, destination: Target, other: KubernetesSnapshot | None = None
) -> Relocation:
    """``snapshot`` as a capture of the destination namespace (see the module docstring)."""
    if destination.scheme != "k8s":
        raise UsageError(f"{destination.redacted}: a Kubernetes backup restores into a k8s:// "
                         "namespace")
    src, dst = Address.parse(Target.parse(snapshot.target)), Address.parse(destination)
    if src.namespace is None and not src.all_namespaces:
        return rename_cluster_object(snapshot, src, dst, destination)
    if src.namespace is None or src.all_namespaces or snapshot.namespace is None:
        raise UsageError(
            f"{snapshot.target} spans every namespace: there is no one namespace to map; "
            "capture and restore one namespace at a time. Nothing was written")
    if dst.namespace is None or dst.all_namespaces or dst.resource or dst.selector:
        raise UsageError(
            f"--to {destination.redacted}: name a namespace, k8s://CONTEXT/NAMESPACE (the "
            "backup's own resource, name and selector go with it)")
    old, new = snapshot.namespace, dst.namespace
    context = dst.context or snapshot.context
    if old == new and (context or "").lower() == (snapshot.context or "").lower():
        raise UsageError(
            f"--to {destination.redacted} is the backup's own namespace ({snapshot.target}); "
            "restore in place without --to. Nothing was written")
    items: list[KubeObject] = []
    theirs_by_key = {i.natural_key(): i for i in other.items} if other is not None else {}
    uncaptured = list(snapshot.uncaptured)
    mappings = [IdentityMapping(what="namespace", old=old, new=new)]
    for item in snapshot.items:
        if not item.namespace and item.kind != "Namespace" and item.kind not in _SHARED_KINDS:
            uncaptured.append(Uncaptured(
                name=item.ref, kind=item.kind, fidelity="content",
                reason=f"cluster-scoped, bound to namespace {old}: one object cannot belong to "
                       f"two namespaces, so it is not restored into {new} (restore the claim's "
                       "data by the storage's own means)"))
            continue
        moved, paths = _moved_object(item, old, new)
        mappings += [IdentityMapping(what=f"{item.ref} {p}", old=old, new=new,
                                     note="a reference to the namespace") for p in paths]
        theirs = theirs_by_key.get(moved.natural_key())
        if theirs is not None and moved.kind == "Service":
            moved, placed = _take_placed(moved, theirs)
            mappings += placed
        items.append(moved)
    target = k8s_uri(context or "", new, src.resource, src.name, selector=src.selector,
                     node=src.node)
    if src.include_owned:
        target += ("&" if "?" in target else "?") + "owned=true"
    deps = [d.replace(f"|namespace={old}|", f"|namespace={new}|") for d in snapshot.dependencies]
    moved_snap = snapshot.model_copy(update={
        "target": target, "namespace": new, "context": context, "items": items,
        "dependencies": deps, "uncaptured": uncaptured,
    })
    if context != snapshot.context:
        mappings.insert(0, IdentityMapping(what="context", old=snapshot.context or "",
                                           new=context or ""))
    return Relocation(moved_snap, tuple(mappings))
