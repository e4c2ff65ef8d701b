"""preimage as the protector: through the backup layer, or of the declared targets.

* :class:`LayerProtector` — the real thing: the call goes to
  ``preimage.layer.BackupLayer.before``, which decides what to capture (or
  rewrites the call); the benchmark runs what the layer says to run and
  restores by the backup id the layer returned.
* :class:`DeclaredTargets` — ``preimage.capture`` of the scenario's expected
  targets.  It measures the connectors alone (capture and restore fidelity)
  and is labelled so in every report: it is not the layer's own decision.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

import preimage
from preimage.bench.protector import Protection, Protector, RunContext, uri_covers


class PreimageBackup(Protector):
    """A protector whose backup is a preimage backup id: covered by its targets, restored by id."""

    def covers(self, ctx: RunContext, protection: Protection, uri: str) -> bool:
        """A captured target contains ``uri``."""
        return protection.backup_id is not None and any(
            uri_covers(t, uri) for t in protection.targets
        )

    def moved_bytes(self, ctx: RunContext, protection: Protection) -> int:
        """The bytes of every path the rewritten call renamed into the store's trash (an
        ``rm`` the layer made ``preimage trash``): the store holds them, uncopied."""
        if protection.backup_id is None:
            return 0
        from preimage.engine.trash import moved_paths

        return sum(_tree_bytes(Path(stored)) for _original, stored in
                   moved_paths(ctx.store, protection.backup_id))

    def restore(self, ctx: RunContext, protection: Protection) -> list[str]:
        """``preimage.restore(backup_id)``; the report's notes and failed items."""
        assert protection.backup_id is not None
        result = preimage.restore(protection.backup_id, store=ctx.store)
        notes: list[str] = []
        for rep in result.reports:
            notes.extend(f"{rep.target}: {n}" for n in rep.notes)
            notes.extend(
                f"{rep.target}: {i.key} {i.outcome.value}: {i.reason}"
                for i in rep.items if i.outcome.value == "failed"
            )
        return notes


class DeclaredTargets(PreimageBackup):
    """Capture exactly the scenario's expected targets; restore by backup id."""

    name: ClassVar[str] = "declared"
    label: ClassVar[str] = "preimage (declared targets)"

    def before(self, ctx: RunContext) -> Protection:
        """``preimage.capture(expected)`` into the run's store."""
        backup = preimage.capture(
            ctx.expected, store=ctx.store, label=ctx.scenario.id, tier="declared",
            tool_call={"tool": ctx.call.tool, "input": ctx.call.input},
        )
        return Protection(
            backup_id=backup.id,
            targets=[s.target for s in backup.snapshots],
            stored_bytes=backup.stored_bytes,
            tier="declared",
        )


def layer_available() -> bool:
    """Whether this build of preimage ships the backup layer."""
    import importlib.util

    try:
        return importlib.util.find_spec("preimage.layer") is not None
    except ModuleNotFoundError:
        return False


def _tree_bytes(path: Path) -> int:
    """Apparent size of ``path`` and everything under it (links not followed)."""
    try:
        st = path.lstat()
    except OSError:
        return 0
    if not path.is_dir() or path.is_symlink():
        return st.st_size
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += (Path(root) / name).lstat().st_size
            except OSError:
                continue
    return total
