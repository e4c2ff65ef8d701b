"""Reading a target's objects: list what discovery offers, drop what the cluster derives.

A namespace target lists every namespaced type the server serves (built-in
and custom) and reads the Namespace object itself.  A target narrowed by
type, name or selector also takes the objects its objects own, transitively
(what a cascading delete of them would remove).  Cluster-scoped objects that
captured objects need are captured with them as *dependencies*: the
CustomResourceDefinition of every custom resource and the PersistentVolume
of every bound claim.  What the credentials may not list is recorded, per
type, in the snapshot's ``denied`` list and notes — the rest is captured.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from preimage.connectors.kubernetes.address import Address
from preimage.connectors.kubernetes.client import ApiError, KubeClient
from preimage.connectors.kubernetes.derived import SKIPPED_TYPES, derived_reason
from preimage.connectors.kubernetes.discovery import Discovery, ResourceType
from preimage.interface.errors import InvalidTargetError, TerminalConnectorError
from preimage.snapshot_schemas.kubernetes import KubeObject, KubernetesSnapshot

_PAGE = "500"
_WORKERS = 8
CRD = ("apiextensions.k8s.io", "customresourcedefinitions")
# Cluster-scoped types a `_` target without a type does not list: removing a
# namespace or CRD that was created later would delete everything in it.
_CLUSTER_DEFAULT_EXCLUDED = {"namespaces"}


def list_objects(
    client: KubeClient, rtype: ResourceType, namespace: str | None,
    selector: str | None = None, node: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Every object of ``rtype`` (in ``namespace``; of pods, those bound to ``node``), page
    by page, with kind and apiVersion."""
    query = [("limit", _PAGE)]
    if selector:
        query.append(("labelSelector", selector))
    if node:  # the API server filters pods by the node they are bound to
        query.append(("fieldSelector", f"spec.nodeName={node}"))
    token = ""
    while True:
        page = client.request(
            "GET", rtype.path(namespace), query=query + ([("continue", token)] if token else [])
        )
        for obj in page.get("items") or []:
            obj.setdefault("apiVersion", rtype.api_version)
            obj.setdefault("kind", rtype.kind)
            yield obj
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return


def get_object(
    client: KubeClient, rtype: ResourceType, namespace: str | None, name: str
) -> dict[str, Any] | None:
    """One object, or ``None`` when it does not exist."""
    try:
        obj: dict[str, Any] = client.request("GET", rtype.path(namespace, name))
    except ApiError as exc:
        if exc.not_found:
            return None
        raise
    return obj


class Capturer:
    """Capture one :class:`Address` into a :class:`KubernetesSnapshot`."""

    def __init__(self, client: KubeClient, address: Address) -> None:
        self.client = client
        self.address = address
        self.discovery = Discovery(client)
        self.notes: list[str] = []
        self.denied: list[str] = []
        self.derived: dict[str, tuple[int, str]] = {}  # type → (count, first reason)
        self.named_type: str | None = None

    # ------------------------------------------------------------ scope
    def target_types(self) -> list[ResourceType]:
        """The types the target names (one) or implies (all of its scope)."""
        a = self.address
        if a.resource:
            found = [t for t in self.discovery.find(a.resource) if t.capturable]
            if not found:
                raise InvalidTargetError(
                    a.uri, f"the API server serves no resource called {a.resource!r} that can "
                    "be listed and created (kubectl api-resources lists them)"
                )
            if len(found) > 1:
                names = ", ".join(sorted(t.qualified for t in found))
                raise InvalidTargetError(
                    a.uri, f"{a.resource!r} is ambiguous ({names}); write resource.group"
                )
            rtype = found[0]
            if a.node and rtype.qualified != "pods":
                raise InvalidTargetError(
                    a.uri, f"node= selects pods by the node they run on; {rtype.qualified} "
                    "are not pods — write …/pods?node=NODE")
            if rtype.namespaced and a.namespace is None and not a.all_namespaces:
                raise InvalidTargetError(
                    a.uri, f"{rtype.qualified} are namespaced: write k8s://CONTEXT/NAMESPACE/"
                    f"{a.resource}"
                )
            if not rtype.namespaced and (a.namespace is not None or a.all_namespaces):
                raise InvalidTargetError(
                    a.uri, f"{rtype.qualified} are cluster-scoped: write k8s://CONTEXT/_/"
                    f"{a.resource}"
                )
            return [rtype]
        types = [
            t for t in self.discovery.capturable(namespaced=a.namespace is not None)
            if t.qualified not in SKIPPED_TYPES and t.qualified not in _CLUSTER_DEFAULT_EXCLUDED
        ]
        return sorted(types, key=lambda t: t.qualified)

    # ------------------------------------------------------------ reading
    def _list(self, rtype: ResourceType, selector: str | None) -> list[dict[str, Any]] | None:
        try:
            return list(list_objects(self.client, rtype, self.address.namespace, selector,
                                     self.address.node))
        except ApiError as exc:
            if exc.forbidden:
                where = f"in namespace {self.address.namespace}" if self.address.namespace \
                    else "cluster-wide"
                self.denied.append(rtype.qualified)
                self.notes.append(f"not captured: {rtype.qualified} {where} — {exc.message}")
                return None
            if exc.status in (404, 405, 503):  # an aggregated API that is down or gone
                self.notes.append(f"not captured: {rtype.qualified} — {exc}")
                return None
            raise

    def _keep(self, obj: dict[str, Any], rtype: ResourceType) -> bool:
        # naming a derived type in the target (…/pods) asks for its owned objects too
        include_owned = self.address.include_owned or rtype.qualified == self.named_type
        reason = derived_reason(obj, rtype, include_owned=include_owned)
        if reason is not None:
            count, first = self.derived.get(rtype.qualified, (0, reason))
            self.derived[rtype.qualified] = (count + 1, first)
            return False
        return True

    def run(self) -> KubernetesSnapshot:
        """Read the target (never writes)."""
        a = self.address
        types = self.target_types()
        self.named_type = types[0].qualified if a.resource else None
        items: list[KubeObject] = []
        listed: list[str] = []
        if a.name:
            rtype = types[0]
            try:
                obj = get_object(self.client, rtype, a.namespace, a.name)
            except ApiError as exc:
                if not exc.forbidden:
                    raise
                raise TerminalConnectorError(
                    f"context {self.client.context!r} may not read {rtype.qualified} "
                    f"{a.name}: {exc.message}", target=a.uri,
                ) from exc
            found = [] if obj is None else [_typed(obj, rtype)]
            if obj is None:
                self.notes.append(f"{rtype.qualified} {a.name} did not exist at capture time")
            items += [KubeObject.from_object(o, rtype.resource) for o in found]
        else:
            with ThreadPoolExecutor(_WORKERS) as pool:
                results = list(pool.map(lambda t: (t, self._list(t, a.selector)), types))
            for rtype, objs in results:
                if objs is None:
                    continue
                listed.append(rtype.qualified)
                items += [KubeObject.from_object(o, rtype.resource)
                          for o in objs if self._keep(o, rtype)]
            if not listed and types:
                raise TerminalConnectorError(
                    f"context {self.client.context!r} may not list anything in {_scope(a)}: "
                    + "; ".join(self.notes[:3]), target=a.uri,
                )
        if a.namespace is not None and (a.whole_namespace or (not a.resource and not a.selector)):
            items = self._namespace_object() + items
        if (a.resource or a.selector) and a.namespace is not None:
            items += self._owned_by(items)
        dependencies = self._dependencies(items)
        for rtype_name, (count, reason) in sorted(self.derived.items()):
            self.notes.append(f"skipped {count} {rtype_name} the cluster makes itself "
                              f"(e.g. {reason})")
        return KubernetesSnapshot(
            target=a.uri,
            context=self.client.context,
            server_url=self.client.server,
            namespace=a.namespace,
            resource=types[0].qualified if a.resource else None,
            name=a.name,
            selector=a.selector,
            node=a.node,
            include_owned=a.include_owned,
            listed=sorted(listed),
            denied=sorted(self.denied),
            dependencies=[d.natural_key() for d in dependencies],
            items=items + dependencies,
            notes=self.notes,
        )

    def _namespace_object(self) -> list[KubeObject]:
        ns = self.discovery.get("", "namespaces")
        assert ns is not None and self.address.namespace is not None
        try:
            obj = get_object(self.client, ns, None, self.address.namespace)
        except ApiError as exc:
            if not exc.forbidden:
                raise
            self.denied.append("namespaces")
            self.notes.append(
                f"not captured: the Namespace object {self.address.namespace} — {exc.message}"
            )
            return []
        if obj is None:
            self.notes.append(f"namespace {self.address.namespace} did not exist at capture time")
            return []
        return [KubeObject.from_object(_typed(obj, ns), ns.resource)]

    def _owned_by(self, roots: list[KubeObject]) -> list[KubeObject]:
        """Objects in the namespace owned, transitively, by ``roots`` (not derived ones)."""
        owners = {o.uid for o in roots if o.uid}
        have = {o.uid for o in roots}
        if not owners:
            return []
        candidates: list[tuple[dict[str, Any], ResourceType]] = []
        types = [t for t in self.discovery.capturable(namespaced=True)
                 if t.qualified not in SKIPPED_TYPES]
        with ThreadPoolExecutor(_WORKERS) as pool:
            for rtype, objs in pool.map(lambda t: (t, self._quiet_list(t)), types):
                candidates += [(o, rtype) for o in objs]
        found: list[KubeObject] = []
        grew = True
        while grew:
            grew = False
            for obj, rtype in candidates:
                md = obj.get("metadata", {})
                uid = md.get("uid")
                if uid in have:
                    continue
                refs = {r.get("uid") for r in md.get("ownerReferences") or []}
                if refs & owners and self._keep(obj, rtype):
                    found.append(KubeObject.from_object(obj, rtype.resource))
                    owners.add(uid)
                    have.add(uid)
                    grew = True
        return found

    def _quiet_list(self, rtype: ResourceType) -> list[dict[str, Any]]:
        try:
            return list(list_objects(self.client, rtype, self.address.namespace))
        except ApiError:
            return []  # owned objects are a bonus; what cannot be listed is noted elsewhere

    def _dependencies(self, items: list[KubeObject]) -> list[KubeObject]:
        """CRDs of custom resources and PVs of bound claims that are not already items."""
        have = {i.natural_key() for i in items}
        wanted: list[tuple[ResourceType, str, str]] = []
        crd_type = self.discovery.get(*CRD)
        pv_type = self.discovery.get("", "persistentvolumes")
        seen: set[tuple[str, str]] = set()
        for item in items:
            if crd_type is not None and item.group and "." in item.group:
                crd_name = f"{item.resource}.{item.group}"
                if ("crd", crd_name) not in seen:
                    seen.add(("crd", crd_name))
                    wanted.append((crd_type, crd_name, f"custom resources {crd_name}"))
            if pv_type is not None and item.kind == "PersistentVolumeClaim" and not item.group:
                volume = item.body.get("spec", {}).get("volumeName")
                if volume and ("pv", volume) not in seen:
                    seen.add(("pv", volume))
                    wanted.append((pv_type, volume, f"claim {item.namespace}/{item.name}"))
        out: list[KubeObject] = []
        for rtype, name, why in wanted:
            try:
                obj = get_object(self.client, rtype, None, name)
            except ApiError as exc:
                if exc.forbidden:
                    self.notes.append(
                        f"not captured: {rtype.qualified} {name} (needed by {why}) — "
                        f"{exc.message}; a restore cannot re-create it if it is deleted"
                    )
                    continue
                raise
            if obj is None:
                continue  # an aggregated API rather than a CRD, or an unbound volume name
            dep = KubeObject.from_object(_typed(obj, rtype), rtype.resource)
            if dep.natural_key() not in have:
                out.append(dep)
                have.add(dep.natural_key())
        return out


def _typed(obj: dict[str, Any], rtype: ResourceType) -> dict[str, Any]:
    obj.setdefault("apiVersion", rtype.api_version)
    obj.setdefault("kind", rtype.kind)
    return obj


def _scope(a: Address) -> str:
    return f"namespace {a.namespace}" if a.namespace else "the cluster scope"
