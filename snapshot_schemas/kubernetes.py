"""Snapshot schema of the ``k8s`` connector (v1).

One :class:`KubeObject` per captured API object, kept whole: spec, data,
labels, annotations, finalizers, ownerReferences, managedFields and status.
An object is a nested document whose leaves belong to different fidelity
classes, so each object is stored as three projections of itself — ``body``
(content leaves), ``meta`` (metadata leaves) and ``assigned`` (server
leaves) — split and joined by :func:`split_object` / :func:`join_object`
following :data:`FIELD_CLASSES`, the one table that says which leaf is in
which class:

* content  — everything that is not listed below: ``spec``, ``data``,
  ``binaryData``, ``rules``, ``subjects``, ``roleRef``, ``provisioner``, …;
* metadata — ``metadata.*`` (labels, annotations, finalizers,
  ownerReferences, managedFields, generateName), ``status`` (written back
  through the status subresource), a Service's ``clusterIP``/``clusterIPs``/
  ``nodePort``/``healthCheckNodePort`` (kept when free);
* server   — ``uid``, ``resourceVersion``, ``generation``,
  ``creationTimestamp``, deletion stamps; references to other objects' UIDs
  (``ownerReferences[].uid``, a PV's ``claimRef.uid``/``resourceVersion``,
  the ``kubernetes.io/service-account.uid`` annotation, a Job's
  ``controller-uid`` selector labels), ``managedFields[].time``,
  ``status.observedGeneration``, a Deployment's ``status.collisionCount``, the
  clock stamps controllers put in status conditions, and a Pod's whole
  ``status`` (its kubelet reports it).

The meter reads an object as one document (:meth:`KubeObject.leaves`), each
leaf in the class :data:`FIELD_CLASSES` gives it.  Lists whose order no client
sets are compared by key, never by position (:data:`KEYED_LISTS`): the API
server orders ``managedFields`` by time and controllers order
``status.conditions`` as they please, so a restored object whose entries came
back in another order is the same object.  Every other list (containers, env,
ports, finalizers, …) is written by the client in its order, which a restore
keeps, so it is compared by position.

``managedFields[].fieldsV1`` names ownerReferences by UID; those keys are
stored with the owner's kind and name instead of its UID
(``k:{"uid":"$owner(Deployment/web)"}``) so that an object whose owner was
re-created compares equal, and the UID is put back when joining.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from pydantic import Field

from preimage.snapshot_schemas._base import (
    Fidelity,
    Item,
    Leaf,
    Snapshot,
    child_path,
    content,
    entry_labels,
    key,
    metadata,
    register_migration,
    register_snapshot_type,
    server,
)

CONTENT, METADATA, SERVER = Fidelity.CONTENT.value, Fidelity.METADATA.value, Fidelity.SERVER.value

# Keys that stamp a clock time into status (conditions and the like): set by
# whoever last wrote the status, so a live controller cannot keep them stable.
STATUS_CLOCK_KEYS = frozenset(
    {"lastTransitionTime", "lastUpdateTime", "lastHeartbeatTime", "lastProbeTime",
     "lastPhaseTransitionTime"}
)
JOB_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")

Path = tuple[str | int, ...]
Rule = Callable[[str, Path], str | None]

_SERVER_METADATA = frozenset(
    {"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
     "deletionGracePeriodSeconds", "selfLink"}
)


def _metadata_rule(kind: str, path: Path) -> str | None:
    if path[0] != "metadata":
        return None
    if len(path) == 2 and path[1] in _SERVER_METADATA:
        return SERVER
    if len(path) == 4 and path[1] == "ownerReferences" and path[3] == "uid":
        return SERVER
    if len(path) == 4 and path[1] == "managedFields" and path[3] == "time":
        return SERVER
    if path[1:] == ("annotations", "kubernetes.io/service-account.uid"):
        return SERVER
    return METADATA


def _status_rule(kind: str, path: Path) -> str | None:
    if path[0] != "status":
        return None
    if kind == "Pod":  # the kubelet reports it; a restore cannot make a pod run
        return SERVER
    if path[-1] in ("observedGeneration", "collisionCount") or path[-1] in STATUS_CLOCK_KEYS:
        return SERVER
    return METADATA


def _service_rule(kind: str, path: Path) -> str | None:
    if kind != "Service" or path[:1] != ("spec",):
        return None
    if path[1:2] in (("clusterIP",), ("clusterIPs",), ("healthCheckNodePort",)):
        return METADATA
    if len(path) == 4 and path[1] == "ports" and path[3] == "nodePort":
        return METADATA
    return None


def _volume_rule(kind: str, path: Path) -> str | None:
    if kind == "PersistentVolume" and path[:2] == ("spec", "claimRef") and len(path) == 3:
        return SERVER if path[2] in ("uid", "resourceVersion") else None
    return None


def _job_rule(kind: str, path: Path) -> str | None:
    if kind != "Job" or path[-1] not in JOB_UID_LABELS:
        return None
    if path[:-1] in (("spec", "selector", "matchLabels"),
                     ("spec", "template", "metadata", "labels")):
        return SERVER
    return None


#: Which class a leaf of an object is in: the first rule that answers wins,
#: and a leaf no rule claims is ``content``.  Rules get the object's kind and
#: the leaf's path (keys and list indexes from the object's root).
FIELD_CLASSES: tuple[Rule, ...] = (
    _service_rule, _volume_rule, _job_rule, _metadata_rule, _status_rule,
)


def leaf_class(kind: str, path: Path) -> str:
    """The fidelity class of the leaf at ``path`` of an object of ``kind``."""
    for rule in FIELD_CLASSES:
        found = rule(kind, path)
        if found is not None:
            return found
    return CONTENT


#: Lists compared by key, by their path from the object's root: their order is set by
#: the API server or a controller, not by the client that wrote the object.
KEYED_LISTS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("metadata", "managedFields"): ("manager", "operation", "subresource"),
    ("metadata", "ownerReferences"): ("kind", "name"),  # the uid is re-assigned
    ("status", "conditions"): ("type",),
}

_SERVER_NOTES = {
    "uid": "the API server gives every object it creates a new uid",
    "resourceVersion": "the API server versions every write",
    "generation": "the API server counts spec changes from 1 for a new object",
    "creationTimestamp": "the API server stamps the time it created the object",
    "deletionTimestamp": "the API server stamps the time deletion was requested",
    "deletionGracePeriodSeconds": "set by the API server when deletion is requested",
    "selfLink": "set by the API server",
    "time": "the API server stamps the time of each manager's last write",
    "observedGeneration": "the controller copies the generation it last acted on",
    "collisionCount": "the Deployment controller counts template-hash collisions with the "
    "ReplicaSets it finds (the deleted object's, until they are collected)",
}


def server_note(kind: str, path: Path) -> str:
    """Why the server leaf at ``path`` of an object of ``kind`` cannot come back."""
    if kind == "Pod" and path[:1] == ("status",):
        return "the kubelet reports a pod's status; a restore cannot make it run"
    if path[-1] in STATUS_CLOCK_KEYS:
        return "stamped by the controller that last wrote the status"
    if path[-1] in JOB_UID_LABELS:
        return "the Job controller labels pods with the Job's uid, new for a re-created Job"
    if path[-1] in ("uid", "resourceVersion") and len(path) > 2:
        return "refers to another object's server-assigned identity, new when it is re-created"
    if path[-1] == "kubernetes.io/service-account.uid":
        return "the ServiceAccount's uid, new when it is re-created"
    return _SERVER_NOTES.get(str(path[-1]), "")


def object_leaves(kind: str, value: Any, raw: Path = (), path: str = "") -> Iterator[
    tuple[str, Leaf]
]:
    """The leaves of an object document, each in the class :func:`leaf_class` gives
    it, lists in :data:`KEYED_LISTS` matched by key.  ``raw`` is the path of keys and
    list positions that the class rules read; ``path`` the one the meter reports."""
    if isinstance(value, dict) and value:
        for k in sorted(value):
            yield from object_leaves(kind, value[k], (*raw, k), child_path(path, k))
        return
    if isinstance(value, list) and value:
        keys = KEYED_LISTS.get(tuple(p for p in raw if isinstance(p, str)))
        for i, ((label, how), v) in enumerate(zip(entry_labels(value, keys), value, strict=True)):
            if how == "key" and keys is not None:  # the key is in the path, not a leaf again
                v = {k: x for k, x in v.items() if k not in keys}
            yield from object_leaves(kind, v, (*raw, i), path + label)
        return
    cls = leaf_class(kind, raw) if raw else CONTENT
    yield path, Leaf(cls, value, "", server_note(kind, raw) if cls == SERVER and raw else "")


# ----------------------------------------------------------- owner-UID keys
_UID_KEY = re.compile(r'^k:\{"uid":"([^"]+)"\}$')
_OWNER_KEY = re.compile(r'^k:\{"uid":"\$owner\(([^)]*)\)"\}$')


def _owner_names(obj: dict[str, Any]) -> dict[str, str]:
    refs = obj.get("metadata", {}).get("ownerReferences") or []
    return {r.get("uid", ""): f"{r.get('kind', '')}/{r.get('name', '')}" for r in refs}


def _rename_keys(value: Any, rename: Callable[[str], str]) -> Any:
    if isinstance(value, dict):
        return {rename(k): _rename_keys(v, rename) for k, v in value.items()}
    return value


def _normalize_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """Name owner UIDs in ``managedFields[].fieldsV1`` by owner kind/name."""
    entries = obj.get("metadata", {}).get("managedFields")
    owners = _owner_names(obj)
    if not entries or not owners:
        return obj

    def rename(k: str) -> str:
        m = _UID_KEY.match(k)
        if m and m.group(1) in owners:
            return f'k:{{"uid":"$owner({owners[m.group(1)]})"}}'
        return k

    return _with_renamed_managed_fields(obj, entries, rename)


def _with_renamed_managed_fields(
    obj: dict[str, Any], entries: list[dict[str, Any]], rename: Callable[[str], str]
) -> dict[str, Any]:
    """``obj`` with every managedFields entry's field keys passed through ``rename``."""
    new_entries = [
        {**e, "fieldsV1": _rename_keys(e["fieldsV1"], rename)} if "fieldsV1" in e else e
        for e in entries
    ]
    return {**obj, "metadata": {**obj["metadata"], "managedFields": new_entries}}


def _denormalize_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    entries = obj.get("metadata", {}).get("managedFields")
    if not entries:
        return obj
    uids = {name: uid for uid, name in _owner_names(obj).items()}

    def rename(k: str) -> str:
        m = _OWNER_KEY.match(k)
        if m and m.group(1) in uids:
            return f'k:{{"uid":"{uids[m.group(1)]}"}}'
        return k

    return _with_renamed_managed_fields(obj, entries, rename)


# ----------------------------------------------------------- split / join
_HOLE: Any = object()  # "no leaf of this class here"


_CLASS_INDEX = {CONTENT: 0, METADATA: 1, SERVER: 2}


def _split(kind: str, value: Any, path: Path) -> list[Any]:
    """``value``'s parts per class (content, metadata, server); ``_HOLE`` where a class
    has no leaf.  One pass: each leaf is classified once."""
    if isinstance(value, dict) and value:
        maps: list[dict[str, Any]] = [{}, {}, {}]
        for k, v in value.items():
            for i, part in enumerate(_split(kind, v, (*path, k))):
                if part is not _HOLE:
                    maps[i][k] = part
        return [m if m else _HOLE for m in maps]
    if isinstance(value, list) and value:
        columns = [_split(kind, v, (*path, i)) for i, v in enumerate(value)]
        out: list[Any] = []
        for cls in range(3):
            parts = [c[cls] for c in columns]
            # keep positions: a slot owned by another class is an empty marker
            out.append(_HOLE if all(p is _HOLE for p in parts)
                       else [{} if p is _HOLE else p for p in parts])
        return out
    holes: list[Any] = [_HOLE, _HOLE, _HOLE]
    holes[_CLASS_INDEX[leaf_class(kind, path)]] = value
    return holes


def _merge(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = _merge(out[k], v) if k in out else v
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [_merge(x, y) for x, y in zip(a, b, strict=True)]
    if a in ({}, []):
        return b
    return a if b in ({}, []) else b


def split_object(obj: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(body, meta, assigned)``: the content, metadata and server leaves of ``obj``.

    ``apiVersion`` and ``kind`` are left out (the item holds them); empty
    maps and lists stay leaves of their own so ``labels: {}`` still counts.
    """
    kind = str(obj.get("kind", ""))
    doc = _normalize_managed_fields(
        {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    )
    if not doc:
        return {}, {}, {}
    parts = _split(kind, doc, ())
    out = [p if p is not _HOLE else {} for p in parts]
    return out[0], out[1], out[2]


def join_object(api_version: str, kind: str, *parts: dict[str, Any]) -> dict[str, Any]:
    """The whole object again from its projections (inverse of :func:`split_object`)."""
    doc: dict[str, Any] = {}
    for part in parts:
        doc = _merge(doc, part)
    doc = _denormalize_managed_fields(doc)
    return {"apiVersion": api_version, "kind": kind, **doc}


def managed_fields_for(
    meta: dict[str, Any], assigned: dict[str, Any], owner_refs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Captured managedFields (with their times) naming owners by ``owner_refs``' UIDs."""
    doc = _merge(meta, assigned)
    entries = doc.get("metadata", {}).get("managedFields") or []
    return list(
        _denormalize_managed_fields(
            {"metadata": {"managedFields": entries, "ownerReferences": owner_refs}}
        )["metadata"]["managedFields"]
    )


# ----------------------------------------------------------- the schema
class KubeObject(Item):
    """One API object, matched across snapshots by kind, group, namespace and name."""

    kind: str = key(description="the object's kind, e.g. Deployment")
    group: str = key("", description="API group; '' for the core group")
    namespace: str = key("", description="'' for cluster-scoped objects")
    name: str = key()
    api_version: str = content(description="apiVersion the object was read as, e.g. apps/v1")
    resource: str = content(description="REST resource (plural), e.g. deployments")
    body: dict[str, Any] = content(default_factory=dict, description="content leaves (spec, data…)")
    meta: dict[str, Any] = metadata(
        default_factory=dict, description="metadata leaves (labels, annotations, status…)"
    )
    assigned: dict[str, Any] = server(
        default_factory=dict, description="server-assigned leaves (uid, resourceVersion…)"
    )

    @classmethod
    def from_object(cls, obj: dict[str, Any], resource: str) -> KubeObject:
        """Split a whole object as read from the API into an item."""
        api_version = str(obj.get("apiVersion", ""))
        group = api_version.rpartition("/")[0]
        md = obj.get("metadata", {})
        body, meta, assigned = split_object(obj)
        return cls(
            kind=str(obj.get("kind", "")),
            group=group,
            namespace=str(md.get("namespace", "")),
            name=str(md.get("name", "")),
            api_version=api_version,
            resource=resource,
            body=body,
            meta=meta,
            assigned=assigned,
        )

    def leaves(self, fidelity: str, path: str = "") -> Iterator[tuple[str, Leaf]]:
        """The object as one document (owner UIDs in managedFields named by owner),
        each leaf in its class; see :data:`FIELD_CLASSES` and :data:`KEYED_LISTS`."""
        for name in ("api_version", "resource"):
            yield child_path(path, name), Leaf(CONTENT, getattr(self, name))
        doc: Any = {}
        for part in (self.body, self.meta, self.assigned):
            doc = _merge(doc, part)
        yield from object_leaves(self.kind, doc, (), path)

    def label(self) -> str:
        """:attr:`ref` — ``deployments.apps/shop/web``, as restore reports name objects."""
        return self.ref

    def manifest(self) -> dict[str, Any]:
        """The whole object, as it was read from the API."""
        return join_object(self.api_version, self.kind, self.body, self.meta, self.assigned)

    @property
    def ref(self) -> str:
        """A short, readable reference: ``deployments.apps/shop/web``."""
        res = f"{self.resource}.{self.group}" if self.group else self.resource
        return f"{res}/{self.namespace}/{self.name}" if self.namespace else f"{res}/{self.name}"

    @property
    def uid(self) -> str:
        """The UID the object had at capture time."""
        return str(self.assigned.get("metadata", {}).get("uid", ""))


@register_snapshot_type
class KubernetesSnapshot(Snapshot):
    """Objects of one namespace, resource type, object or label selection."""

    schema_name: ClassVar[str] = "kubernetes"
    schema_version: int = 2
    connector: str = "k8s"
    context: str = Field(description="kubeconfig context the capture used")
    server_url: str = Field("", description="API server URL of that context")
    namespace: str | None = Field(None, description="None for cluster-scoped targets")
    resource: str | None = Field(None, description="resource.group the target named, if any")
    name: str | None = Field(None, description="object name the target named, if any")
    selector: str | None = Field(None, description="label selector of the target, if any")
    node: str | None = Field(None, description="the node whose pods the target named, if any")
    include_owned: bool = Field(False, description="controller-owned pods etc. were captured")
    listed: list[str] = Field(
        default_factory=list,
        description="resource.group types listed in full for this target; an overwrite restore "
        "removes live objects of these types (in scope) that the capture did not have",
    )
    denied: list[str] = Field(
        default_factory=list, description="resource.group types the credentials may not list"
    )
    dependencies: list[str] = Field(
        default_factory=list,
        description="item keys captured because target objects need them (CRDs of custom "
        "resources, PVs of claims); never removed by a restore",
    )
    items: list[KubeObject] = Field(default_factory=list)


@register_migration("kubernetes", 1)
def _v1_to_v2(document: dict[str, Any]) -> dict[str, Any]:
    """v2 adds ``node`` (pods bound to one node), ``None`` for older captures."""
    return {**document, "schema_version": 2}
