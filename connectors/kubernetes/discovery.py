"""What the API server serves: resource types found by discovery, not from a fixed list.

Aggregated discovery (``/api`` and ``/apis`` as ``APIGroupDiscoveryList``,
two requests) is used when the server offers it, the per-group-version lists
otherwise.  Each group contributes its preferred version.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from preimage.connectors.kubernetes.client import ApiError, KubeClient

_AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)


@dataclass(frozen=True)
class ResourceType:
    """One REST resource: ``deployments`` in ``apps/v1``."""

    group: str
    version: str
    resource: str  # plural
    kind: str
    namespaced: bool
    verbs: frozenset[str]
    singular: str = ""
    short_names: tuple[str, ...] = ()
    has_status: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``resource.group`` (just ``resource`` for the core group)."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @property
    def capturable(self) -> bool:
        """Objects of this type can be listed, read and created."""
        return {"list", "get", "create"} <= self.verbs

    def path(self, namespace: str | None = None, name: str | None = None,
             sub: str | None = None) -> str:
        """The REST path of the collection, or of one object (and its subresource)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.resource}"
        if name:
            base += f"/{name}"
            if sub:
                base += f"/{sub}"
        return base

    def names(self) -> set[str]:
        """Every name a user may call it by (lower case)."""
        out = {self.resource, self.kind.lower(), *self.short_names}
        if self.singular:
            out.add(self.singular)
        if self.group:
            out |= {f"{n}.{self.group}" for n in list(out)}
            out.add(f"{self.resource}.{self.version}.{self.group}")
        return {n.lower() for n in out}


class Discovery:
    """The resource types of one API server (preferred version of each group)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.types: list[ResourceType] = []
        self.refresh()

    def refresh(self) -> None:
        """Ask the server again (after a CRD was created)."""
        types: list[ResourceType] = []
        for path in ("/api", "/apis"):
            doc = self.client.request("GET", path, accept=_AGGREGATED)
            if doc.get("kind") == "APIGroupDiscoveryList":
                types += _from_aggregated(doc)
            else:
                types += self._from_legacy(path, doc)
        self.types = types
        self._by_gr = {(t.group, t.resource): t for t in types}

    def _from_legacy(self, path: str, doc: dict[str, Any]) -> list[ResourceType]:
        if path == "/api":
            gvs = [("", v) for v in doc.get("versions", [])[:1]]
        else:
            gvs = [
                (g["name"], g["preferredVersion"]["version"])
                for g in doc.get("groups", [])
                if g.get("preferredVersion")
            ]
        out: list[ResourceType] = []
        for group, version in gvs:
            gv_path = f"/apis/{group}/{version}" if group else f"/api/{version}"
            try:
                listing = self.client.request("GET", gv_path)
            except ApiError:
                continue  # an unavailable aggregated API must not stop the rest
            resources = listing.get("resources", [])
            with_status = {r["name"].split("/")[0] for r in resources
                           if r["name"].endswith("/status")}
            out += [
                ResourceType(
                    group=group, version=version, resource=r["name"], kind=r["kind"],
                    namespaced=bool(r.get("namespaced")), verbs=frozenset(r.get("verbs", [])),
                    singular=r.get("singularName", ""),
                    short_names=tuple(r.get("shortNames", [])),
                    has_status=r["name"] in with_status,
                )
                for r in resources
                if "/" not in r["name"]
            ]
        return out

    def get(self, group: str, resource: str) -> ResourceType | None:
        """The type serving ``resource`` in ``group``, if the server has it."""
        return self._by_gr.get((group, resource))

    def find(self, name: str) -> list[ResourceType]:
        """Types a user-given name (plural, singular, kind, short name, ``x.group``) means."""
        wanted = name.lower()
        return [t for t in self.types if wanted in t.names()]

    def capturable(self, namespaced: bool) -> Iterable[ResourceType]:
        """Every type of that scope whose objects can be listed and re-created."""
        return (t for t in self.types if t.namespaced == namespaced and t.capturable)


def _from_aggregated(doc: dict[str, Any]) -> list[ResourceType]:
    out: list[ResourceType] = []
    for group_doc in doc.get("items", []):
        group = group_doc.get("metadata", {}).get("name", "") or ""
        versions = group_doc.get("versions") or []
        if not versions:
            continue
        preferred = versions[0]  # listed in preference order
        version = preferred.get("version", "")
        for r in preferred.get("resources") or []:
            kind = (r.get("responseKind") or {}).get("kind", "")
            subs = {s.get("subresource") for s in r.get("subresources") or []}
            out.append(
                ResourceType(
                    group=group, version=version, resource=r["resource"], kind=kind,
                    namespaced=r.get("scope") == "Namespaced",
                    verbs=frozenset(r.get("verbs") or []),
                    singular=r.get("singularResource", ""),
                    short_names=tuple(r.get("shortNames") or []),
                    has_status="status" in subs,
                )
            )
    return out
