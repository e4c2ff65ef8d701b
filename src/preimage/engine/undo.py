"""Undo one tool call: revert its delta onto the live state, and the session's timeline.

A call the backup layer protected has two backups: the one taken before it
(kind ``layer``) and the one taken right after it (kind ``post-call``, its
``parent_id`` the first).  Their difference is the call's *delta*;
:func:`undo` reverts exactly that delta onto the state as it is now (see
:mod:`preimage.restoration.revert` for the three-way plan), through each
connector's own restore limited to the exact items it must write.  Like
``restore``, it first captures the live state as an undo backup (kind
``pre-restore``), journals itself so that an interrupted undo is finished by
running it again, and plans without writing under ``dry_run``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from preimage.engine.backups import (
    Backup,
    RestoreResult,
    check_whole,
    closing_own_store,
    guarded,
    open_store,
    select_snapshots,
)
from preimage.engine.call_locks import CAPTURE_WAIT, wait_for_sessions
from preimage.engine.call_parts import PART_KINDS, call_backup, call_parts
from preimage.engine.capture import capture
from preimage.engine.resume import resumable
from preimage.interface.blobs import BlobStore
from preimage.interface.connector import capabilities_of
from preimage.interface.errors import PreimageError, RestoreError, UsageError
from preimage.interface.registry import get_connector
from preimage.interface.target import Target
from preimage.restoration import ConflictMode, RestorePolicy, RestoreReport
from preimage.restoration.revert import (
    Resolution,
    RevertPlan,
    plan_revert,
    reverter_for,
)
from preimage.snapshot_schemas import Snapshot
from preimage.store.backend import BackupRow, SnapshotRow
from preimage.store.snapshots import complete_backup, load_snapshot_row
from preimage.store.store import Store

__all__ = ["CallEntry", "UndoResult", "capture_after", "find_call", "timeline", "undo",
           "undo_many"]

POST_CALL = "post-call"
CALL_KINDS = ("layer", "trash", "observed")


@dataclass
class UndoResult(RestoreResult):
    """What an undo did (or, in a dry run, would do): the restore report of every
    target (as :class:`RestoreResult`), the three-way plan behind it, and the undo
    backup that undoes the undo.  ``backup_id`` is the backup taken before the call,
    ``post_id`` the one taken right after it."""

    post_id: str | None = None
    plans: list[RevertPlan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def conflicts(self) -> int:
        """Conflicts left alone (neither ``take-backup`` nor ``keep-live``)."""
        return sum(len(p.unresolved) for p in self.plans)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view (``preimage undo --json``)."""
        return {
            "backup": self.backup_id, "post_backup": self.post_id,
            "undo_backup": self.undo_backup_id, "dry_run": self.dry_run, "ok": self.ok,
            "conflicts": self.conflicts, "plans": [p.to_dict() for p in self.plans],
            "reports": [r.model_dump(mode="json") for r in self.reports], "notes": self.notes,
        }


# ------------------------------------------------------------------ finding calls
def post_of(st: Store, pre_id: str) -> BackupRow | None:
    """The complete post-call backup of the call whose pre-call backup is ``pre_id`` (one
    look-up by parent: an undo does not read the whole history)."""
    rows = st.catalog.find_backups(kinds=(POST_CALL,), parent_id=pre_id, status="complete",
                                   limit=1)
    return rows[0] if rows else None


def _no_post(st: Store, pre_id: str) -> str:
    """Why the call of ``pre_id`` has no after-state to undo against, in one sentence."""
    overlapped = st.catalog.find_backups(kinds=(POST_CALL,), parent_id=pre_id,
                                         status="overlapped", limit=1)
    if overlapped:
        return (f"the capture after the call of backup {pre_id} ({overlapped[0].id}) ran on "
                "while the session's next call ran (it outlasted the hook's timeout), so what "
                "this call changed cannot be told from what the next one did")
    return (f"backup {pre_id} has no post-call backup, so the change its call made is not "
            "known")


def find_call(st: Store, ref: str) -> tuple[BackupRow, BackupRow | None]:
    """The (pre-call, post-call) backups named by ``ref``: either backup's ID (or a
    unique prefix), the harness's call id (``tool_use_id``), or ``last`` — the newest
    call with a post-call backup."""
    if ref.strip().lower() in ("last", "latest", "@"):
        for row in st.catalog.find_backups(kinds=(POST_CALL,), status="complete", limit=20):
            if row.parent_id:
                return st.catalog.get(row.parent_id), row
        raise UsageError("no call has a post-call backup yet — the backup layer takes one "
                         "after every call it protected (`preimage log` lists them)")
    by_call = st.catalog.by_tool_use_id(ref, CALL_KINDS)
    if by_call is not None:
        pre = by_call
    else:
        pre = st.catalog.get(ref)
        if pre.kind == POST_CALL:
            if not pre.parent_id:
                raise UsageError(f"post-call backup {pre.id} names no pre-call backup")
            post = pre
            return st.catalog.get(post.parent_id), post  # type: ignore[arg-type]
    return pre, post_of(st, pre.id)


# ------------------------------------------------------------------ post-call capture
@closing_own_store
def capture_after(pre_id: str, *, store: Store | None = None) -> Backup | None:
    """Capture the targets of pre-call backup ``pre_id`` again, right after its call
    (kind ``post-call``, same session and tool call).  Unchanged state costs only its
    snapshot documents (blobs dedupe, files are not re-read when their stat is the
    same).  ``None`` for a backup with no snapshots (an ``rm`` renamed into the
    trash: the trash entry is the delta)."""
    st = open_store(store)
    pre = st.catalog.get(pre_id)
    from preimage.engine.observed_links import held_targets

    # an observed backup's files linked into the trash are read later, but are its targets
    targets = held_targets(st, pre)
    previous = _previous(st, pre.snapshots) + [None] * (len(targets) - len(pre.snapshots))
    if not targets:
        return None
    return capture(
        [Target.parse(t) for t in targets], store=st,
        label=f"after: {pre.label}"[:200], tier=POST_CALL, tool_call=pre.tool_call,
        session=pre.session, kind=POST_CALL, parent_id=pre.id, previous=previous,
    )


def _previous(st: Store, rows: Sequence[SnapshotRow]) -> list[Snapshot | None]:
    """The pre-call snapshots a capture follows items from (see ``capture(previous=)``),
    read only for connectors that follow items out of a target's scope."""
    out: list[Snapshot | None] = []
    for row in rows:
        follows = hasattr(get_connector(row.connector), "capture_following")
        out.append(load_snapshot_row(st, row) if follows else None)
    return out


# ------------------------------------------------------------------ undo
@closing_own_store
def undo(
    ref: str,
    *,
    store: Store | None = None,
    post: str | None = None,
    only: Sequence[str] = (),
    dry_run: bool = False,
    resolution: Resolution | str = Resolution.LEAVE,
) -> UndoResult:
    """Revert the delta of the call ``ref`` names (see :func:`find_call`) onto the live
    state; ``post`` names the after-state explicitly (any complete backup of the same
    targets, e.g. two manual captures around a change).

    Items the call did not change are never written; items changed since the call in
    what the call changed are conflicts, left alone unless ``resolution`` says
    ``take-backup`` or ``keep-live``.  Raises :class:`UsageError` when the call has no
    post-call backup (its delta is unknown — ``restore`` still brings everything back).

    A call that left more than its own capture — its ``rm`` moved into the trash, or the
    paths ``preimage guard`` saw it change under supervision — is undone whole, whichever
    of its backups ``ref`` names (:mod:`preimage.engine.call_parts`): the parts first
    (trash entries renamed back, observed paths reverted), then the rest of the call.
    """
    st = open_store(store)
    # a call's after-state may still be being captured (the hook answered first)
    wait_for_sessions(st.home, CAPTURE_WAIT)
    resolution = Resolution(resolution)
    named, _ = find_call(st, ref)
    whole = call_backup(st, named)
    parts = call_parts(st, whole) if not only and post is None else []
    if not parts:
        return _undo_backup(st, ref, post=post, only=only, dry_run=dry_run,
                            resolution=resolution)
    for needs in (whole, *(p for p in parts if p.kind != "trash")):
        if post_of(st, needs.id) is None:   # say so before anything is written back
            raise UsageError(f"{_no_post(st, needs.id)}; nothing was written — `preimage "
                             f"restore {whole.id}` brings the whole call back")
    done = [_undo_trash(st, complete_backup(st, part.id, "undone"), (), dry_run, resolution)
            if part.kind == "trash" else
            _undo_backup(st, part.id, dry_run=dry_run, resolution=resolution)
            for part in parts]
    result = _undo_backup(st, whole.id, dry_run=dry_run, resolution=resolution)
    result.reports[:0] = [r for m in done for r in m.reports]
    result.plans[:0] = [p for m in done for p in m.plans]
    for part, m in zip(parts, done, strict=True):
        what = ("the call's rm was renamed back from the trash of backup" if part.kind == "trash"
                else "the paths the call was seen to change were reverted from backup")
        result.notes.append(f"{what} {m.backup_id}"
                            + (f" (undo backup {m.undo_backup_id})" if m.undo_backup_id else ""))
    return result


def _undo_backup(
    st: Store,
    ref: str,
    *,
    post: str | None = None,
    only: Sequence[str] = (),
    dry_run: bool = False,
    resolution: Resolution | str = Resolution.LEAVE,
) -> UndoResult:
    """The body of :func:`undo` for one backup."""
    resolution = Resolution(resolution)
    pre, post_row = find_call(st, ref)
    with contextlib.ExitStack() as pins:
        # both sides of the call, and the undo backup once taken, are pinned until the
        # end: no forget or quota removes them while this reads them
        for pinned in (pre.id, post_row.id if post_row else None,
                       st.catalog.resolve(post) if post is not None else None):
            if pinned is not None:
                pins.enter_context(st.catalog.pin(pinned))
        return _undo_pinned(st, pre, post_row, post, only, dry_run, resolution, pins)


def _undo_pinned(st: Store, pre: BackupRow, post_row: BackupRow | None, post: str | None,
                 only: Sequence[str], dry_run: bool, resolution: Resolution,
                 pins: contextlib.ExitStack) -> UndoResult:
    pre = complete_backup(st, pre.id, "undone")
    if pre.kind == "observed":   # files it linked into the trash become snapshots
        from preimage.engine.observed_links import materialize

        pre = materialize(st, pre)
    if post is not None:
        post_row = complete_backup(st, post, "compared")
    if pre.kind == "trash":
        return _undo_trash(st, pre, only, dry_run, resolution)
    if post_row is None:
        raise UsageError(
            f"{_no_post(st, pre.id)}; nothing was written — `preimage restore {pre.id}` "
            "brings the whole target back, or name the after-state with --post ID"
        )
    post_row = complete_backup(st, post_row.id, "compared")
    selected = select_snapshots(pre, only)
    unable = [row.target for row, _ in selected
              if capabilities_of(get_connector(row.connector)).undo is None]
    if unable:
        raise UsageError(
            f"the connector of {', '.join(unable)} cannot yet write back single items of a "
            f"call (it restores whole targets); nothing was written — `preimage restore "
            f"{pre.id}` brings the whole target back, or undo the rest with --only URI")
    after = paired(pre, post_row)
    missing = [row.target for row, _ in selected if row.target not in after]
    if missing:
        raise UsageError(f"backup {post_row.id} holds no capture of {', '.join(missing)}; "
                         "name a post-call backup of the same targets")
    loaded = [(row, scope, load_snapshot_row(st, row)) for row, scope in selected]
    check_whole(st, pre, loaded)
    theirs = {row.target: load_snapshot_row(st, after[row.target]) for row, _ in selected}
    only_key = json.dumps(["undo", post_row.id, resolution.value, sorted(only)])
    with st.scratch_area() as scratch:
        if dry_run:
            now = {row.target: _capture_live(row, scratch, base) for row, _, base in loaded}
            plans, snaps = _plan(loaded, theirs, now, scratch, resolution)
            planned = [_restore(row, snaps[row.target], plan, scratch, dry_run=True)
                       for (row, _, _), plan in zip(loaded, plans, strict=True)]
            return UndoResult(pre.id, None, planned, True, post_row.id, plans)
        entry = st.catalog.running_restore(pre.id, only_key)
        undo_id: str | None = None
        restore_id = 0
        plans = []
        snaps = {}
        if entry is not None and entry.undo_backup:
            before = _load_backup(st, entry.undo_backup)
            if before is not None and all(row.target in before for row, _, _ in loaded):
                plans, snaps = _plan(loaded, theirs, before, scratch, resolution)
                wanted = [(row, (), snaps[row.target]) for row, _, _ in loaded]
                if resumable(st, entry.undo_backup, wanted):
                    undo_id, restore_id = entry.undo_backup, entry.id
            if undo_id is None:
                st.catalog.finish_restore(entry.id, "superseded")
        elif entry is not None:
            st.catalog.finish_restore(entry.id, "superseded")
        if undo_id is None:
            backup = capture([Target.parse(row.target) for row, _, _ in loaded], store=st,
                             label=f"before undoing {pre.id}", kind="pre-restore",
                             tier="restore", parent_id=pre.id,
                             previous=[base for _, _, base in loaded], pins=pins)
            undo_id = backup.id
            # By position: a capture may spell a target differently (an IMAP selection by
            # Message-ID that matches nothing any more).
            live = {row.target: snap for (row, _, _), snap in zip(
                loaded, backup.snapshots, strict=True)}
            plans, snaps = _plan(loaded, theirs, live, scratch, resolution)
            restore_id = st.catalog.start_restore(pre.id, only_key, undo_id)
        reports: list[RestoreReport] = []
        errors: list[str] = []
        for (row, _, _), plan in zip(loaded, plans, strict=True):
            try:
                reports.append(_restore(row, snaps[row.target], plan, scratch, dry_run=False))
            except PreimageError as exc:
                errors.append(f"{row.target}: {exc}")
                failed = RestoreReport(target=row.target, connector=row.connector)
                failed.notes.append(str(exc))
                reports.append(failed)
                if len(loaded) == 1:
                    raise
        if errors:
            raise RestoreError(
                "undo incomplete — " + "; ".join(errors) + f" (undo backup: {undo_id}); "
                "fix the cause and run the same undo again")
        result = UndoResult(pre.id, undo_id, reports, False, post_row.id, plans)
        st.catalog.finish_restore(restore_id, "done" if result.ok else "failed")
        return result


def paired(pre: BackupRow, post: BackupRow) -> dict[str, SnapshotRow]:
    """``post``'s snapshot of each target of ``pre``, by ``pre``'s target URI.

    A post-call backup captured ``pre``'s targets in the same order, so its snapshots pair
    by position — a capture may spell a target differently from the one before it (an
    IMAP selection by Message-ID whose messages the call moved away matches none); any
    other backup pairs by target URI."""
    if post.parent_id == pre.id and len(post.snapshots) == len(pre.snapshots):
        return {a.target: b for a, b in zip(pre.snapshots, post.snapshots, strict=True)}
    by_target = {row.target: row for row in post.snapshots}
    return {row.target: by_target[row.target] for row in pre.snapshots
            if row.target in by_target}


def _capture_live(row: SnapshotRow, blobs: BlobStore, base: Snapshot) -> Snapshot:
    conn = get_connector(row.connector)
    target = Target.parse(row.target)
    follow = getattr(conn, "capture_following", None)
    if follow is not None:
        return guarded(lambda: follow(target, blobs, base), "capture", row.target)  # type: ignore[no-any-return]
    return guarded(lambda: conn.capture(target, blobs), "capture", row.target)


def _load_backup(st: Store, backup_id: str) -> dict[str, Snapshot] | None:
    try:
        backup = st.catalog.get(backup_id)
        if backup.status != "complete":
            return None
        return {row.target: load_snapshot_row(st, row) for row in backup.snapshots}
    except PreimageError:
        return None


def _plan(
    loaded: list[tuple[SnapshotRow, tuple[str, ...], Snapshot]],
    theirs: dict[str, Snapshot],
    live: dict[str, Snapshot],
    blobs: BlobStore,
    resolution: Resolution,
) -> tuple[list[RevertPlan], dict[str, Snapshot]]:
    """The three-way plan of every target, and the snapshot each connector restores."""
    plans: list[RevertPlan] = []
    snaps: dict[str, Snapshot] = {}
    for row, scope, base in loaded:
        rv = reverter_for(get_connector(row.connector), base)
        now = live[row.target]
        plan = plan_revert(base, theirs[row.target], now, blobs, rv, resolution)
        if scope:
            plan.items = [p for p in plan.items if any(p.key.startswith(s) or s in p.label
                                                       for s in scope)]
        plans.append(plan)
        snaps[row.target] = rv.synthesize(now, base, plan.writes, blobs)
    return plans, snaps


def _restore(row: SnapshotRow, synthesized: Snapshot, plan: RevertPlan, blobs: BlobStore, *,
             dry_run: bool) -> RestoreReport:
    """Restore exactly the plan's items with the connector's own restore."""
    writes = plan.writes
    if not writes:
        report = RestoreReport(target=row.target, connector=row.connector, dry_run=dry_run)
        report.notes.append("nothing to write: " + plan.summary())
        return report
    conn = get_connector(row.connector)
    rv = reverter_for(conn, synthesized)
    policy = RestorePolicy(dry_run=dry_run, conflict=ConflictMode.OVERWRITE,
                           keys=rv.scope(writes))
    report = guarded(lambda: conn.restore(synthesized, blobs, policy=policy), "restore",
                      row.target)
    report.notes.append(plan.summary())
    return report


@closing_own_store
def undo_many(refs: Sequence[str], **kwargs: Any) -> list[UndoResult]:
    """Undo several calls, newest first (each one's conflicts are judged against the
    state the previous undo left); stops at the first that fails."""
    st = open_store(kwargs.pop("store", None))
    calls = sorted({find_call(st, r)[0].id for r in refs}, reverse=True)
    return [undo(c, store=st, **kwargs) for c in calls]


def calls_between(st: Store, first: str, last: str) -> list[str]:
    """Pre-call backup IDs of the calls from ``first`` to ``last`` (inclusive) of one
    session, oldest first."""
    a, _ = find_call(st, first)
    b, _ = find_call(st, last)
    if a.id > b.id:
        a, b = b, a
    if a.session != b.session:
        raise UsageError(f"{a.id} and {b.id} belong to different sessions; undo a range "
                         "within one session")
    return sorted(r.id for r in st.catalog.find_backups(
        kinds=CALL_KINDS, status="complete", session=a.session, id_from=a.id, id_to=b.id))


# ------------------------------------------------------------------ trash
def _undo_trash(st: Store, pre: BackupRow, only: Sequence[str], dry_run: bool,
                resolution: Resolution) -> UndoResult:
    """An ``rm`` renamed into the trash: renamed back where nothing took its place; a path
    occupied since is a conflict (``take-backup`` replaces what is there)."""
    from preimage.engine.trash import restore_trash

    conflict = "overwrite" if resolution is Resolution.TAKE_BACKUP else "merge"
    result = restore_trash(st, pre, only=only, dry_run=dry_run, conflict=conflict)
    plans = []
    from preimage.restoration.merge import Conflict
    from preimage.restoration.revert import ItemPlan, Verdict

    for rep in result.reports:
        plan = RevertPlan(target=rep.target, connector="trash")
        for item in rep.items:
            if item.reason.startswith("something new is there"):
                verdict = Verdict.CONFLICT
                note = ("kept as it is now (--keep-live)" if resolution is Resolution.KEEP_LIVE
                        else "left alone: something was created at this path since the call")
                plan.items.append(ItemPlan(item.key, item.key, verdict, note=note, conflicts=[
                    Conflict("(whole item)", "in the trash", None, "present",
                             "deleted by the call and created again since")]))
            else:
                plan.items.append(ItemPlan(item.key, item.key, Verdict.REVERT, write=True,
                                           note="deleted by the call"))
        plans.append(plan)
    return UndoResult(pre.id, result.undo_backup_id, result.reports, dry_run, None, plans)


# ------------------------------------------------------------------ timeline
@dataclass
class CallEntry:
    """One call in a session's timeline."""

    backup_id: str
    created_at: float
    tool: str
    command: str
    tier: str
    session: str | None
    post_id: str | None
    targets: list[str]
    delta: str = ""          # one line: what the call changed
    undone_by: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view."""
        return {"backup": self.backup_id, "created_at": self.created_at, "tool": self.tool,
                "command": self.command, "tier": self.tier, "session": self.session,
                "post_backup": self.post_id, "targets": self.targets, "delta": self.delta,
                "undone_by": self.undone_by}


@closing_own_store
def timeline(*, store: Store | None = None, session: str | None = None,
             limit: int | None = 50, deltas: bool = True) -> list[CallEntry]:
    """The calls the layer protected, oldest first: of ``session`` (``None``: the session
    of the newest call), each with its tier, pre- and post-call backups and a one-line
    summary of its delta."""
    st = open_store(store)
    if session is None:
        newest = st.catalog.find_backups(kinds=CALL_KINDS, status="complete", limit=1)
        session = newest[0].session if newest else None
    calls = st.catalog.find_backups(kinds=CALL_KINDS, status="complete",
                                    session=session if session not in (None, "all") else None,
                                    limit=limit or None)
    # what came after the oldest call shown: its post-call backup, its undos
    rows = st.catalog.find_backups(id_from=calls[-1].id) if calls else []
    posts = {r.parent_id: r for r in rows if r.kind == POST_CALL and r.status == "complete"}
    overlapped = {r.parent_id for r in rows if r.kind == POST_CALL and r.status == "overlapped"}
    undos: dict[str, list[str]] = {}
    for r in rows:
        if r.kind == "pre-restore" and r.parent_id and r.label.startswith("before undoing"):
            undos.setdefault(r.parent_id, []).append(r.id)
    # a call's parts (its rm's trash move, what guard saw it change) are told in its line
    layer_ids = {r.id for r in calls if r.kind == "layer"}
    parts: dict[str, list[BackupRow]] = {}
    for r in reversed(calls):
        if r.kind in PART_KINDS and r.parent_id in layer_ids:
            parts.setdefault(r.parent_id, []).append(r)
    told = {p.id for group in parts.values() for p in group}   # in their call's line
    removed: dict[str, list[str]] | None = None   # the trash table, read once if needed

    def delta_of(r: BackupRow) -> str:
        nonlocal removed
        post = posts.get(r.id)
        if r.kind == "trash":
            if removed is None:
                removed = {}
                for e in st.catalog.trash():
                    removed.setdefault(e.backup_id, []).append(e.original)
            return "removed " + ", ".join(removed.get(r.id, []))
        if deltas and post is not None:
            return _delta_line(st, r, post)
        if r.id in overlapped:
            return "(the capture after it ran on into the session's next call: delta unknown)"
        if post is None:
            return "(no post-call backup: delta unknown)"
        return ""

    out = []
    for r in reversed(calls):
        if r.id in told:
            continue
        call = r.tool_call or {}
        text = call.get("input", {}).get("command") if isinstance(call.get("input"), dict) else None
        post = posts.get(r.id)
        mine = parts.get(r.id, [])
        entry = CallEntry(
            backup_id=r.id, created_at=r.created_at, tool=str(call.get("tool", "")),
            command=str(text or r.label), tier=r.tier, session=r.session,
            post_id=post.id if post else None,
            targets=[s.target for row in (r, *mine) for s in row.snapshots],
            undone_by=undos.get(r.id, []),
        )
        said = [delta_of(part) for part in mine]
        own = delta_of(r)
        entry.delta = "; ".join(d for d in (*said, own) if d and d != "no change") or own
        out.append(entry)
    return out


def _delta_line(st: Store, pre: BackupRow, post: BackupRow) -> str:
    from preimage.similarity import diff_snapshots

    after = paired(pre, post)
    parts = []
    try:
        for row in pre.snapshots:
            other = after.get(row.target)
            if other is None:
                continue
            d = diff_snapshots(load_snapshot_row(st, row), load_snapshot_row(st, other),
                               st.blobs)
            counts = d.summary()
            if d.empty:
                continue
            shown = ", ".join(f"{n} {what}" for what, n in counts.items() if n)
            sample = ", ".join(c.label or c.key for c in d.changes[:3])
            more = "…" if len(d.changes) > 3 else ""
            parts.append(f"{row.target}: {shown} ({sample}{more})")
    except PreimageError as exc:
        return f"(delta unreadable: {exc})"
    return "; ".join(parts) or "no change"
