"""Following references across a restore: owners, claims and service accounts get the
UIDs their targets have now (see :mod:`.rewrite` for why each one matters)."""

from __future__ import annotations

import copy
from typing import Any

from preimage.connectors.kubernetes.capture import get_object
from preimage.connectors.kubernetes.plan import Action, Step
from preimage.connectors.kubernetes.state import Failed, WriterState
from preimage.restoration import IdRemap
from preimage.snapshot_schemas.kubernetes import KubeObject


class ReferenceFixes(WriterState):
    """ownerReferences, PV ``claimRef`` and the claims' held-back status."""

    def _owner_refs(self, item: KubeObject) -> tuple[list[dict[str, Any]], bool, list[str]]:
        """ownerReferences with current UIDs; whether some wait for a later tier; drops."""
        refs = copy.deepcopy(self.manifest(item)["metadata"].get("ownerReferences") or [])
        out, pending, dropped = [], False, []
        for ref in refs:
            old = ref.get("uid", "")
            owner = self.by_uid.get(old)
            with self.lock:
                new = self.uid_map.get(old)
                later = owner is not None and owner.action is Action.CREATE and \
                    owner.key not in self.done
            if later:
                pending = True  # added once every tier is written
                continue
            if not new:
                new = self._live_uid(ref.get("apiVersion", ""), ref.get("kind", ""),
                                     item.namespace, ref.get("name", ""))
            if new:
                out.append({**ref, "uid": new})
            else:
                dropped.append(
                    f"ownerReference to {ref.get('kind')}/{ref.get('name')} dropped: the owner "
                    "is gone and not restored (kept, the garbage collector would delete it)"
                )
        return out, pending, dropped

    def _live_uid(self, api_version: str, kind: str, namespace: str, name: str) -> str | None:
        group = api_version.rpartition("/")[0]
        rtype = next((t for t in self.discovery.types if t.group == group and t.kind == kind),
                     None)
        if rtype is None or not name:
            return None
        obj = get_object(self.client, rtype, namespace if rtype.namespaced else None, name)
        return str(obj["metadata"]["uid"]) if obj else None

    def _rewrite_claim(self, step: Step, obj: dict[str, Any], notes: list[str]) -> None:
        claim = obj.get("spec", {}).get("claimRef")
        if not isinstance(claim, dict) or not claim.get("name"):
            return
        old = claim.get("uid", "")
        claim_step = self.by_uid.get(old)
        with self.lock:
            new = self.uid_map.get(old) if claim_step is None or \
                claim_step.action is not Action.CREATE or claim_step.key in self.done else None
        if new is None and claim_step is not None and claim_step.action is Action.CREATE:
            claim.pop("uid", None)  # pre-bound by name until the claim is back
            return
        if new is None:
            new = self._live_uid("v1", "PersistentVolumeClaim", claim.get("namespace", ""),
                                 claim["name"])
        if new:
            claim["uid"] = new
        else:
            claim.pop("uid", None)
            notes.append(f"its claim {claim.get('namespace')}/{claim['name']} does not exist; "
                         "the volume is reserved for that claim name")

    def _fix_claims(self) -> None:
        """Give restored volumes their claim's current UID, which completes the binding,
        then write the claims' status (held back so the binder cannot mark them Lost)."""
        if self.dry:
            return
        for step in self.plan.steps:
            if step.item.kind != "PersistentVolume" or step.item.group or step.rtype is None \
                    or step.action is Action.KEEP or not step.item.uid:
                continue
            claim = self.manifest(step.item).get("spec", {}).get("claimRef") or {}
            if not claim.get("uid"):
                continue
            new = self.uid_map.get(claim["uid"]) or self._live_uid(
                "v1", "PersistentVolumeClaim", claim.get("namespace", ""), claim.get("name", ""))
            obj = self.current.get(step.key) or step.live or {}
            had = (obj.get("spec", {}).get("claimRef") or {}).get("uid")
            if new and had != new:
                self._patch(step, {"spec": {"claimRef": {"uid": new}}})
                self.report.remaps.append(IdRemap(key=step.key, field="spec.claimRef.uid",
                                                  old=claim["uid"], new=new))
        for step in self.held_status.values():
            assert step.rtype is not None
            fresh = get_object(self.client, step.rtype, step.item.namespace or None,
                               step.item.name)
            if fresh is None:
                continue
            try:
                self.current[step.key] = self._write_status(step, fresh)
            except Failed as exc:
                self.report.notes.append(f"{step.key}: {exc}")

    def _fix_owners(self) -> None:
        """Add ownerReferences whose owners were restored after their dependents."""
        if self.dry:
            return
        for step in self.owner_pending.values():
            refs, _, dropped = self._owner_refs(step.item)
            if refs:
                self._patch(step, {"metadata": {"ownerReferences": refs}})
            for why in dropped:
                self.report.notes.append(f"{step.key}: {why}")

