"""One call, one undo: every backup a single tool call left, found from any of them.

A call the layer rewrote (``rm a.txt && echo x > b.txt`` → a move of ``a.txt`` into
the store's trash, plus the write) leaves two backups: the call's own capture (kind
``layer``, the ID the hook tells the model) and the trash move (kind ``trash``, its
``parent_id`` that capture — :func:`preimage.engine.trash.move_to_trash` records it).
``restore`` and ``undo`` of either bring back everything the call did: the trash
entries are renamed back first, then the capture is restored, so the metadata of the
directories the entries went back into ends as the capture saw it.
"""

from __future__ import annotations

from preimage.store.backend import BackupRow
from preimage.store.store import Store

__all__ = ["call_backup", "trash_parts"]


def call_backup(st: Store, backup: BackupRow) -> BackupRow:
    """The call's own backup when ``backup`` is the trash move of a call that took one;
    else ``backup`` itself."""
    if backup.kind != "trash" or not backup.parent_id:
        return backup
    try:
        parent = st.catalog.get(backup.parent_id)
    except Exception:   # forgotten since: the trash move stands alone
        return backup
    return parent if parent.kind == "layer" else backup


def trash_parts(st: Store, backup: BackupRow) -> list[BackupRow]:
    """The trash moves recorded as parts of call backup ``backup``, oldest first."""
    if backup.kind != "layer":
        return []
    rows = st.catalog.find_backups(kinds=("trash",), parent_id=backup.id, status="complete")
    return sorted(rows, key=lambda r: r.created_at)
