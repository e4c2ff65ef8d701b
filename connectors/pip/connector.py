"""``PipConnector``: capture, restore and diff of ``pip://`` targets."""

from __future__ import annotations

from typing import ClassVar

from preimage.connectors.pip.inventory import describe, open_environment
from preimage.interface.blobs import BlobStore
from preimage.interface.connector import Capabilities, ConnectorBase
from preimage.interface.target import Target
from preimage.restoration import Relocation, RestorePolicy, RestoreReport
from preimage.snapshot_schemas import Snapshot
from preimage.snapshot_schemas.pip import PipSnapshot


class PipConnector(ConnectorBase):
    """The package set of a Python environment, restorable offline.

    Targets are ``pip:///abs/path/to/venv`` (a directory with ``bin/python``)
    or ``pip:///abs/path/to/python``.  A capture keeps every installed file's
    bytes in the backup store; a restore builds wheels from them and makes
    the environment exactly the captured set with pip ``--no-index`` (see
    :mod:`.apply`).
    """

    scheme: ClassVar[str] = "pip"
    snapshot_type: ClassVar[type[Snapshot]] = PipSnapshot
    # A target names an existing environment or interpreter; there is no absent one.
    capabilities: ClassVar[Capabilities] = Capabilities(absent_targets=False, relocates=True)

    def capture(self, target: Target, blobs: BlobStore) -> PipSnapshot:
        """Read the environment's installed set into a :class:`PipSnapshot`.

        Raises :class:`InvalidTargetError` when the path is not a Python
        environment or its interpreter does not run.
        """
        env = open_environment(target)
        items, notes = describe(env, blobs, store_content=True)
        return PipSnapshot(
            target=target.redacted,
            interpreter=str(env.interpreter),
            prefix=str(env.prefix),
            paths=env.paths,
            items=items,
            notes=notes,
        )

    def restore(self, snapshot: Snapshot, blobs: BlobStore, *, policy: RestorePolicy) -> RestoreReport:
        """Make the environment exactly the captured set (order in :mod:`.apply`)."""
        from preimage.connectors.pip.apply import PipRestorer

        assert isinstance(snapshot, PipSnapshot)
        return PipRestorer(snapshot, blobs, policy).run()

    def relocate(
        self, snapshot: Snapshot, destination: Target, *, other: Snapshot | None = None,
        blobs: BlobStore | None = None,
    ) -> Relocation:
        """The package set in another environment, its prefix rewritten (:mod:`.relocate`)."""
        from preimage.connectors.pip.relocate import relocate_environment

        assert isinstance(snapshot, PipSnapshot)
        return relocate_environment(snapshot, destination, blobs)

