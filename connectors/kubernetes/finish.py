"""The last pass of a restore: managedFields as captured, and the report's remaps."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from preimage.connectors.kubernetes.capture import get_object, list_objects
from preimage.connectors.kubernetes.discovery import ResourceType
from preimage.connectors.kubernetes.plan import Action, Step
from preimage.connectors.kubernetes.state import WriterState
from preimage.restoration import IdRemap
from preimage.snapshot_schemas.kubernetes import managed_fields_for

_WORKERS = 8


class Finishing(WriterState):
    """managedFields and remaps, once every object is written."""

    def _fix_managed_fields(self) -> None:
        """Put back managedFields as captured, by a patch that changes nothing else."""
        steps = [s for s in self.plan.steps if s.key in self.current or (
            s.action is Action.UPDATE and "managedFields" in s.parts)]
        if self.dry or not steps:
            return
        live = self._relist(steps)

        def fix(step: Step) -> None:
            obj = live.get(step.key)
            if obj is None:
                return
            wanted = managed_fields_for(step.item.meta, step.item.assigned,
                                        obj["metadata"].get("ownerReferences") or [])
            if _strip_times(obj["metadata"].get("managedFields")) == _strip_times(wanted):
                return
            # an empty entry is how a client asks for no managedFields at all
            self._patch(step, {"metadata": {"managedFields": wanted or [{}]}})

        with ThreadPoolExecutor(_WORKERS) as pool:
            list(pool.map(fix, steps))

    def _relist(self, steps: list[Step]) -> dict[str, dict[str, Any]]:
        groups: dict[tuple[ResourceType, str], list[Step]] = {}
        for s in steps:
            if s.rtype is not None:
                groups.setdefault((s.rtype, s.item.namespace), []).append(s)
        out: dict[str, dict[str, Any]] = {}
        for (rtype, ns), members in groups.items():
            by_name = {s.item.name: s for s in members}
            if len(members) <= 3:
                for s in members:
                    obj = get_object(self.client, rtype, ns or None, s.item.name)
                    if obj is not None:
                        out[s.key] = obj
                continue
            for obj in list_objects(self.client, rtype, ns or None):
                step = by_name.get(obj["metadata"]["name"])
                if step is not None:
                    out[step.key] = obj
        return out

    def _report_remaps(self) -> None:
        if self.dry:
            return
        for step in self.plan.steps:
            new_uid = self.uid_map.get(step.item.uid)
            if new_uid and new_uid != step.item.uid:
                self.report.remaps.append(IdRemap(key=step.key, field="metadata.uid",
                                                  old=step.item.uid, new=new_uid))
            obj = self.current.get(step.key)
            if obj is not None and step.item.kind == "Service":
                self._service_remaps(step, obj)

    def _service_remaps(self, step: Step, obj: dict[str, Any]) -> None:
        old_spec = self.manifest(step.item).get("spec", {})
        new_spec = obj.get("spec", {})
        if old_spec.get("clusterIP") != new_spec.get("clusterIP"):
            self.report.remaps.append(IdRemap(key=step.key, field="spec.clusterIP",
                                              old=old_spec.get("clusterIP"),
                                              new=new_spec.get("clusterIP")))
        new_ports = {str(p.get("name") or p.get("port")): p.get("nodePort")
                     for p in new_spec.get("ports") or []}
        for p in old_spec.get("ports") or []:
            name = str(p.get("name") or p.get("port"))
            if "nodePort" in p and new_ports.get(name) != p["nodePort"]:
                self.report.remaps.append(IdRemap(key=step.key, field=f"spec.ports[{name}].nodePort",
                                                  old=p["nodePort"], new=new_ports.get(name)))




def _strip_times(entries: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "time"} for e in entries or []]
