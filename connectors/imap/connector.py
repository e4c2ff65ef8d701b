"""``ImapConnector``: capture, restore and diff of ``imap://`` and ``imaps://`` targets."""

from __future__ import annotations

from typing import ClassVar

from preimage.connectors.imap.apply import Applier
from preimage.connectors.imap.capture import MailboxCapture
from preimage.connectors.imap.plan import Planner
from preimage.connectors.imap.revert import ImapReverter
from preimage.connectors.imap.selection import Selection
from preimage.connectors.imap.session import ImapSession
from preimage.interface.blobs import BlobStore
from preimage.interface.connector import Capabilities, ConnectorBase, Granularity
from preimage.interface.errors import RestoreConflictError
from preimage.interface.target import Target
from preimage.restoration import ConflictMode, Relocation, RestorePolicy, RestoreReport
from preimage.snapshot_schemas import Snapshot
from preimage.snapshot_schemas.imap import ImapSnapshot


class ImapConnector(ConnectorBase):
    """An IMAP account, folder tree or message set: bytes, flags, keywords, dates, placement.

    Targets: ``imap://USER@host:port/`` (the account), ``…/FOLDER`` (one
    folder; ``?recursive=1`` with its subfolders), ``…/FOLDER?uids=4,7:9`` or
    ``…/FOLDER?search=CRITERIA`` (messages).  ``imaps://`` uses TLS;
    ``?starttls=1`` upgrades a plain connection.  The password comes from the
    URI (memory only), ``PREIMAGE_IMAP_PASSWORD`` / ``IMAP_PASSWORD`` or
    ``~/.netrc`` and is never stored.
    """

    scheme: ClassVar[str] = "imap"
    snapshot_type: ClassVar[type[Snapshot]] = ImapSnapshot
    capabilities: ClassVar[Capabilities] = Capabilities(
        server_identities=True, remote=True, relocates=True, undo=Granularity(
            "message by folder, Message-ID and copy; folder by name", "flags, keywords",
            "flags and keywords as sets"))
    reverter: ClassVar[ImapReverter] = ImapReverter()

    def capture(self, target: Target, blobs: BlobStore) -> ImapSnapshot:
        """Read the target without changing it; message bytes go to ``blobs``.

        Raises :class:`InvalidTargetError` for a malformed target,
        :class:`TerminalConnectorError` for a refused login or command and
        :class:`TransientConnectorError` when the server cannot be reached.
        """
        Selection.from_target(target)  # reject a bad target before connecting
        with ImapSession(target) as session:
            return MailboxCapture(session, target, blobs).run()

    def restore(
        self, snapshot: Snapshot, blobs: BlobStore, *, policy: RestorePolicy
    ) -> RestoreReport:
        """Bring the target back to ``snapshot`` (see :mod:`.plan` and :mod:`.apply`).

        Raises :class:`RestoreConflictError` under ``refuse`` when anything
        differs, before writing; a dry run only reports the plan.
        """
        assert isinstance(snapshot, ImapSnapshot)
        report = RestoreReport(
            target=snapshot.target, connector=snapshot.connector, dry_run=policy.dry_run
        )
        with ImapSession(Target.parse(snapshot.target)) as session:
            plan = Planner(session, snapshot, blobs, policy).plan()
            applier = Applier(session, snapshot, blobs, plan, report)
            if policy.conflict is ConflictMode.REFUSE and plan.changed_keys():
                raise RestoreConflictError(snapshot.target, plan.changed_keys())
            if policy.dry_run:
                applier.report_plan()
            else:
                applier.run()
        return report

    def relocate(
        self, snapshot: Snapshot, destination: Target, *, other: Snapshot | None = None,
        blobs: BlobStore | None = None,
    ) -> Relocation:
        """The mailbox in another account or under a folder prefix (:mod:`.relocate`)."""
        from preimage.connectors.imap.relocate import relocate_mailbox

        assert isinstance(snapshot, ImapSnapshot)
        return relocate_mailbox(snapshot, destination)
