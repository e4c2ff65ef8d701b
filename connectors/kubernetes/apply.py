"""Carrying out a restore plan: tier by tier, then references, then managedFields.

1. live objects the capture did not have are deleted (``overwrite``);
2. CRDs the plan needs are written and awaited until Established;
3. every tier (see :mod:`.order`) is written, its objects in parallel: create,
   or replace with the live ``resourceVersion`` (a 409 means someone changed
   it meanwhile: it is read and judged again), then ``/status``;
4. after the PersistentVolumeClaim tier, restored volumes get their claim's
   new UID; after the last tier, ownerReferences to owners restored later;
5. last, each written object's managedFields are put back as captured (a
   patch that changes nothing else keeps them verbatim).

A rejection (admission webhook or policy, validation, quota) fails that object
only; the rest goes on.  A dry run sends every write with ``dryRun=All`` where
the server can judge it, so what the server would refuse shows up as failed.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from preimage.connectors.kubernetes import rewrite
from preimage.connectors.kubernetes.capture import get_object
from preimage.connectors.kubernetes.client import FIELD_MANAGER, ApiError
from preimage.connectors.kubernetes.discovery import ResourceType
from preimage.connectors.kubernetes.finish import Finishing
from preimage.connectors.kubernetes.order import TIERS, tier_of
from preimage.connectors.kubernetes.plan import (
    Action,
    Extra,
    Step,
    differing_parts,
    terminating,
    type_for,
    wait_gone,
)
from preimage.connectors.kubernetes.references import ReferenceFixes
from preimage.connectors.kubernetes.state import Failed, why
from preimage.restoration import ConflictMode, Outcome
from preimage.snapshot_schemas.kubernetes import (
    KubeObject,
    split_object,
)

_WORKERS = 8
_RETRIES = 4


class Writer(ReferenceFixes, Finishing):
    """Apply a :class:`Plan` and account for it in a :class:`RestoreReport`.

    The writing itself lives here; references (:mod:`.references`) and the
    last pass (:mod:`.finish`) are mixed in."""

    # ------------------------------------------------------------ entry
    def run(self) -> None:
        self._remove_extras()
        for extra, reason in self.plan.keep_extra:
            self.report.add(extra.key, Outcome.SKIPPED, "keep", reason)
        tiers: dict[int, list[Step]] = {}
        for step in self.plan.steps:
            tiers.setdefault(tier_of(_qualified(step.item)), []).append(step)
        for idx in range(len(TIERS)):
            steps = tiers.get(idx, [])
            if idx == 1 and not self.dry:  # custom resource types exist from here on
                self.discovery.refresh()
                for step in self.plan.steps:
                    if step.rtype is None:
                        step.rtype = type_for(self.discovery, step.item)
            self._run_tier(steps)
            if TIERS[idx] == ("namespaces",):
                self._bare_namespace()
            if TIERS[idx] == ("persistentvolumeclaims",):
                self._fix_claims()
        self._fix_owners()
        self._fix_managed_fields()
        self._report_remaps()

    def _bare_namespace(self) -> None:
        """A namespace that is gone but was not captured itself (a selector target):
        created bare, so that the objects captured in it have somewhere to go."""
        ns = self.snap.namespace
        if not self.plan.namespace_missing or ns is None or any(
                s.item.kind == "Namespace" and not s.item.group for s in self.plan.steps):
            return
        ns_type = self.discovery.get("", "namespaces")
        if ns_type is None:
            return
        reason = "re-created bare: it held the captured objects, but its own labels and " \
                 "annotations were not captured (a selector target)"
        try:
            if not self.dry:
                self.client.request("POST", ns_type.path(), body={
                    "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        except ApiError as exc:
            if not exc.conflict:
                self.report.add(f"namespaces/{ns}", Outcome.FAILED, "create", why(exc))
                return
        self.report.add(f"namespaces/{ns}", Outcome.PLANNED if self.dry else Outcome.RESTORED,
                        "create", reason)

    def _run_tier(self, steps: list[Step]) -> None:
        if not steps:
            return
        with ThreadPoolExecutor(min(_WORKERS, len(steps))) as pool:
            list(pool.map(self._run_step, steps))

    def _run_step(self, step: Step) -> None:
        try:
            if step.action is Action.UNCHANGED:
                self.report.add(step.key, Outcome.UNCHANGED)
            elif step.action is Action.KEEP:
                self.report.add(step.key, Outcome.SKIPPED, "keep", step.reason)
            elif step.action is Action.SKIP:
                self.report.add(step.key, Outcome.SKIPPED, "", step.reason)
            elif step.rtype is None and self.dry and self._crd_planned(step.item):
                self.report.add(step.key, Outcome.PLANNED, "create", "not checked by the "
                                "server's dry run: its CustomResourceDefinition is re-created "
                                "by this restore")
            elif step.rtype is None:
                raise Failed(
                    f"the API server does not serve {_qualified(step.item)} and the backup "
                    "has no CustomResourceDefinition for it"
                )
            elif self.dry:
                self._dry_step(step)
            else:
                self._write_step(step)
        except Failed as exc:
            self.report.add(step.key, Outcome.FAILED, step.action.value, str(exc))
        except ApiError as exc:
            self.report.add(step.key, Outcome.FAILED, step.action.value, why(exc))
        finally:
            with self.lock:
                self.done.add(step.key)

    def _crd_planned(self, item: KubeObject) -> bool:
        name = f"{item.resource}.{item.group}"
        return any(s.item.kind == "CustomResourceDefinition" and s.item.name == name
                   for s in self.plan.steps)

    # ------------------------------------------------------------ extras
    def _remove_extras(self) -> None:
        def remove(extra: Extra) -> None:
            md = extra.obj["metadata"]
            try:
                self._delete(extra.rtype, md.get("namespace"), md["name"], md.get("uid"))
            except ApiError as exc:
                if not exc.not_found:
                    self.report.add(extra.key, Outcome.FAILED, "delete", why(exc))
                    return
            outcome = Outcome.PLANNED if self.dry else Outcome.REMOVED
            self.report.add(extra.key, outcome, "delete", "created after the capture")

        if self.plan.remove:
            with ThreadPoolExecutor(min(_WORKERS, len(self.plan.remove))) as pool:
                list(pool.map(remove, self.plan.remove))

    def _delete(self, rtype: ResourceType, ns: str | None, name: str, uid: str | None,
                orphan: bool = False) -> None:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        if orphan:
            body["propagationPolicy"] = "Orphan"
        if self.dry:  # a DELETE with a body takes its options from the body, not the query
            body["dryRun"] = ["All"]
        self.client.request("DELETE", rtype.path(ns, name), body=body)

    # ------------------------------------------------------------ one object
    def _write_step(self, step: Step) -> None:
        assert step.rtype is not None
        if step.action is Action.CREATE:
            obj, action, reason = self._create(step)
        else:
            obj, action, reason = self._update(step)
        if step.item.kind == "CustomResourceDefinition":
            self._await_established(step.rtype, step.item.name)
        if step.item.kind in ("PersistentVolume", "PersistentVolumeClaim") and \
                not step.item.group:
            with self.lock:  # written once the volume points at its claim again
                self.held_status[step.key] = step
        else:
            obj = self._write_status(step, obj)
        with self.lock:
            self.current[step.key] = obj
            self.uid_map[step.item.uid] = obj["metadata"]["uid"]
        self.report.add(step.key, Outcome.RESTORED, action, reason)

    def _desired(self, step: Step) -> tuple[dict[str, Any], list[str]]:
        """The body to write: the captured object, stripped, its references rewritten."""
        assert step.rtype is not None
        item = step.item
        obj = rewrite.strip_for_write(self.manifest(item), has_status=step.rtype.has_status)
        notes: list[str] = []
        md = obj["metadata"]
        if md.get("ownerReferences"):
            refs, pending, dropped = self._owner_refs(item)
            md["ownerReferences"] = refs
            if not refs:
                md.pop("ownerReferences")
            notes += dropped
            if pending and not self.dry:
                with self.lock:
                    self.owner_pending[step.key] = step
        if item.kind == "PersistentVolume" and not item.group:
            self._rewrite_claim(step, obj, notes)
        sa_uid = (md.get("annotations") or {}).get(rewrite.SA_UID_ANNOTATION)
        if item.kind == "Secret" and sa_uid:
            sa_name = md["annotations"].get("kubernetes.io/service-account.name", "")
            new = self.uid_map.get(sa_uid) or self._live_uid("v1", "ServiceAccount",
                                                             item.namespace, sa_name)
            if new:
                md["annotations"][rewrite.SA_UID_ANNOTATION] = new
        return obj, notes

    def _create(self, step: Step) -> tuple[dict[str, Any], str, str]:
        assert step.rtype is not None
        if terminating(step.live):
            left = wait_gone(self.client, step.rtype, step.item.namespace or None,
                             step.item.name, self.wait_seconds)
            if left is not None:
                finalizers = ", ".join(left["metadata"].get("finalizers") or []) or "none"
                raise Failed(f"it is being deleted and still there after "
                             f"{self.wait_seconds:.0f}s (finalizers: {finalizers}); run the "
                             "restore again once it is gone")
            step.live = None
        obj, notes = self._desired(step)
        if step.item.kind == "Job":
            rewrite.drop_job_uid_selector(obj)
        query = [("fieldManager", _sole_manager(self.manifest(step.item)) or FIELD_MANAGER)]
        for _ in range(3):
            try:
                created = self.client.request(
                    "POST", step.rtype.path(step.item.namespace or None), query=query, body=obj
                )
                return created, "create", "; ".join(notes)
            except ApiError as exc:
                if exc.conflict:  # it appeared meanwhile (a controller made it)
                    return self._appeared(step)
                if exc.status == 422 and step.item.kind == "Service" and "allocated" in exc.message:
                    if "IP" in exc.message and rewrite.drop_service_ips(obj):
                        notes.append("its cluster IP was taken; the server assigned a new one")
                        continue
                    if "port" in exc.message and rewrite.drop_node_ports(obj):
                        notes.append("its node port was taken; the server assigned a new one")
                        continue
                raise
        raise Failed("the server kept refusing the Service's addresses")

    def _appeared(self, step: Step) -> tuple[dict[str, Any], str, str]:
        assert step.rtype is not None
        live = get_object(self.client, step.rtype, step.item.namespace or None, step.item.name)
        if live is None:
            raise Failed("it appeared and vanished again during the restore; run it again")
        step.live = live
        parts = differing_parts(step.item, live, step.rtype)
        if not parts:
            return live, "adopt", "created meanwhile by the cluster, identical"
        if self.policy.conflict is not ConflictMode.OVERWRITE:
            raise Failed("created meanwhile by someone else and different; policy keeps it")
        step.parts = parts
        obj, _, _ = self._update(step)
        return obj, "create", "created meanwhile by the cluster; brought back to the capture"

    def _update(self, step: Step) -> tuple[dict[str, Any], str, str]:
        assert step.rtype is not None and step.live is not None
        rtype, item = step.rtype, step.item
        live = step.live
        if "object" not in step.parts:
            return live, "update " + "+".join(step.parts), ""
        for _ in range(_RETRIES):
            obj, notes = self._desired(step)
            obj["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
            obj["metadata"]["uid"] = live["metadata"]["uid"]
            if item.kind == "Job":
                rewrite.keep_live_job_selector(obj, live)
            if rtype.has_status:
                obj["status"] = live.get("status", {})
            try:
                new = self.client.request(
                    "PUT", rtype.path(item.namespace or None, item.name),
                    query=[("fieldManager", FIELD_MANAGER)], body=obj,
                )
                return new, "update " + "+".join(step.parts), "; ".join(notes)
            except ApiError as exc:
                if exc.conflict:  # changed since it was compared: look again
                    fresh = get_object(self.client, rtype, item.namespace or None, item.name)
                    if fresh is None:
                        step.action, step.live = Action.CREATE, None
                        return self._create(step)
                    live = step.live = fresh
                    continue
                if exc.status == 422 and _immutable(exc.message):
                    return self._recreate(step, exc)
                raise
        raise Failed("it kept changing while being restored; run the restore again")

    def _recreate(self, step: Step, exc: ApiError) -> tuple[dict[str, Any], str, str]:
        """Delete and create again: a field that cannot change in place differs."""
        assert step.rtype is not None and step.live is not None
        item = step.item
        if self.policy.conflict is not ConflictMode.OVERWRITE:
            raise Failed(why(exc))
        self._delete(step.rtype, item.namespace or None, item.name,
                     step.live["metadata"]["uid"], orphan=True)
        left = wait_gone(self.client, step.rtype, item.namespace or None, item.name,
                         self.wait_seconds)
        if left is not None:
            raise Failed(f"must be re-created ({exc.message}) but it is still being deleted")
        step.action, step.live = Action.CREATE, None
        obj, _, reason = self._create(step)
        because = f"re-created: a field that cannot change in place differed " \
                  f"({exc.message[:160]})"
        return obj, "re-create", "; ".join(r for r in (because, reason) if r)

    def _write_status(self, step: Step, obj: dict[str, Any]) -> dict[str, Any]:
        assert step.rtype is not None
        status = self.manifest(step.item).get("status")
        if not status or not step.rtype.has_status or step.item.kind == "Pod":
            return obj
        path = step.rtype.path(step.item.namespace or None, step.item.name, "status")
        for _ in range(_RETRIES):
            if split_object(obj)[1].get("status") == step.item.meta.get("status"):
                return obj
            body = dict(obj)
            body["status"] = rewrite.set_observed_generation(
                status, obj["metadata"].get("generation")
            )
            try:
                result: dict[str, Any] = self.client.request(
                    "PUT", path, query=[("fieldManager", FIELD_MANAGER)], body=body
                )
                return result
            except ApiError as exc:
                if not exc.conflict:
                    raise Failed(f"the object was restored but its status was not: {why(exc)}")
                fresh = get_object(self.client, step.rtype, step.item.namespace or None,
                                   step.item.name)
                if fresh is None:
                    raise Failed("deleted by someone else right after it was restored")
                obj = fresh
        return obj

    def _dry_step(self, step: Step) -> None:
        assert step.rtype is not None
        item = step.item
        in_missing_ns = self.plan.namespace_missing and item.namespace == self.snap.namespace
        crd_missing = self.discovery.get(item.group, item.resource) is None
        what = step.action.value if step.action is Action.CREATE else \
            "update " + "+".join(step.parts)
        if in_missing_ns or crd_missing or (item.kind == "Namespace"
                                             and self.plan.namespace_missing):
            why = (f"namespace {item.namespace} is re-created by this restore" if in_missing_ns
                   else "its CustomResourceDefinition is re-created by this restore"
                   if crd_missing else "")
            reason = f"not checked by the server's dry run: {why}" if why else ""
            self.report.add(step.key, Outcome.PLANNED, what, reason)
            return
        obj, notes = self._desired(step)
        if step.action is Action.CREATE and terminating(step.live):
            pass  # cannot be judged before it is gone
        elif step.action is Action.CREATE:
            if item.kind == "Job":
                rewrite.drop_job_uid_selector(obj)
            self.client.request("POST", step.rtype.path(item.namespace or None),
                                query=self._dry_query(), body=obj)
        elif "object" in step.parts and step.live is not None:
            obj["metadata"]["resourceVersion"] = step.live["metadata"]["resourceVersion"]
            if item.kind == "Job":
                rewrite.keep_live_job_selector(obj, step.live)
            self.client.request("PUT", step.rtype.path(item.namespace or None, item.name),
                                query=self._dry_query(), body=obj)
        self.report.add(step.key, Outcome.PLANNED, what, "; ".join(n for n in (
            step.reason, *notes) if n))

    def _dry_query(self) -> list[tuple[str, str]]:
        return [("dryRun", "All")] if self.dry else []

    # ------------------------------------------------------------ CRDs, remaps
    def _await_established(self, rtype: ResourceType, name: str) -> None:
        deadline = time.monotonic() + self.wait_seconds
        while time.monotonic() < deadline:
            obj = get_object(self.client, rtype, None, name)
            conds = (obj or {}).get("status", {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
                return
            time.sleep(0.2)
        raise Failed(f"CustomResourceDefinition {name} was not Established within "
                     f"{self.wait_seconds:.0f}s")

def _qualified(item: KubeObject) -> str:
    return f"{item.resource}.{item.group}" if item.group else item.resource


def _sole_manager(manifest: dict[str, Any]) -> str | None:
    """The manager to create with when one ``Update`` entry owned every field."""
    entries = manifest["metadata"].get("managedFields") or []
    if len(entries) == 1 and entries[0].get("operation") == "Update" and \
            not entries[0].get("subresource"):
        return str(entries[0].get("manager") or "") or None
    return None


def _immutable(message: str) -> bool:
    text = message.lower()
    return "immutable" in text or "may not change" in text or "cannot be changed" in text



