"""``forget`` and ``prune``: removing backups, then reclaiming what nothing references.

``forget`` only removes catalog rows (a backup, its snapshots and references);
``prune`` reclaims bytes: every blob no remaining backup references (a
``failed`` or ``abandoned`` backup's references do not count — what it stored
is garbage), partial writes of killed captures, scratch areas of killed
``diff``/``score`` runs, and the trash directories of forgotten backups.

``prune`` deletes in two phases so that a capture running in parallel never
loses a blob it reuses; the reasoning is in ``docs/store.md`` (*Concurrency*):

1. **mark** — hide every unreferenced blob (the capture that asks for one gets
   it back), then note which captures are open;
2. **sweep** — once those captures have finished, read the references again,
   bring back every hidden blob that turned out to be referenced, delete the rest.

Only one prune runs at a time (the store-wide ``prune`` lock).  Everything
goes through the backend interface, so a remote store prunes the same way.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from preimage.interface import crash as _crash
from preimage.interface.errors import UsageError
from preimage.store.backend import BackupRow
from preimage.store.ids import new_backup_id
from preimage.store.retention import RetentionPolicy, select_forget, with_post_calls
from preimage.store.store import Store

GARBAGE_STATUSES = ("failed", "abandoned")
_PENDING = "prune:pending"


@dataclass
class ForgetReport:
    """What ``forget`` removed (or, in a dry run, would remove)."""

    forgotten: list[BackupRow]
    kept: int
    dry_run: bool
    policy: str = ""
    in_use: list[str] = field(default_factory=list)   # kept: being read (restore, diff…)


@dataclass
class PruneReport:
    """What ``prune`` found and reclaimed."""

    dry_run: bool = False
    abandoned: list[str] = field(default_factory=list)
    unreferenced_blobs: int = 0
    unreferenced_bytes: int = 0
    deleted_blobs: int = 0
    freed_bytes: int = 0
    kept_back: int = 0          # hidden blobs a backup turned out to reference
    leftovers: int = 0          # partial writes and scratch areas removed
    trash: list[str] = field(default_factory=list)   # trash paths reclaimed
    pending: list[str] = field(default_factory=list)  # generations waiting for captures
    waited_for: list[str] = field(default_factory=list)


def mark_abandoned(store: Store) -> list[str]:
    """Mark ``open`` backups whose capture process is gone as ``abandoned``."""
    out = []
    for row in store.catalog.list_backups(None):
        if (
            row.status == "open"
            and not store.catalog.lease_held(row.id)
            and store.catalog.set_status(row.id, "abandoned", only_if="open")
        ):
            out.append(row.id)
    return out


def forget(
    store: Store,
    refs: Sequence[str] = (),
    *,
    policy: RetentionPolicy | None = None,
    dry_run: bool = False,
) -> ForgetReport:
    """Remove the backups named by ``refs``, or those ``policy`` does not keep.

    A backup whose capture is still running is refused by name and skipped by
    a policy; so is a backup being read — restored, diffed, scored, undone or
    exported (its read pin, :meth:`Catalog.pin`), and with it the other half of
    its call's pair.  Each backup is removed under :meth:`Catalog.unpinned`, so a
    reader that starts meanwhile waits and then finds it gone.  Nothing is
    reclaimed until ``prune``.
    """
    cat = store.catalog
    if refs and policy is not None and not policy.empty:
        raise UsageError("name backups or give --keep-* rules, not both")
    if refs:
        rows = [cat.get(r) for r in refs]
        running = [r.id for r in rows if r.status == "open" and cat.lease_held(r.id)]
        if running:
            raise UsageError(
                f"backup {', '.join(running)} is still being captured; forget it once it is done"
            )
        # A pre-call backup goes with the capture taken right after its call.
        chosen = with_post_calls(list({r.id: r for r in rows}.values()), cat.list_backups(None))
        reading = [r.id for r in chosen if _in_use(store, r.id)]
        if reading:
            raise UsageError(
                f"backup {', '.join(reading)} is being read (a restore, diff, score, undo or "
                "export is running); forget it once that is done — nothing was forgotten"
            )
        label = ""
    else:
        if policy is None or policy.empty:
            raise UsageError(
                "forget needs backup IDs or at least one --keep-* rule "
                "(--keep-last, --keep-within, --keep-hourly, --keep-daily, --keep-weekly, "
                "--keep-monthly)"
            )
        mark_abandoned(store)
        chosen = select_forget(policy, cat.list_backups(None))
        label = policy.describe()
    total = cat.count()
    # a pair goes together: a pre-call backup being read keeps its post-call capture
    # and the other way round
    kept = {r.id for r in chosen if _in_use(store, r.id)}
    pairs = [(r.id, r.parent_id) for r in chosen if r.parent_id]
    kept |= {i for i, parent in pairs if parent in kept}
    kept |= {parent for i, parent in pairs if i in kept and parent}
    gone = [r for r in chosen if r.id not in kept]
    if not dry_run:
        for row in list(gone):
            _crash.point("forget")
            with cat.unpinned(row.id) as free:
                if free:
                    cat.forget([row.id])
                    continue
            kept.add(row.id)   # a reader started since the look above
            gone.remove(row)
    in_use = sorted(kept & {r.id for r in chosen})
    return ForgetReport(gone, total - len(gone), dry_run, label, in_use)


def _in_use(store: Store, backup_id: str) -> bool:
    with store.catalog.unpinned(backup_id) as free:
        return not free


def _load_pending(store: Store) -> dict[str, dict[str, list[str]]]:
    raw = store.catalog.setting(_PENDING)
    try:
        doc = json.loads(raw) if raw else {}
    except ValueError:
        doc = {}
    return doc if isinstance(doc, dict) else {}


def _save_pending(store: Store, pending: dict[str, dict[str, list[str]]]) -> None:
    store.catalog.set_setting(_PENDING, json.dumps(pending, sort_keys=True) if pending else None)


def _open_captures(store: Store) -> list[str]:
    return [
        r.id for r in store.catalog.list_backups(None)
        if r.status == "open" and store.catalog.lease_held(r.id)
    ]


def _sweep(store: Store, gen: str, meta: dict[str, list[str]], report: PruneReport) -> None:
    live = store.catalog.referenced(skip_statuses=GARBAGE_STATUSES)
    hidden = store.blobs.hidden().get(gen, [])
    back = [d for d in hidden if d in live]
    for digest in back:
        store.blobs.unhide(digest, gen)
    doomed = [d for d in hidden if d not in live]
    freed = store.blobs.purge_hidden(gen, doomed)
    report.kept_back += len(back)
    report.deleted_blobs += len(doomed)
    report.freed_bytes += freed
    left = store.blobs.remove_leftovers(meta.get("leftovers", []))
    left += store.remove_local_leftovers(meta.get("local", []))
    report.freed_bytes += left
    report.leftovers += len(meta.get("leftovers", [])) + len(meta.get("local", []))


def _reclaim_trash(store: Store, report: PruneReport, *, dry_run: bool) -> None:
    """Trash of backups that are no longer in the catalog (forgotten), and the call files
    of rewritten ``rm`` calls that never ran (kept a day: the user may still approve one)."""
    from preimage.store.format import CALL_SUFFIX, PENDING_SECONDS

    known = {r.id for r in store.catalog.list_backups(None)}
    entries = store.catalog.trash()
    base = store.home / "trash"
    dead = sorted({e.backup_id for e in entries if e.backup_id not in known})
    if base.is_dir():
        old = time.time() - PENDING_SECONDS
        dead = sorted(set(dead) | {p.name for p in base.iterdir() if p.name not in known
                                   and not (p.name.endswith(CALL_SUFFIX) and _newer(p, old))})
    for backup_id in dead:
        path = base / backup_id
        report.trash.append(str(path))
        if dry_run:
            continue
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        store.catalog.drop_trash(e.id for e in entries if e.backup_id == backup_id)


def _newer(path: Path, when: float) -> bool:
    try:
        return path.stat().st_mtime > when
    except OSError:
        return False


def prune(
    store: Store,
    *,
    wait: bool = True,
    timeout: float | None = None,
    dry_run: bool = False,
    say: Callable[[str], None] | None = None,
) -> PruneReport:
    """Reclaim everything no backup references (see the module docstring).

    With ``wait`` (the default) the sweep follows the mark in this run, after
    the captures that were open have finished (at most ``timeout`` seconds);
    without it, or when they outlast the timeout, the generation is swept by
    a later prune.
    """
    report = PruneReport(dry_run=dry_run)
    say = say or (lambda _text: None)
    cat, blobs = store.catalog, store.blobs
    blobs.flush()   # what this process buffered (an open pack) is listed like the rest
    with cat.exclusive("prune"):
        if dry_run:
            live = cat.referenced(skip_statuses=GARBAGE_STATUSES)
            for digest in blobs.digests():
                if digest not in live:
                    report.unreferenced_blobs += 1
                    report.unreferenced_bytes += blobs.stored_size(digest)
            report.leftovers = len(blobs.leftovers()) + len(store.local_leftovers())
            _reclaim_trash(store, report, dry_run=True)
            return report
        report.abandoned = mark_abandoned(store)
        cat.drop_stale_leases()
        pending = _load_pending(store)
        # generations a killed prune hid without noting its waits: wait for what is open now
        for gen in blobs.hidden():
            pending.setdefault(gen, {"waits": _open_captures(store)})
        _save_pending(store, pending)
        for gen, meta in sorted(pending.items()):
            if any(cat.lease_held(b) for b in meta.get("waits", [])):
                continue
            _sweep(store, gen, meta, report)
            del pending[gen]
            _save_pending(store, pending)
        # links of chunks nothing references any more (only while no capture is open:
        # a capture records a chunk's links before its snapshot row)
        cat.drop_unused_links()
        # phase one: mark
        gen = "g" + new_backup_id()
        live = cat.referenced(skip_statuses=GARBAGE_STATUSES)
        for digest in list(blobs.digests()):
            if digest not in live:
                report.unreferenced_blobs += 1
                report.unreferenced_bytes += blobs.stored_size(digest)
                blobs.hide(digest, gen)
        meta = {
            "waits": _open_captures(store),
            "leftovers": [x.name for x in blobs.leftovers()],
            "local": [x.name for x in store.local_leftovers()],
        }
        pending[gen] = meta
        _save_pending(store, pending)
        # phase two: sweep, once the captures open during the mark are done
        if wait:
            if meta["waits"]:
                say(f"waiting for {len(meta['waits'])} capture(s) in progress to finish…")
            for backup_id in meta["waits"]:
                if cat.wait_lease(backup_id, timeout):
                    report.waited_for.append(backup_id)
        for g, m in sorted(pending.items()):
            if any(cat.lease_held(b) for b in m.get("waits", [])):
                continue
            _sweep(store, g, m, report)
            del pending[g]
            _save_pending(store, pending)
        report.pending = sorted(pending)
        _reclaim_trash(store, report, dry_run=False)
    return report
