"""The connector protocol every kind of external state implements, what a connector
declares it can do, and the defaults a connector author inherits."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

from preimage.restoration.granularity import Granularity

if TYPE_CHECKING:
    from preimage.interface.blobs import BlobStore
    from preimage.interface.target import Target
    from preimage.restoration import Relocation, RestorePolicy, RestoreReport
    from preimage.similarity import StateDiff
    from preimage.snapshot_schemas import Snapshot

__all__ = ["Capabilities", "Connector", "ConnectorBase", "Granularity", "ItemStream", "Policy",
           "capabilities_of", "relocate"]

Policy = Literal["overwrite", "merge", "refuse"]


@dataclass(frozen=True)
class Capabilities:
    """What a connector supports; the conformance kit runs every test that applies.

    * ``policies`` — the conflict policies its restore honours (``overwrite``
      brings the target back exactly, ``merge`` only puts back what is missing,
      ``refuse`` stops before writing if anything changed); any other is
      refused before anything is written;
    * ``sub_scopes`` — ``restore --only URI`` narrows a restore to part of a
      target (a path, a table, a folder, an object);
    * ``undo`` — how finely ``preimage undo`` reverts one call, as a
      :class:`Granularity` (its unit of state, its fields, what it merges inside
      one field), or ``None``: the connector restores whole targets only, and an
      undo is refused before anything is written.  The one declaration the undo
      engine, ``preimage connectors`` and the conformance kit read; the work is
      done by the connector's ``reverter`` (a
      :class:`~preimage.restoration.revert.Reverter`), or by the default one
      (items by natural key, fields by the schema's declarations);
    * ``absent_targets`` — a target that does not exist yet captures as
      "absent", and restoring that backup removes whatever appeared there;
    * ``server_identities`` — the system assigns identities a client cannot
      set (UIDs, OIDs, object ids); the restore reports each one it changed,
      old → new, and the schema says why each server field cannot come back;
    * ``remote`` — the state lives behind a server: an unreachable one is a
      :class:`~preimage.TransientConnectorError` (retry), a refusal a
      :class:`~preimage.TerminalConnectorError`;
    * ``audits_completeness`` — state in scope that the capture cannot read
      is listed in ``Snapshot.uncaptured`` instead of left out;
    * ``atomic_restore`` — the restore writes inside one transaction and reads
      every blob it uses inside it, so a damaged blob rolls everything back:
      the engine then checks that a one-target restore's blobs are present
      instead of reading each of them once more before it starts;
    * ``relocates`` — the connector restores into another target of its kind
      (``restore --to``) and compares a backup with one (``score --against``):
      its :meth:`ConnectorBase.relocate` re-addresses a snapshot to the
      destination and names every identity that had to change (see
      :mod:`preimage.restoration.relocation`).
    """

    policies: frozenset[Policy] = field(
        default_factory=lambda: frozenset({"overwrite", "merge", "refuse"})
    )
    sub_scopes: bool = True
    undo: Granularity | None = None
    absent_targets: bool = True
    server_identities: bool = False
    remote: bool = False
    audits_completeness: bool = False
    atomic_restore: bool = False
    relocates: bool = False


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
    They declare what they support in ``capabilities`` (see
    :class:`Capabilities`; :func:`capabilities_of` gives the defaults when a
    connector declares nothing).  :class:`ConnectorBase` supplies ``diff`` and
    the default capabilities.
    """

    scheme: ClassVar[str]
    snapshot_type: ClassVar[type[Snapshot]]

    def capture(self, target: Target, blobs: BlobStore) -> Snapshot: ...

    def restore(
        self, snapshot: Snapshot, blobs: BlobStore, *, policy: RestorePolicy
    ) -> RestoreReport: ...

    def diff(self, before: Snapshot, after: Snapshot) -> StateDiff: ...


class ConnectorBase:
    """What a connector inherits: the item-level ``diff`` of the meter and the default
    :class:`Capabilities`.  Subclass it and write ``capture`` and ``restore``."""

    capabilities: ClassVar[Capabilities] = Capabilities()
    #: Whether ``restore`` reads every item of a snapshot (its plan) before its first
    #: write, so a malformed chunk of a stored document stops it with nothing written:
    #: the engine then does not read a one-target restore's document a first time to
    #: check it.
    reads_items_before_writing: ClassVar[bool] = False

    def diff(self, before: Snapshot, after: Snapshot) -> StateDiff:
        """Items added, removed or changed, ``server`` and ``access`` fields ignored
        (:func:`preimage.similarity.diff_snapshots`)."""
        from preimage.similarity import diff_snapshots

        return diff_snapshots(before, after)

    def restores_whole_or_nothing(self, snapshot: Snapshot) -> bool:
        """Whether a restore of ``snapshot`` into its target as it is now shows nothing
        until every blob it read verified (one transaction; the file connector's tree
        built beside a target that is not there).  The engine then checks that a
        one-target restore's blobs are present instead of reading each of them before
        it starts — on a shared store, a fetch of every byte before the first write."""
        del snapshot
        return self.capabilities.atomic_restore

    def relocate(
        self, snapshot: Snapshot, destination: Target, *, other: Snapshot | None = None,
        blobs: BlobStore | None = None,
    ) -> Relocation:
        """``snapshot`` re-addressed to ``destination`` (another directory, database,
        namespace, …) with the identity mappings that takes.

        ``other`` is the destination's own snapshot when the relocation is for a
        comparison (``score --against``): values the destination assigns by place (a
        Service's cluster IP) may be taken from it, each reported as a mapping; ``blobs``
        is where the relocation reads the backup's bytes and keeps what it rewrites (a
        schema dump naming the database, a script naming an environment's prefix): the
        store for a restore, a scratch area over it for a comparison.

        Raises :class:`~preimage.UsageError` when the destination overlaps the source
        or is not of the same kind.  This default refuses: a connector that can restore
        elsewhere overrides it and declares ``Capabilities(relocates=True)``.
        """
        from preimage.interface.errors import UsageError

        raise UsageError(
            f"the {snapshot.connector} connector cannot restore or compare {snapshot.target} "
            f"into another target ({destination.redacted}); restore it in place, or score it "
            "against a backup of the same target. Nothing was written"
        )


def capabilities_of(connector: Any) -> Capabilities:
    """The capabilities ``connector`` declares, or the defaults."""
    caps = getattr(connector, "capabilities", None)
    return caps if isinstance(caps, Capabilities) else Capabilities()


def relocate(
    connector: Any, snapshot: Snapshot, destination: Target, *, other: Snapshot | None = None,
    blobs: BlobStore | None = None,
) -> Relocation:
    """``connector``'s relocation of ``snapshot`` to ``destination`` (see
    :meth:`ConnectorBase.relocate`); a destination that is the source itself needs none.

    Raises :class:`~preimage.UsageError` for a connector that does not declare
    ``relocates`` — a third-party connector that never heard of relocation is refused
    with the same clear message, not called with a snapshot it would misread.
    """
    from preimage.restoration import Relocation

    if destination.redacted.rstrip("/") == snapshot.target.rstrip("/"):
        return Relocation(snapshot)
    if not capabilities_of(connector).relocates:
        return ConnectorBase.relocate(connector, snapshot, destination)
    result: Relocation = connector.relocate(snapshot, destination, other=other, blobs=blobs)
    return result


class ItemStream:
    """Items a connector yields while it captures, for the engine to store as they
    come (``capture_stream``); it can be iterated once."""

    def __init__(self, items: Iterable[Any]) -> None:
        self._items: Iterator[Any] | None = iter(items)

    def __iter__(self) -> Iterator[Any]:
        if self._items is None:
            raise RuntimeError("a captured item stream can be read only once")
        items, self._items = self._items, None
        return items
