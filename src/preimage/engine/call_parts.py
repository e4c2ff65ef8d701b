"""One call, one undo: every backup a single tool call left, found from any of them.

A call can leave more than its own capture (kind ``layer``, the ID the hook or
``preimage guard`` tells): a call the layer rewrote (``rm a.txt && echo x > b.txt`` →
a move of ``a.txt`` into the store's trash, plus the write) leaves the trash move
(kind ``trash``, recorded by :func:`preimage.engine.trash.move_to_trash`), and a call
``preimage guard`` ran under supervision leaves the before-images of every path it
changed (kind ``observed``, recorded by the supervisor) — each with the call's own
capture as its ``parent_id``.  ``restore`` and ``undo`` of any of them bring back
everything the call did: the parts first (trash entries renamed back, observed paths
written back), then the capture, so what both hold, and the metadata of the
directories the parts went back into, ends as the capture saw it.
"""

from __future__ import annotations

from preimage.store.backend import BackupRow
from preimage.store.retention import PART_KINDS, is_part
from preimage.store.store import Store

__all__ = ["PART_KINDS", "call_backup", "call_parts"]


def call_backup(st: Store, backup: BackupRow) -> BackupRow:
    """The call's own backup when ``backup`` is a part of a call that took one; else
    ``backup`` itself."""
    if backup.kind not in PART_KINDS or not backup.parent_id:
        return backup
    try:
        parent = st.catalog.get(backup.parent_id)
    except Exception:   # forgotten since: the part stands alone
        return backup
    return parent if is_part(backup.kind, parent.kind) else backup


def call_parts(st: Store, backup: BackupRow) -> list[BackupRow]:
    """The trash moves and observed backups recorded as parts of call backup
    ``backup``, oldest first."""
    if backup.kind != "layer":
        return []
    rows = st.catalog.find_backups(kinds=PART_KINDS, parent_id=backup.id, status="complete")
    return sorted(rows, key=lambda r: r.created_at)
