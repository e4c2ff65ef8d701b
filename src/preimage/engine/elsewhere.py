"""Restore a backup into another target: ``preimage restore ID --to URI``.

A pipeline like the in-place restore (:mod:`.restore`): select → pair each selected
snapshot with its destination → let its connector re-address the snapshot there
(:meth:`~preimage.ConnectorBase.relocate`, which names every identity that changes)
→ check every blob → capture the destinations as an undo backup → write → report.
Like the in-place restore, a run is journaled (keyed by the backup, the selection and
the destinations): one killed part way is resumed by running it again, keeping its
first undo backup as long as that still describes the destinations.

Refused before anything is written: a destination that is the source or overlaps
it (the connector decides what overlaps: a directory inside the tree, the same
database), a local destination that holds the store or lies inside it, a
connector that cannot restore elsewhere, and a destination of another kind.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from preimage.engine.backups import (
    RestoreResult,
    check_whole,
    closing_own_store,
    guarded,
    open_store,
    select_snapshots,
)
from preimage.engine.capture import capture
from preimage.engine.resume import journal_entry
from preimage.interface.connector import capabilities_of, relocate
from preimage.interface.errors import PreimageError, RestoreError, UsageError
from preimage.interface.registry import get_connector
from preimage.interface.target import Target
from preimage.restoration import ConflictMode, IdentityMapping, RestorePolicy, RestoreReport
from preimage.store.backend import BackupRow, SnapshotRow
from preimage.store.snapshots import load_snapshot_row, pinned_backup
from preimage.store.store import Store

__all__ = ["RelocatedResult", "destinations_for", "restore_to"]


@dataclass
class RelocatedResult(RestoreResult):
    """A restore into other targets: per destination, the identities mapped on the way."""

    destinations: dict[str, str] = field(default_factory=dict)       # source → destination
    mappings: dict[str, list[IdentityMapping]] = field(default_factory=dict)  # by destination


def destinations_for(
    rows: Sequence[SnapshotRow], to: str | Mapping[str, str]
) -> dict[int, Target]:
    """Each selected snapshot's destination: one ``to`` URI for a one-target selection,
    or a mapping of source target (as stored) to destination URI."""
    if isinstance(to, str):
        if len(rows) != 1:
            names = ", ".join(r.target for r in rows)
            raise UsageError(
                f"--to {to}: the backup holds {len(rows)} targets ({names}); name one with "
                "--only URI --to URI, once per target"
            )
        return {rows[0].idx: Target.parse(to)}
    wanted = {Target.parse(src).redacted.rstrip("/"): dst for src, dst in to.items()}
    out: dict[int, Target] = {}
    for row in rows:
        dst = wanted.pop(row.target.rstrip("/"), None)
        if dst is None:
            raise UsageError(f"{row.target}: no --to for this target; give --only {row.target} "
                             "--to URI, or leave it out with --only")
        out[row.idx] = Target.parse(dst)
    if wanted:
        raise UsageError(f"--only {', '.join(wanted)}: not a target of this backup")
    return out


def _refuse_store(st: Store, destination: Target) -> None:
    """A local destination must neither hold the store nor lie inside it."""
    if destination.host not in (None, "", "localhost") or not destination.path.startswith("/"):
        return
    # sqlite:////abs/x.db has the path //abs/x.db: one leading slash is the path
    if st.contains(Path("/" + destination.path.lstrip("/"))):
        raise UsageError(
            f"--to {destination.redacted} holds the backup store or lies inside it "
            f"({st.home}); pick a destination outside it. Nothing was written"
        )


@closing_own_store
def restore_to(
    ref: str,
    to: str | Mapping[str, str],
    *,
    store: Store | None = None,
    only: Sequence[str] = (),
    dry_run: bool = False,
    conflict: ConflictMode | str = ConflictMode.OVERWRITE,
) -> RelocatedResult:
    """Restore backup ``ref`` into other targets.

    ``to`` is one destination URI (the selection must be one target) or a mapping
    from the backup's target URIs to destinations.  Each connector re-addresses its
    snapshot to the destination; the identities that changed (root, database,
    namespace, folder, references) are in :attr:`RelocatedResult.mappings`.  Before
    anything is written every blob is verified and the destinations are captured as
    an undo backup, so ``preimage restore UNDO_ID`` takes the destinations back.

    Raises :class:`~preimage.UsageError` for a destination that overlaps its source
    or the store, or a connector that cannot restore elsewhere — before writing.
    """
    mode = ConflictMode(conflict)
    if mode is ConflictMode.REVERT:
        raise UsageError("--to restores a whole backup elsewhere; --policy revert undoes a "
                         "call in place — use one or the other")
    st = open_store(store)
    with contextlib.ExitStack() as pins:
        # the backup, and the undo backup once there is one, are pinned until the end:
        # no forget or quota removes them (nor prune their blobs) while this reads them
        backup = pins.enter_context(pinned_backup(st, ref, "restored"))
        return _restore_to(st, backup, pins, to, only, dry_run, mode)


def _restore_to(st: Store, backup: BackupRow, pins: contextlib.ExitStack,
                to: str | Mapping[str, str], only: Sequence[str], dry_run: bool,
                mode: ConflictMode) -> RelocatedResult:
    if backup.kind == "observed":   # files it linked into the trash become snapshots
        from preimage.engine.observed_links import materialize

        backup = materialize(st, backup)
    if backup.kind == "trash":
        raise UsageError(f"backup {backup.id} holds paths an rm moved into the trash; restore "
                         "it in place (without --to), then copy what you need")
    selected = select_snapshots(backup, list(only) if isinstance(to, str) else list(to))
    dests = destinations_for([row for row, _ in selected], to)
    loaded = [(row, scope, load_snapshot_row(st, row)) for row, scope in selected]
    moved = []
    for row, scope, snap in loaded:
        conn = get_connector(row.connector)
        dest = dests[row.idx]
        if dest.redacted.rstrip("/") == row.target.rstrip("/"):
            raise UsageError(f"--to {dest.redacted} is the backup's own target; restore in "
                             "place without --to")
        _refuse_store(st, dest)
        caps = capabilities_of(conn)
        if mode.value not in caps.policies:
            raise UsageError(f"{row.target}: the {row.connector} connector does not support "
                             f"--policy {mode.value}; nothing was written")
        moved.append((row, scope, relocate(conn, snap, dest, blobs=st.blobs)))
    check_whole(st, backup, loaded)
    result = RelocatedResult(
        backup.id, None, [], dry_run,
        destinations={row.target: r.snapshot.target for row, _, r in moved},
        mappings={r.snapshot.target: list(r.mappings) for _, _, r in moved},
    )
    if dry_run or mode is ConflictMode.REFUSE:
        plans = [get_connector(row.connector).restore(
            r.snapshot, st.blobs, policy=RestorePolicy(dry_run=True, conflict=mode, only=scope,
                                         elsewhere=True))
            for row, scope, r in moved]
        if dry_run:
            result.reports = plans
            return result
    # the journal's key names the destinations as printed (never a password)
    key = json.dumps({"to": sorted((row.target, Target.parse(r.snapshot.target).redacted)
                                   for row, _, r in moved)})
    at_destinations = [(replace(row, target=r.snapshot.target), scope, r.snapshot)
                       for row, scope, r in moved]
    restore_id, undo = journal_entry(st, backup.id, key, at_destinations, pins)
    if undo is None:
        undo = capture(
            [Target.parse(r.snapshot.target) for _, _, r in moved], store=st,
            label=f"before restoring {backup.id} elsewhere", kind="pre-restore",
            tier="restore", parent_id=backup.id, pins=pins,
        ).id
        restore_id = st.catalog.start_restore(backup.id, key, undo)
    result.undo_backup_id = undo
    errors: list[str] = []
    for row, scope, r in moved:
        conn = get_connector(row.connector)
        policy = RestorePolicy(dry_run=False, conflict=mode, only=scope, elsewhere=True)
        try:
            report = guarded(partial(conn.restore, r.snapshot, st.blobs, policy=policy),
                             "restore", r.snapshot.target)
        except PreimageError as exc:
            if len(moved) == 1:
                raise
            errors.append(f"{r.snapshot.target}: {exc}")
            report = RestoreReport(target=r.snapshot.target, connector=row.connector)
            report.notes.append(str(exc))
        report.notes.extend(r.notes)
        result.reports.append(report)
    if errors:
        raise RestoreError("restore incomplete — " + "; ".join(errors)
                           + f" (undo backup: {undo}); fix the cause and run it again")
    st.catalog.finish_restore(restore_id, "done" if result.ok else "failed")
    return result
