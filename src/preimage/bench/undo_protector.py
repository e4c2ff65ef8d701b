"""preimage's two ways back after a call, through the backup layer: overwrite and undo.

Both ask the layer before the call exactly as :class:`LayerProtector` does.

* :class:`OverwriteProtector` — ``preimage.restore(<backup id>)``: the target
  as it was before the call, whatever anyone did since;
* :class:`UndoProtector` — the layer also sees the call finish
  (:meth:`BackupLayer.after <preimage.layer.BackupLayer.after>`, as a
  harness's post-tool hook reports it) and captures the same targets again;
  ``preimage.undo(<backup id>)`` then reverts only what the call changed and
  reports conflicts, leaving them as they are.
"""

from __future__ import annotations

from typing import ClassVar

import preimage
from preimage.bench.layer_protector import LayerProtector
from preimage.bench.protector import Protection, RunContext


class OverwriteProtector(LayerProtector):
    """The layer's backup, restored whole (``preimage restore``)."""

    name: ClassVar[str] = "overwrite"
    label: ClassVar[str] = "preimage restore (overwrite)"


class UndoProtector(LayerProtector):
    """The layer's pre- and post-call backups; ``preimage undo`` of the call."""

    name: ClassVar[str] = "undo"
    label: ClassVar[str] = "preimage undo"

    def after_call(self, ctx: RunContext, protection: Protection, exit_code: int) -> None:
        """The post-tool event: the layer captures the call's targets again."""
        from preimage.layer.deciding.completion import ToolResult

        if protection.handle is None:
            return
        layer, call, decision = protection.handle
        done = layer.after(call, ToolResult(status="ok" if exit_code == 0 else "error"), decision)
        if done.post_error:
            protection.notes.append(done.post_error)
        if done.post_backup_id is not None:
            protection.post_bytes = ctx.store.catalog.get(done.post_backup_id).stored_bytes

    def restore(self, ctx: RunContext, protection: Protection) -> list[str]:
        """``preimage.undo(backup_id)``: conflicts are reported and left alone."""
        from preimage.bench.intervening import absolute_key

        assert protection.backup_id is not None
        result = preimage.undo(protection.backup_id, store=ctx.store)
        notes: list[str] = []
        for plan in result.plans:
            notes.append(f"{plan.target}: {plan.summary()}")
            notes.extend(f"{plan.target}: {n}" for n in plan.notes)
            protection.reported.extend(absolute_key(plan.target, p.key) for p in plan.conflicts)
        for rep in result.reports:
            notes.extend(
                f"{rep.target}: {i.key} {i.outcome.value}: {i.reason}"
                for i in rep.items if i.outcome.value == "failed"
            )
        return notes
