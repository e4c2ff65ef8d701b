"""Restore a backup by ID: select its snapshots, check every blob before anything is written,
capture the live state as an undo backup, then let each connector write; the restore
journal makes a re-run resume its own restore."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from functools import partial

from preimage.engine.backups import (
    RestoreResult,
    check_whole,
    closing_own_store,
    guarded,
    open_store,
    select_snapshots,
    whole_or_nothing,
)
from preimage.engine.call_locks import CAPTURE_WAIT, wait_for_sessions
from preimage.engine.call_parts import call_backup, call_parts
from preimage.engine.capture import capture
from preimage.engine.resume import journal_entry
from preimage.interface.connector import capabilities_of
from preimage.interface.errors import (
    BlobCorruptError,
    BlobMissingError,
    PreimageError,
    RestoreError,
    UsageError,
)
from preimage.interface.registry import get_connector
from preimage.interface.target import Target
from preimage.restoration import ConflictMode, RestorePolicy, RestoreReport
from preimage.store.backend import BackupRow
from preimage.store.documents import StoredItems
from preimage.store.snapshots import load_snapshot_row, pinned_backup
from preimage.store.store import Store


@closing_own_store
def restore(
    ref: str,
    *,
    store: Store | None = None,
    only: Sequence[str] = (),
    dry_run: bool = False,
    conflict: ConflictMode | str = ConflictMode.OVERWRITE,
) -> RestoreResult:
    """Restore backup ``ref``.

    Nothing is written until every snapshot of the backup has been read and
    every blob they reference verified, for all targets.  Then the current
    state of the targets is captured as a new backup (``undo_backup_id``), so
    the restore itself can be undone.  A restore that was interrupted is
    resumed by running it again: it keeps the first undo backup as long as
    that still describes the live state (see :func:`resumable`); otherwise a
    fresh undo backup is taken first.  A dry run writes nothing and returns
    the plan.

    ``conflict="revert"`` undoes the call backup ``ref`` was taken for instead —
    only what the call changed, keeping everything changed since
    (:func:`preimage.undo`, which this returns the result of).
    """
    if ConflictMode(conflict) is ConflictMode.REVERT:
        from preimage.engine.undo import undo as undo_call

        return undo_call(ref, store=store, only=only, dry_run=dry_run)
    st = open_store(store)
    if not dry_run:
        # a capture after a hook's call still reading a target is not written under
        wait_for_sessions(st.home, CAPTURE_WAIT)
    with contextlib.ExitStack() as pins:
        # the backup, and the undo backup once there is one, are pinned until the end:
        # no forget or quota removes them (nor prune their blobs) while this reads them
        backup = pins.enter_context(pinned_backup(st, ref, "restored"))
        if not only:   # a part of a call (its trash move, what guard observed): the call
            whole = call_backup(st, backup)
            if whole.id != backup.id:
                backup = pins.enter_context(pinned_backup(st, whole.id, "restored"))
        from preimage.engine.call_scope import default_scope

        scope, left = default_scope(backup) if not only else ([], [])
        if scope:   # an MCP call's workspace snapshot: the home's state stays unless asked
            result = _restore(st, backup, pins, scope, dry_run, conflict)
            if result.reports:
                result.reports[0].notes.append(
                    "not restored by default — the snapshot of an MCP call the layer could "
                    "not read also holds, as a precaution, " + ", ".join(left) + "; restore "
                    "them with --only URI (or `preimage undo` for only what the call changed)")
            return result
        parts = call_parts(st, backup) if not only else []
        if not parts:
            return _restore(st, backup, pins, only, dry_run, conflict)
        # One call, one restore: the call's rm went to the trash, or the paths it was seen
        # to change were recorded, as backups of their own
        done = [_restore(st, pins.enter_context(pinned_backup(st, part.id, "restored")), pins,
                         (), dry_run, conflict) for part in parts]
        result = _restore(st, backup, pins, only, dry_run, conflict)
        for part, m in zip(parts, done, strict=True):
            if m.undo_backup_id and m.reports:   # the part's own undo backup is named too
                m.reports[-1].notes.append(
                    f"part {part.id} of the call (what it was seen to change); undo this part "
                    f"of the restore with: preimage restore {m.undo_backup_id}")
        result.reports[:0] = [r for m in done for r in m.reports]
        return result


def _restore(st: Store, backup: BackupRow, pins: contextlib.ExitStack, only: Sequence[str],
             dry_run: bool, conflict: ConflictMode | str) -> RestoreResult:
    if backup.kind == "trash":  # a rewritten rm: renamed into the trash, renamed back
        from preimage.engine.trash import restore_trash

        return restore_trash(st, backup, only=only, dry_run=dry_run,
                             conflict=ConflictMode(conflict).value)
    if backup.kind == "observed":   # files it linked into the trash become snapshots
        from preimage.engine.observed_links import materialize

        backup = materialize(st, backup)
    selected = select_snapshots(backup, only)
    loaded = [(row, scope, load_snapshot_row(st, row)) for row, scope in selected]
    check_whole(st, backup, loaded)
    for row, _scope, snap in loaded:
        # items read as they are used (a chunked document) are each read once here, so a
        # malformed chunk stops the restore before anything is written — unless the one
        # target's connector reads them all before its first write anyway (its plan)
        if isinstance(snap.items, StoredItems) and not (
                len(loaded) == 1 and getattr(get_connector(row.connector),
                                             "reads_items_before_writing", False)):
            snap.items.validate_all()
    mode = ConflictMode(conflict)
    for row, scope, _snap in loaded:
        caps = capabilities_of(get_connector(row.connector))
        if scope and not caps.sub_scopes:
            raise UsageError(
                f"--only {', '.join(scope)}: the {row.connector} connector restores "
                f"{row.target} whole; capture a narrower target instead. Nothing was written"
            )
        declared = caps.policies
        if mode.value not in declared:
            raise UsageError(
                f"{row.target}: the {row.connector} connector does not support --policy "
                f"{mode.value} (it restores with {', '.join(sorted(declared))}); nothing was written"
            )
    if dry_run or mode is ConflictMode.REFUSE:
        plans = [
            get_connector(row.connector).restore(
                snap, st.blobs, policy=RestorePolicy(dry_run=True, conflict=mode, only=scope)
            )
            for row, scope, snap in loaded
        ]
        if dry_run:
            return RestoreResult(backup.id, None, plans, True)
    only_key = json.dumps(sorted(only))
    restore_id, undo = journal_entry(st, backup.id, only_key, loaded, pins)
    if undo is None:
        undo_backup = capture(
            [Target.parse(row.target) for row, _, _ in loaded],
            store=st,
            label=f"before restoring {backup.id}",
            kind="pre-restore",
            tier="restore",
            parent_id=backup.id,
            pins=pins,
        )
        undo = undo_backup.id
        restore_id = st.catalog.start_restore(backup.id, only_key, undo)
    reports: list[RestoreReport] = []
    errors: list[str] = []
    if backup.kind == "observed":   # nested paths: parents first, directory times last
        from preimage.engine.observed_order import restore_order

        loaded = restore_order(loaded)
    for row, scope, snap in loaded:
        conn = get_connector(row.connector)
        policy = RestorePolicy(dry_run=False, conflict=mode, only=scope)
        try:
            reports.append(guarded(partial(conn.restore, snap, st.blobs, policy=policy),
                                    "restore", row.target))
        except (BlobCorruptError, BlobMissingError) as exc:
            if len(loaded) == 1 and whole_or_nothing(row.connector, snap):
                # read as it was written where nobody sees it: nothing was put in place
                raise type(exc)(exc.digest, backup_id=backup.id, path=exc.path, consequence=(
                    f"nothing was restored ({row.target} is as it was); run `preimage "
                    "check`")) from exc
            # verified before the first write, so lost since: part of the target is written
            raise type(exc)(exc.digest, backup_id=backup.id, path=exc.path, consequence=(
                f"the restore stopped part way — undo backup {undo} holds the state before "
                "it; run `preimage check`, then the same restore again")) from exc
        except PreimageError as exc:
            errors.append(f"{row.target}: {exc}")
            failed = RestoreReport(target=row.target, connector=row.connector)
            failed.notes.append(str(exc))
            reports.append(failed)
            if len(loaded) == 1:
                raise
    result = RestoreResult(backup.id, undo, reports, False)
    if errors:
        raise RestoreError(
            "restore incomplete — " + "; ".join(errors) + f" (undo backup: {undo}); "
            "fix the cause and run the same restore again"
        )
    st.catalog.finish_restore(restore_id, "done" if result.ok else "failed")
    return result
