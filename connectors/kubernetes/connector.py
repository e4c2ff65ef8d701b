"""``KubernetesConnector``: capture, restore and diff of ``k8s://`` targets."""

from __future__ import annotations

import os
from typing import ClassVar

from preimage._blobs import BlobStore
from preimage._errors import InvalidTargetError
from preimage._target import Target
from preimage.connectors.kubernetes.address import Address
from preimage.connectors.kubernetes.apply import Writer
from preimage.connectors.kubernetes.capture import Capturer
from preimage.connectors.kubernetes.client import KubeClient
from preimage.connectors.kubernetes.discovery import Discovery
from preimage.connectors.kubernetes.plan import Planner
from preimage.restoration import RestorePolicy, RestoreReport
from preimage.similarity import StateDiff, diff_snapshots
from preimage.snapshot_schemas import Snapshot
from preimage.snapshot_schemas.kubernetes import KubernetesSnapshot

#: How long a restore waits for a terminating namespace (or object) to go,
#: and for a restored CRD to be Established: ``PREIMAGE_K8S_WAIT`` seconds.
DEFAULT_WAIT_SECONDS = 120.0


def wait_seconds() -> float:
    """The bounded wait for terminating objects, from ``PREIMAGE_K8S_WAIT``."""
    raw = os.environ.get("PREIMAGE_K8S_WAIT", "")
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_WAIT_SECONDS
    except ValueError:
        return DEFAULT_WAIT_SECONDS


class KubernetesConnector:
    """Kubernetes objects, whole: spec, labels, annotations, finalizers,
    ownerReferences, managedFields and status, through the official client.

    Targets: ``k8s://CONTEXT/NAMESPACE[/RESOURCE[/NAME]][?selector=…]``, with
    ``_`` as the namespace for cluster-scoped objects (see :mod:`.address`).
    """

    scheme: ClassVar[str] = "k8s"
    snapshot_type: ClassVar[type[Snapshot]] = KubernetesSnapshot

    def capture(self, target: Target, blobs: BlobStore) -> KubernetesSnapshot:
        """Read the target's objects (see :mod:`.capture`); never writes."""
        if target.scheme != self.scheme:
            raise InvalidTargetError(target.redacted, "not a k8s:// target")
        address = Address.parse(target)
        with KubeClient(address.context, address.uri) as client:
            return Capturer(client, address).run()

    def restore(
        self, snapshot: Snapshot, blobs: BlobStore, *, policy: RestorePolicy
    ) -> RestoreReport:
        """Bring the objects back (see :mod:`.plan` and :mod:`.apply`)."""
        assert isinstance(snapshot, KubernetesSnapshot)
        address = Address.parse(Target.parse(snapshot.target))
        report = RestoreReport(target=snapshot.target, connector=self.scheme,
                               dry_run=policy.dry_run)
        wait = wait_seconds()
        # the context the capture resolved, not whatever is current now
        with KubeClient(snapshot.context or address.context, address.uri) as client:
            discovery = Discovery(client)
            plan = Planner(client, discovery, snapshot, policy, wait).plan()
            report.notes += plan.notes
            Writer(client, discovery, snapshot, plan, policy, report, wait).run()
        return report

    def diff(self, before: Snapshot, after: Snapshot) -> StateDiff:
        """Objects added, removed or changed (server-assigned fields ignored)."""
        return diff_snapshots(before, after)
