"""The state one restore's writer parts share (see :mod:`.apply`)."""

from __future__ import annotations

import threading
from typing import Any

from preimage.connectors.kubernetes.client import FIELD_MANAGER, MERGE_PATCH, ApiError, KubeClient
from preimage.connectors.kubernetes.discovery import Discovery
from preimage.connectors.kubernetes.plan import Action, Plan, Step
from preimage.restoration import RestorePolicy, RestoreReport
from preimage.snapshot_schemas.kubernetes import KubeObject, KubernetesSnapshot


class Failed(Exception):
    """One object could not be written; the message says why."""


class WriterState:
    """What the parts of a restore share: the plan, the report, the UID map."""

    def __init__(
        self, client: KubeClient, discovery: Discovery, snap: KubernetesSnapshot, plan: Plan,
        policy: RestorePolicy, report: RestoreReport, wait_seconds: float,
    ) -> None:
        self.client = client
        self.discovery = discovery
        self.snap = snap
        self.plan = plan
        self.policy = policy
        self.report = report
        self.wait_seconds = wait_seconds
        self.dry = policy.dry_run
        self.lock = threading.Lock()
        self.by_uid = {s.item.uid: s for s in plan.steps if s.item.uid}
        self.uid_map: dict[str, str] = {}  # captured UID → live UID
        self.done: set[str] = set()  # keys whose step has been carried out (or failed)
        self.current: dict[str, dict[str, Any]] = {}  # key → object as last written
        self.owner_pending: dict[str, Step] = {}
        self.held_status: dict[str, Step] = {}
        self._manifests: dict[str, dict[str, Any]] = {}
        for step in plan.steps:
            if step.live is not None and step.action is not Action.CREATE:
                self.uid_map[step.item.uid] = step.live["metadata"]["uid"]

    def manifest(self, item: KubeObject) -> dict[str, Any]:
        """``item.manifest()``, joined once per restore (callers must not modify it)."""
        key = item.natural_key()
        with self.lock:
            doc = self._manifests.get(key)
        if doc is None:
            doc = item.manifest()
            with self.lock:
                self._manifests[key] = doc
        return doc

    def _patch(self, step: Step, patch: dict[str, Any]) -> None:
        assert step.rtype is not None
        try:
            new = self.client.request(
                "PATCH", step.rtype.path(step.item.namespace or None, step.item.name),
                query=[("fieldManager", FIELD_MANAGER)], body=patch, content_type=MERGE_PATCH,
            )
            self.current[step.key] = new
        except ApiError as exc:
            self.report.notes.append(f"{step.key}: could not set references: {why(exc)}")

    def _write_status(self, step: Step, obj: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError


def why(exc: ApiError) -> str:
    """A rejection in words, for reports."""
    return f"the API server refused it ({exc.status} {exc.reason}): {exc.message}"
