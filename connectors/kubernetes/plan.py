"""Deciding, per object, what a restore must do — before anything is written.

Each captured object in scope is compared with its live counterpart (by
kind, namespace and name), projection by projection, ``server``-class leaves
ignored:

* missing → ``create`` (under every policy);
* equal → ``unchanged`` (its live UID still feeds the UID map);
* different → a conflict: ``overwrite`` updates it (the object, its status,
  its managedFields — only the parts that differ), ``merge`` keeps the live
  object, ``refuse`` stops the restore before any write.

Live objects of the types the capture listed in full, in the target's scope
but not in the capture, are conflicts too: ``overwrite`` deletes them,
``merge`` keeps them.  Namespaces and CRDs are never deleted that way: that
would delete everything in them.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import time
from dataclasses import dataclass, field
from typing import Any

from preimage.connectors.kubernetes.capture import get_object, list_objects
from preimage.connectors.kubernetes.client import ApiError, KubeClient
from preimage.connectors.kubernetes.derived import derived_reason
from preimage.connectors.kubernetes.discovery import Discovery, ResourceType
from preimage.interface.errors import RestoreConflictError
from preimage.restoration import ConflictMode, RestorePolicy
from preimage.snapshot_schemas.kubernetes import KubeObject, KubernetesSnapshot, split_object

_NEVER_REMOVED = {"namespaces", "customresourcedefinitions.apiextensions.k8s.io"}


class Action(enum.StrEnum):
    """What a restore does with one captured object."""

    CREATE = "create"
    UPDATE = "update"
    UNCHANGED = "unchanged"
    KEEP = "keep"  # differs, and the policy keeps the live object
    SKIP = "skip"  # missing, and deliberately not re-created (the reason says why)


@dataclass
class Step:
    """One captured object and what to do with it."""

    item: KubeObject
    rtype: ResourceType | None  # None while the API does not serve its type (CRD gone)
    live: dict[str, Any] | None
    action: Action
    parts: tuple[str, ...] = ()  # for UPDATE: "object", "status", "managedFields"
    reason: str = ""

    @property
    def key(self) -> str:
        return self.item.ref


@dataclass
class Extra:
    """A live object the capture did not have."""

    rtype: ResourceType
    obj: dict[str, Any]

    @property
    def key(self) -> str:
        md = self.obj.get("metadata", {})
        ns = md.get("namespace")
        return f"{self.rtype.qualified}/{ns}/{md.get('name')}" if ns else \
            f"{self.rtype.qualified}/{md.get('name')}"


@dataclass
class Plan:
    """Everything a restore will do, in no particular order yet."""

    steps: list[Step] = field(default_factory=list)
    remove: list[Extra] = field(default_factory=list)
    keep_extra: list[tuple[Extra, str]] = field(default_factory=list)
    namespace_missing: bool = False  # the target namespace must be (re-)created
    notes: list[str] = field(default_factory=list)


def in_scope(item: KubeObject, only: tuple[str, ...], discovery: Discovery) -> bool:
    """Whether ``item`` is inside ``--only`` scopes: ``RESOURCE[/NAME]`` or key prefixes."""
    if not only:
        return True
    rtype = discovery.get(item.group, item.resource)
    names = rtype.names() if rtype else {item.resource, item.kind.lower()}
    for scope in only:
        if item.natural_key().startswith(scope) or item.ref.startswith(scope):
            return True
        parts = [p for p in scope.strip("/").split("/") if p]
        if not parts or parts[0].lower() not in names:
            continue
        if len(parts) == 1 or parts[-1] == item.name:
            return True
    return False


def differing_parts(item: KubeObject, live: dict[str, Any], rtype: ResourceType) -> tuple[str, ...]:
    """Which writes would bring ``live`` back to ``item`` (server-class leaves ignored)."""
    body, meta, _ = split_object(live)
    want, have = copy.deepcopy(item.meta), copy.deepcopy(meta)
    want_status, have_status = want.pop("status", None), have.pop("status", None)
    want_mf = want.get("metadata", {}).pop("managedFields", None)
    have_mf = have.get("metadata", {}).pop("managedFields", None)
    parts = []
    if item.body != body or want != have:
        parts.append("object")
    if want_status != have_status:
        if rtype.has_status and item.kind != "Pod":
            parts.append("status")
        elif "object" not in parts:
            parts.append("object")
    if want_mf != have_mf:
        parts.append("managedFields")
    return tuple(parts)


def terminating(obj: dict[str, Any] | None) -> bool:
    """The object is being deleted (it has a deletionTimestamp)."""
    return bool(obj and obj.get("metadata", {}).get("deletionTimestamp"))


def wait_gone(
    client: KubeClient, rtype: ResourceType, namespace: str | None, name: str, seconds: float
) -> dict[str, Any] | None:
    """Wait up to ``seconds`` for an object being deleted to go; the object if it stayed."""
    deadline = time.monotonic() + seconds
    while True:
        obj = get_object(client, rtype, namespace, name)
        if obj is None or not terminating(obj):
            return obj
        if time.monotonic() >= deadline:
            return obj
        time.sleep(0.5)


class Planner:
    """Build the :class:`Plan` for restoring ``snap`` under ``policy``."""

    def __init__(
        self, client: KubeClient, discovery: Discovery, snap: KubernetesSnapshot,
        policy: RestorePolicy, wait_seconds: float,
    ) -> None:
        self.client = client
        self.discovery = discovery
        self.snap = snap
        self.policy = policy
        self.wait_seconds = wait_seconds

    def plan(self) -> Plan:
        plan = Plan()
        items = [i for i in self.snap.items if in_scope(i, self.policy.only, self.discovery)
                 and (self.policy.keys is None or i.natural_key() in self.policy.keys)]
        plan.namespace_missing = self._namespace_missing(plan)
        live = self._live(items, plan.namespace_missing)
        conflicts: list[str] = []
        overwrite = self.policy.conflict is ConflictMode.OVERWRITE
        for item in items:
            rtype = self.rtype(item)
            obj = live.get(item.natural_key())
            if obj is None and _finished_job(item):
                plan.steps.append(Step(item, rtype, None, Action.SKIP, (),
                                       "a finished Job: re-creating it would run it again"))
                continue
            if obj is None or rtype is None:
                plan.steps.append(Step(item, rtype, None, Action.CREATE))
                continue
            if terminating(obj):  # waited for, then created again
                plan.steps.append(Step(item, rtype, obj, Action.CREATE, (),
                                       "it is being deleted; re-created once it is gone"))
                continue
            parts = differing_parts(item, obj, rtype)
            if not parts:
                plan.steps.append(Step(item, rtype, obj, Action.UNCHANGED))
                continue
            conflicts.append(item.ref)
            if overwrite:
                plan.steps.append(Step(item, rtype, obj, Action.UPDATE, parts))
            else:
                plan.steps.append(Step(item, rtype, obj, Action.KEEP, parts,
                                       "changed since the capture; merge keeps the live object"))
        for extra in self._extras(items, plan.namespace_missing):
            conflicts.append(extra.key)
            if extra.rtype.qualified in _NEVER_REMOVED:
                plan.keep_extra.append((extra, f"created after the capture; a restore never "
                                        f"deletes a {extra.rtype.kind} (that would delete "
                                        "everything in it) — delete it yourself if intended"))
            elif overwrite:
                plan.remove.append(extra)
            else:
                plan.keep_extra.append((extra, "created after the capture; merge keeps it"))
        if self.policy.conflict is ConflictMode.REFUSE and conflicts:
            raise RestoreConflictError(self.snap.target, conflicts)
        return plan

    def rtype(self, item: KubeObject) -> ResourceType | None:
        """The REST type of ``item``, in the version it was captured in."""
        return type_for(self.discovery, item)

    # ------------------------------------------------------------ live state
    def _namespace_missing(self, plan: Plan) -> bool:
        """Whether the target namespace is gone (waiting for a terminating one to go)."""
        ns_name = self.snap.namespace
        ns_type = self.discovery.get("", "namespaces")
        if ns_name is None or ns_type is None:
            return False
        try:
            obj = get_object(self.client, ns_type, None, ns_name)
        except ApiError as exc:
            if not exc.forbidden:
                raise
            plan.notes.append(f"cannot read namespace {ns_name} ({exc.message}); "
                              "assuming it exists")
            return False
        if terminating(obj):
            if self.policy.dry_run:
                plan.notes.append(
                    f"namespace {ns_name} is terminating; the restore waits (up to "
                    f"{self.wait_seconds:.0f}s) for it to go, then re-creates it"
                )
                return True
            obj = wait_gone(self.client, ns_type, None, ns_name, self.wait_seconds)
            if obj is not None:
                finalizers = obj.get("spec", {}).get("finalizers") or []
                plan.notes.append(
                    f"namespace {ns_name} is still terminating after {self.wait_seconds:.0f}s "
                    f"(finalizers: {', '.join(finalizers) or 'none'}); run the restore again "
                    "once it is gone"
                )
                return False
        return obj is None

    def _live(self, items: list[KubeObject], namespace_missing: bool) -> dict[str, dict[str, Any]]:
        """Live objects by natural key: one list per (type, namespace), a GET for few."""
        groups: dict[tuple[str, str, str], list[KubeObject]] = {}
        for item in items:
            if namespace_missing and item.namespace == self.snap.namespace:
                continue
            groups.setdefault((item.group, item.resource, item.namespace), []).append(item)
        out: dict[str, dict[str, Any]] = {}
        for (_, _, ns), members in groups.items():
            rtype = self.rtype(members[0])
            if rtype is None:
                continue
            if len(members) <= 3:
                for m in members:
                    obj = get_object(self.client, rtype, ns or None, m.name)
                    if obj is not None:
                        out[m.natural_key()] = _typed(obj, rtype)
                continue
            wanted = {m.name: m for m in members}
            for obj in list_objects(self.client, rtype, ns or None):
                name = obj.get("metadata", {}).get("name")
                if name in wanted:
                    out[wanted[name].natural_key()] = obj
        return out

    def _extras(self, items: list[KubeObject], namespace_missing: bool) -> list[Extra]:
        if namespace_missing:
            return []
        if self.snap.name:
            return self._named_extra()
        have = {i.natural_key() for i in self.snap.items}
        out = []
        for qualified in self.snap.listed:
            rtype = next((t for t in self.discovery.types if t.qualified == qualified), None)
            if rtype is None:
                continue
            try:
                objs = list(list_objects(self.client, rtype, self.snap.namespace,
                                         self.snap.selector, self.snap.node))
            except ApiError as exc:
                if exc.forbidden:
                    continue  # cannot see them, so cannot judge them
                raise
            for obj in objs:
                probe = KubeObject.from_object(obj, rtype.resource)
                if probe.natural_key() in have:
                    continue
                if derived_reason(obj, rtype, include_owned=self.snap.include_owned):
                    continue
                if not in_scope(probe, self.policy.only, self.discovery):
                    continue
                if self.policy.keys is not None and probe.natural_key() not in self.policy.keys:
                    continue  # an undo removes exactly the objects the call created
                out.append(Extra(rtype, obj))
        return out

    def _named_extra(self) -> list[Extra]:
        """The object a named target addressed, when it did not exist at capture time but
        does now: the backup says it was absent, so an overwrite removes it."""
        if self.snap.items or not self.snap.resource:
            return []
        rtype = next((t for t in self.discovery.types if t.qualified == self.snap.resource), None)
        if rtype is None:
            return []
        obj = get_object(self.client, rtype, self.snap.namespace, self.snap.name or "")
        if obj is None or derived_reason(obj, rtype, include_owned=self.snap.include_owned):
            return []
        return [Extra(rtype, obj)]


def type_for(discovery: Discovery, item: KubeObject) -> ResourceType | None:
    """The type serving ``item``, addressed in the version it was captured in (the
    server converts between the versions it serves)."""
    rtype = discovery.get(item.group, item.resource)
    version = item.api_version.rpartition("/")[2]
    if rtype is None or not version or rtype.version == version:
        return rtype
    return dataclasses.replace(rtype, version=version)


def _finished_job(item: KubeObject) -> bool:
    if item.kind != "Job" or item.group != "batch":
        return False
    conditions = item.meta.get("status", {}).get("conditions") or []
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in conditions)


def _typed(obj: dict[str, Any], rtype: ResourceType) -> dict[str, Any]:
    obj.setdefault("apiVersion", rtype.api_version)
    obj.setdefault("kind", rtype.kind)
    return obj
