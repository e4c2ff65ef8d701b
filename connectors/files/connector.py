"""``FileConnector``: capture, restore and diff of ``file://`` targets."""

from __future__ import annotations

import os
from typing import ClassVar

from preimage._blobs import BlobStore
from preimage._errors import InvalidTargetError
from preimage._target import Target
from preimage.connectors.files.apply import TreeRestorer
from preimage.connectors.files.walk import Walker, file_type, resolve_root
from preimage.restoration import RestorePolicy, RestoreReport
from preimage.similarity import StateDiff, diff_snapshots
from preimage.snapshot_schemas import Snapshot
from preimage.snapshot_schemas.files import FileSnapshot


class FileConnector:
    """A file or a directory tree: bytes, types, hardlinks, modes, owners, ns times, xattrs.

    Targets are ``file:///abs/path`` (a host other than empty or ``localhost``
    is rejected).  A target that does not exist captures as "absent", so that
    restoring it removes whatever was created there later.
    """

    scheme: ClassVar[str] = "file"
    snapshot_type: ClassVar[type[Snapshot]] = FileSnapshot

    def capture(self, target: Target, blobs: BlobStore) -> FileSnapshot:
        """Walk the target and store every regular file's bytes in ``blobs``."""
        if target.host not in (None, "", "localhost"):
            raise InvalidTargetError(
                target.redacted, "file:// targets are local; write file:///abs/path"
            )
        root = resolve_root(target.path)
        try:
            root_type = file_type(os.lstat(root).st_mode)
        except FileNotFoundError:
            root_type = None
        items = list(Walker(root, blobs).entries())
        notes = []
        if root_type is None:
            notes.append("target did not exist at capture time")
        return FileSnapshot(
            target=f"file://{root}",
            root=str(root),
            root_type=root_type,
            items=items,
            notes=notes,
        )

    def restore(
        self, snapshot: Snapshot, blobs: BlobStore, *, policy: RestorePolicy
    ) -> RestoreReport:
        """Bring the tree back to ``snapshot`` (see :mod:`.apply` for the order)."""
        assert isinstance(snapshot, FileSnapshot)
        return TreeRestorer(snapshot, blobs, policy).run()

    def diff(self, before: Snapshot, after: Snapshot) -> StateDiff:
        """Entries added, removed or changed (inode and ctime ignored)."""
        return diff_snapshots(before, after)
