"""Whether an interrupted restore can resume with the undo backup it took: the live state
must be, item by item, either as the undo backup has it or as the backup being restored
has it."""

from __future__ import annotations

import contextlib
from typing import Any

from preimage.interface.blobs import BlobStore
from preimage.interface.errors import (
    PreimageError,
)
from preimage.interface.registry import get_connector
from preimage.interface.target import Target
from preimage.snapshot_schemas import Snapshot
from preimage.store.backend import SnapshotRow
from preimage.store.snapshots import load_snapshot_row
from preimage.store.store import Store


def restorable_items(snap: Snapshot, blobs: BlobStore,
                     only: set[str] | None = None) -> dict[str, dict[str, tuple[str, Any]]]:
    """The restorable leaves of each item of ``snap`` by natural key (of the items whose
    key is in ``only``, when given)."""
    # the meter's package, imported only when a restore resumes (not by every restore)
    from preimage.similarity import RESTORABLE
    from preimage.similarity.scoring import flatten

    chosen = snap.scoring_items(blobs)
    if only is not None:
        chosen = (i for i in chosen if i.natural_key() in only)
    leaves, keys = flatten(chosen)
    items: dict[str, dict[str, tuple[str, Any]]] = {k: {} for k in keys}
    for (key, path), leaf in leaves.items():
        if leaf.fidelity in RESTORABLE:  # not server ids, not access times a read moves
            items[key][path] = (leaf.fidelity, leaf.value)
    return items


def resumable(st: Store, undo_id: str, loaded: list[tuple[SnapshotRow, Any, Snapshot]]) -> bool:
    """Whether an unfinished restore's undo backup still describes the live state.

    The live state of every target is captured (into a scratch store) and
    compared item by item, over the restorable (content and metadata) fields:
    each item must be as the undo backup has it (not written yet), as the
    backup being restored has it (written), or hold the backup's content with
    other metadata (written, metadata not yet set — a restore sets metadata
    last).  Anything else — an item changed, created or deleted by someone
    after the interrupted attempt — means work the undo backup does not hold:
    the entry is superseded and a fresh undo backup is taken.
    """
    try:
        undo = st.catalog.get(undo_id)
    except PreimageError:
        return False
    if undo.status != "complete":
        return False
    by_target = {row.target: row for row in undo.snapshots}
    with st.scratch_area() as scratch:
        for row, _scope, wanted in loaded:
            undo_row = by_target.get(row.target)
            if undo_row is None:
                return False
            try:
                before = load_snapshot_row(st, undo_row)
                live = get_connector(row.connector).capture(Target.parse(row.target), scratch)
            except PreimageError:
                return False
            u = restorable_items(before, scratch)
            now = restorable_items(live, scratch)
            # only the backup's items the undo backup or the live state has are looked at:
            # after `rm -rf`, a million of them would otherwise be held to look at none
            seen = set(u) | set(now)
            b = restorable_items(wanted, scratch, seen)
            for key in seen:
                have, old, new = now.get(key), u.get(key), b.get(key)
                if have in (old, new):
                    continue
                if have is not None and new is not None and content_fields(have) == content_fields(new):
                    continue
                return False
    return True


def content_fields(fields: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    return {p: v for p, (fidelity, v) in fields.items() if fidelity == "content"}


def journal_entry(st: Store, backup_id: str, key: str, loaded: list[tuple[SnapshotRow, Any, Snapshot]],
                  pins: contextlib.ExitStack) -> tuple[int, str | None]:
    """The running restore of ``backup_id`` under ``key`` that this one resumes, as
    ``(restore id, its undo backup)`` — pinned while the restore reads it — or ``(0, None)``
    when there is none or its undo backup no longer describes the live state (that entry
    is marked superseded, and the caller takes a fresh undo backup)."""
    entry = st.catalog.running_restore(backup_id, key)
    if entry is None:
        return 0, None
    if entry.undo_backup:
        pins.enter_context(st.catalog.pin(entry.undo_backup))
    if entry.undo_backup and resumable(st, entry.undo_backup, loaded):
        return entry.id, entry.undo_backup
    st.catalog.finish_restore(entry.id, "superseded")
    return 0, None
