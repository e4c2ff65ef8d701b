"""``KubernetesConnector``: capture, restore and diff of ``k8s://`` targets."""

from __future__ import annotations

import os
from typing import ClassVar
from urllib.parse import quote

from preimage.connectors.kubernetes.address import Address
from preimage.connectors.kubernetes.apply import Writer
from preimage.connectors.kubernetes.capture import Capturer
from preimage.connectors.kubernetes.client import KubeClient
from preimage.connectors.kubernetes.discovery import Discovery
from preimage.connectors.kubernetes.plan import Planner
from preimage.connectors.kubernetes.revert import KubeReverter
from preimage.interface.blobs import BlobStore
from preimage.interface.connector import Capabilities, ConnectorBase, Granularity
from preimage.interface.errors import InvalidTargetError, PreimageError
from preimage.interface.target import Target
from preimage.restoration import Relocation, RestorePolicy, RestoreReport
from preimage.snapshot_schemas import Snapshot
from preimage.snapshot_schemas.kubernetes import KubeObject, KubernetesSnapshot

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


class KubernetesConnector(ConnectorBase):
    """Kubernetes objects, whole: spec, labels, annotations, finalizers,
    ownerReferences, managedFields and status, through the official client.

    Targets: ``k8s://CONTEXT/NAMESPACE[/RESOURCE[/NAME]][?selector=…]``, with
    ``_`` as the namespace for cluster-scoped objects (see :mod:`.address`).
    """

    scheme: ClassVar[str] = "k8s"
    snapshot_type: ClassVar[type[Snapshot]] = KubernetesSnapshot
    capabilities: ClassVar[Capabilities] = Capabilities(
        server_identities=True, remote=True, relocates=True, undo=Granularity(
            "object by kind, namespace and name", "field path",
            "keyed lists by key; managedFields and status follow the live object"))
    reverter: ClassVar[KubeReverter] = KubeReverter()

    def capture(self, target: Target, blobs: BlobStore) -> KubernetesSnapshot:
        """Read the target's objects (see :mod:`.capture`); never writes."""
        if target.scheme != self.scheme:
            raise InvalidTargetError(target.redacted, "not a k8s:// target")
        address = Address.parse(target)
        with KubeClient(address.context, address.uri, address.kubeconfig) as client:
            return Capturer(client, address).run()

    def capture_following(self, target: Target, blobs: BlobStore, previous: Snapshot
                          ) -> KubernetesSnapshot:
        """:meth:`capture`, plus every object of ``previous`` that left the target's scope but
        still exists (a ConfigMap re-created without the label a selector names) — so a
        capture right after a call, compared with the one before it, shows such an object
        as changed, not deleted, and an undo never writes over it blind."""
        snap = self.capture(target, blobs)
        assert isinstance(previous, KubernetesSnapshot)
        listed = {i.natural_key() for i in snap.items}
        gone = [i for i in previous.items if i.natural_key() not in listed]
        found: list[KubeObject] = []
        context = quote(Address.parse(target).context or "", safe="")
        for obj in gone:
            resource = obj.resource + (f".{obj.group}" if obj.group else "")
            one = Target.parse(f"k8s://{context}/{obj.namespace or '_'}/{resource}/{obj.name}")
            try:
                found += [i for i in self.capture(one, blobs).items
                          if i.natural_key() == obj.natural_key()]
            except PreimageError:
                continue  # gone indeed, or unreadable: it stays absent
        if not found:
            return snap
        return snap.model_copy(update={"items": [*snap.items, *found]})

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
        with KubeClient(snapshot.context or address.context, address.uri,
                        address.kubeconfig) as client:
            discovery = Discovery(client)
            plan = Planner(client, discovery, snapshot, policy, wait).plan()
            report.notes += plan.notes
            Writer(client, discovery, snapshot, plan, policy, report, wait).run()
        return report

    def relocate(
        self, snapshot: Snapshot, destination: Target, *, other: Snapshot | None = None,
        blobs: BlobStore | None = None,
    ) -> Relocation:
        """The namespace's objects in another namespace (:mod:`.relocate`)."""
        from preimage.connectors.kubernetes.relocate import relocate_namespace

        assert isinstance(snapshot, KubernetesSnapshot)
        assert other is None or isinstance(other, KubernetesSnapshot)
        return relocate_namespace(snapshot, destination, other)

