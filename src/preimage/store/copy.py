"""Copy a backup between two stores of any backends (local ↔ shared, shared ↔ shared).

The copy keeps the backup's id, so ``restore ID`` works the same on either
side.  Blobs stream from one blob store into the other (verified as they are
read); the destination's catalog rows are written under the backup's lease and
marked complete only after every blob is durable there, exactly as a capture
does — a copy killed half-way leaves an ``open`` backup that ``prune`` treats
as abandoned, never a complete one with a blob missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from preimage.interface.errors import BackupNotFoundError, UsageError

if TYPE_CHECKING:
    from preimage.store.store import Store


def copy_backup(src: Store, dst: Store, ref: str) -> dict[str, Any]:
    """Copy backup ``ref`` of ``src`` into ``dst``; a summary of what moved."""
    backup = src.catalog.get(ref)
    if backup.status != "complete":
        raise UsageError(f"backup {backup.id} is {backup.status}, not complete; only complete "
                         "backups are copied")
    try:
        there = dst.catalog.get(backup.id)
    except BackupNotFoundError:
        there = None
    if there is not None and there.id == backup.id and there.status == "complete":
        return {"id": backup.id, "copied": False, "blobs_copied": 0, "blobs_present": 0,
                "bytes_copied": 0}
    if there is not None and there.id == backup.id:
        dst.catalog.forget([backup.id])   # an earlier copy that did not finish
    refs = {row.idx: src.catalog.refs(backup.id, row.idx) | {row.digest}
            for row in backup.snapshots}
    copied = present = sent = 0
    with dst.catalog.lease(backup.id):
        dst.catalog.add_backup(backup.id, label=backup.label, kind=backup.kind,
                               tier=backup.tier, tool_call=backup.tool_call,
                               session=backup.session, parent_id=backup.parent_id,
                               created_at=backup.created_at)
        try:
            for digest in sorted(set().union(*refs.values()) if refs else set()):
                if dst.blobs.exists(digest):
                    present += 1
                    continue
                before = dst.blobs.bytes_written
                got = dst.blobs.put_chunks(src.blobs.chunks(digest, backup_id=backup.id))
                if got != digest:   # chunks() verifies; this cannot differ, but never guess
                    raise UsageError(f"blob {digest[:16]} read back as {got[:16]}")
                sent += dst.blobs.bytes_written - before
                copied += 1
            for row in backup.snapshots:
                dst.catalog.add_snapshot(row, refs[row.idx])
            dst.blobs.flush()
        except BaseException:
            dst.catalog.finish_backup(backup.id, status="failed", stored_bytes=sent,
                                      logical_bytes=backup.logical_bytes, seconds=0)
            raise
        dst.catalog.finish_backup(backup.id, status="complete", stored_bytes=sent,
                                  logical_bytes=backup.logical_bytes, seconds=backup.seconds,
                                  snapshots=len(backup.snapshots))
    return {"id": backup.id, "copied": True, "blobs_copied": copied, "blobs_present": present,
            "bytes_copied": sent}
