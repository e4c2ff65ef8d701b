"""Capture, restore, diff and score by backup ID: the Python API behind the CLI."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from preimage._blobs import BlobStore
from preimage._catalog import BackupRow, SnapshotRow
from preimage._errors import (
    BlobCorruptError,
    BlobMissingError,
    PreimageError,
    RestoreError,
    UsageError,
)
from preimage._ids import new_backup_id
from preimage._registry import get_connector
from preimage._store import Store
from preimage._target import Target
from preimage.restoration import ConflictMode, RestorePolicy, RestoreReport
from preimage.similarity import SimilarityReport, StateDiff, merge_reports
from preimage.similarity import score as score_snapshots
from preimage.snapshot_schemas import Snapshot, load_snapshot


@dataclass
class Backup:
    """A finished capture: its ID, its snapshots and what it cost."""

    id: str
    snapshots: list[Snapshot]
    stored_bytes: int
    logical_bytes: int
    seconds: float
    errors: list[str] = field(default_factory=list)


@dataclass
class RestoreResult:
    """The outcome of restoring a backup: per-target reports and the undo backup."""

    backup_id: str
    undo_backup_id: str | None
    reports: list[RestoreReport]
    dry_run: bool

    @property
    def ok(self) -> bool:
        """True when every report is free of failures."""
        return all(r.ok for r in self.reports)


def _open(store: Store | None) -> Store:
    return store if store is not None else Store()


def _check_not_store(target: Target, store: Store) -> None:
    if target.scheme in ("file", "git", "pip") and target.path:
        from pathlib import Path

        if store.contains(Path(target.path)):
            raise UsageError(
                f"{target.redacted} contains the backup store at {store.home} (or lies inside "
                "it); set PREIMAGE_HOME to a directory outside the workspace"
            )


def capture(
    uris: Sequence[str | Target],
    *,
    store: Store | None = None,
    label: str = "",
    tier: str = "manual",
    tool_call: dict[str, Any] | None = None,
    session: str | None = None,
    kind: str = "capture",
    parent_id: str | None = None,
) -> Backup:
    """Capture every target in ``uris`` as one backup and return it.

    Raises :class:`InvalidTargetError` / :class:`NoSuchConnectorError` before
    anything is stored when a URI is bad, and the connector's error when a
    target cannot be read (the half-made backup is marked ``failed``).
    """
    st = _open(store)
    targets = [u if isinstance(u, Target) else Target.parse(u) for u in uris]
    if not targets:
        raise UsageError("nothing to capture — give at least one target URI")
    connectors = [get_connector(t.scheme) for t in targets]
    for t in targets:
        _check_not_store(t, st)
    backup_id = new_backup_id()
    st.catalog.add_backup(
        backup_id,
        label=label,
        kind=kind,
        tier=tier,
        tool_call=tool_call,
        session=session,
        parent_id=parent_id,
    )
    started = time.perf_counter()
    written0, seen0 = st.blobs.bytes_written, st.blobs.bytes_seen
    snapshots: list[Snapshot] = []
    try:
        for idx, (target, conn) in enumerate(zip(targets, connectors, strict=True)):
            snap = conn.capture(target, st.blobs)
            digest = st.blobs.put_bytes(snap.model_dump_json().encode())
            st.catalog.add_snapshot(
                SnapshotRow(backup_id, idx, target.scheme, snap.target, digest, len(snap.items))
            )
            snapshots.append(snap)
    except BaseException:
        st.catalog.finish_backup(
            backup_id,
            status="failed",
            stored_bytes=st.blobs.bytes_written - written0,
            logical_bytes=st.blobs.bytes_seen - seen0,
            seconds=time.perf_counter() - started,
        )
        raise
    seconds = time.perf_counter() - started
    stored, logical = st.blobs.bytes_written - written0, st.blobs.bytes_seen - seen0
    st.catalog.finish_backup(
        backup_id, status="complete", stored_bytes=stored, logical_bytes=logical, seconds=seconds
    )
    return Backup(backup_id, snapshots, stored, logical, seconds)


def load_snapshot_row(store: Store, row: SnapshotRow) -> Snapshot:
    """Read and validate one stored snapshot (verifying its blob)."""
    conn = get_connector(row.connector)
    raw = store.blobs.get_bytes(row.digest, backup_id=row.backup_id, path=row.target)
    return load_snapshot(json.loads(raw), conn.snapshot_type)


def _select(backup: BackupRow, only: Iterable[str]) -> list[tuple[SnapshotRow, tuple[str, ...]]]:
    """Snapshots of ``backup`` selected by ``--only`` URIs, with per-snapshot sub-scopes."""
    only = [o for o in only if o]
    if not only:
        return [(row, ()) for row in backup.snapshots]
    chosen: dict[int, set[str]] = {}
    for uri in only:
        clean = Target.parse(uri).redacted.rstrip("/")
        hit = False
        for row in backup.snapshots:
            base = row.target.rstrip("/")
            if clean == base:
                chosen.setdefault(row.idx, set())
                chosen[row.idx].add("")
                hit = True
            elif clean.startswith(base + "/"):
                chosen.setdefault(row.idx, set()).add(clean[len(base) + 1 :])
                hit = True
        if not hit:
            targets = ", ".join(r.target for r in backup.snapshots)
            raise UsageError(f"--only {uri}: not in backup {backup.id} (it holds: {targets})")
    out = []
    for row in backup.snapshots:
        if row.idx in chosen:
            scopes = chosen[row.idx]
            out.append((row, () if "" in scopes else tuple(sorted(scopes))))
    return out


def show(ref: str, *, store: Store | None = None) -> BackupRow:
    """The catalog entry of backup ``ref``."""
    return _open(store).catalog.get(ref)


def restore(
    ref: str,
    *,
    store: Store | None = None,
    only: Sequence[str] = (),
    dry_run: bool = False,
    conflict: ConflictMode | str = ConflictMode.OVERWRITE,
) -> RestoreResult:
    """Restore backup ``ref``.

    Before anything is written the current state of the same targets is
    captured as a new backup (``undo_backup_id``), so the restore itself can
    be undone.  An interrupted restore re-run with the same arguments reuses
    that first undo backup and finishes the job.  A dry run writes nothing and
    returns the plan.
    """
    st = _open(store)
    backup = st.catalog.get(ref)
    if backup.status != "complete":
        raise UsageError(
            f"backup {backup.id} is {backup.status}, not complete; it cannot be restored"
        )
    selected = _select(backup, only)
    loaded = [(row, scope, load_snapshot_row(st, row)) for row, scope in selected]
    mode = ConflictMode(conflict)
    if dry_run:
        plans = [
            get_connector(row.connector).restore(
                snap, st.blobs, policy=RestorePolicy(dry_run=True, conflict=mode, only=scope)
            )
            for row, scope, snap in loaded
        ]
        return RestoreResult(backup.id, None, plans, True)
    only_key = json.dumps(sorted(only))
    restore_id, undo = st.catalog.start_restore(backup.id, only_key)
    if undo is None:
        undo_backup = capture(
            [Target.parse(row.target) for row, _, _ in loaded],
            store=st,
            label=f"before restoring {backup.id}",
            kind="pre-restore",
            tier="restore",
            parent_id=backup.id,
        )
        undo = undo_backup.id
        st.catalog.set_restore_undo(restore_id, undo)
    reports: list[RestoreReport] = []
    errors: list[str] = []
    for row, scope, snap in loaded:
        conn = get_connector(row.connector)
        policy = RestorePolicy(dry_run=False, conflict=mode, only=scope)
        try:
            reports.append(conn.restore(snap, st.blobs, policy=policy))
        except (BlobCorruptError, BlobMissingError) as exc:
            raise type(exc)(exc.digest, backup_id=backup.id, path=exc.path) from exc
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


@contextmanager
def _with_live(
    ref: str, store: Store | None, only: Sequence[str]
) -> Iterator[tuple[BlobStore, list[tuple[SnapshotRow, Snapshot, Snapshot]]]]:
    """Each selected snapshot of backup ``ref`` with the live state of its target,
    captured into a scratch store that lives as long as the block."""
    st = _open(store)
    backup = st.catalog.get(ref)
    scratch = st.scratch()
    try:
        pairs = [
            (
                row,
                load_snapshot_row(st, row),
                get_connector(row.connector).capture(Target.parse(row.target), scratch),
            )
            for row, _scope in _select(backup, only)
        ]
        yield scratch, pairs
    finally:
        shutil.rmtree(scratch.root, ignore_errors=True)


def diff(ref: str, *, store: Store | None = None, only: Sequence[str] = ()) -> list[StateDiff]:
    """What differs between the live state and backup ``ref``, per target."""
    with _with_live(ref, store, only) as (_scratch, pairs):
        return [get_connector(row.connector).diff(original, live) for row, original, live in pairs]


def score(
    ref: str, *, store: Store | None = None, only: Sequence[str] = ()
) -> tuple[SimilarityReport, list[tuple[str, SimilarityReport]]]:
    """Score the live state against backup ``ref``: the total and a report per target."""
    with _with_live(ref, store, only) as (scratch, pairs):
        per_target = [
            (row.target, score_snapshots(original, live, scratch)) for row, original, live in pairs
        ]
    return merge_reports(r for _, r in per_target), per_target
