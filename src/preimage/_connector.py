"""The connector protocol every kind of external state implements."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from preimage._blobs import BlobStore
    from preimage._target import Target
    from preimage.restoration import RestorePolicy, RestoreReport
    from preimage.similarity import StateDiff
    from preimage.snapshot_schemas import Snapshot


@runtime_checkable
class Connector(Protocol):
    """Capture, restore and diff one kind of external state.

    * :meth:`capture` reads the target without changing it and returns a
      snapshot whose large bytes are in ``blobs``;
    * :meth:`restore` brings the target back to the snapshot as ``policy``
      allows and reports per item; with ``policy.dry_run`` it only plans;
    * :meth:`diff` says what differs between two snapshots of one target.

    Connectors raise :class:`~preimage.TransientConnectorError` for failures
    worth retrying and :class:`~preimage.TerminalConnectorError` otherwise.
    """

    scheme: ClassVar[str]
    snapshot_type: ClassVar[type[Snapshot]]

    def capture(self, target: Target, blobs: BlobStore) -> Snapshot: ...

    def restore(
        self, snapshot: Snapshot, blobs: BlobStore, *, policy: RestorePolicy
    ) -> RestoreReport: ...

    def diff(self, before: Snapshot, after: Snapshot) -> StateDiff: ...
