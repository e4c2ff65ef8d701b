"""Capture, restore, diff and score by backup ID: the Python API behind the CLI."""

from __future__ import annotations

import contextlib
import functools
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, ParamSpec, TypeVar
from urllib.parse import unquote

from preimage._backend import BackupRow, BlobStore, RecordingBlobs, SnapshotRow
from preimage._connector import capabilities_of
from preimage._documents import (
    StoredDocument,
    StoredItems,
    chunk_list,
    expand,
    is_chunked,
    item_adapter,
    store_document,
)
from preimage._errors import (
    BlobCorruptError,
    BlobMissingError,
    PreimageError,
    RestoreError,
    StoreError,
    TerminalConnectorError,
    UsageError,
)
from preimage._format import digests_in
from preimage._ids import new_backup_id
from preimage._quota import enforce as enforce_quota
from preimage._quota import load as load_quota
from preimage._redact import redact, redact_value
from preimage._registry import get_connector
from preimage._store import Store
from preimage._target import Target
from preimage.restoration import ConflictMode, IdRemap, RestorePolicy, RestoreReport
from preimage.similarity import RESTORABLE, SimilarityReport, StateDiff, merge_reports
from preimage.similarity import score as score_snapshots
from preimage.similarity.scoring import flatten
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
    notes: list[str] = field(default_factory=list)   # what the store did (quota)


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

    @property
    def remaps(self) -> list[IdRemap]:
        """Every server-assigned identity the restore changed, old → new."""
        return [m for r in self.reports for m in r.remaps]


def _open(store: Store | None) -> Store:
    return store if store is not None else Store()


P = ParamSpec("P")
R = TypeVar("R")


def _closing_own_store(fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn`` with the caller's ``store=``, or with a store opened for this call and
    closed after it: its uploads end, its leases and connections are released, the chunk
    cache is trimmed and a restore's spool of verified plaintext is removed, instead of
    all of it lasting until the process exits (or, for the spool, until another process
    sweeps it)."""

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        if kwargs.get("store") is not None:
            return fn(*args, **kwargs)
        st = Store()
        kwargs["store"] = st
        try:
            result = fn(*args, **kwargs)
        except BaseException:
            with contextlib.suppress(Exception):   # the first error is the one to report
                st.close()
            raise
        st.close()
        return result

    return call


def _check_not_store(target: Target, store: Store) -> None:
    if target.scheme in ("file", "git", "pip") and target.path:
        from pathlib import Path

        depth: int | None = None
        left_out: list[str] = []
        if target.scheme == "file":
            from preimage.connectors.files.connector import walk_limits

            depth, left_out = walk_limits(target)
        try:
            inside = store.home.resolve().relative_to(Path(target.path).resolve())
        except (OSError, ValueError):
            inside = None
        if inside is not None and inside.parts:
            # a depth-limited walk that stops above the store never reads it
            if depth is not None and len(inside.parts) > depth:
                return
            # nor does a walk that leaves the store (or a directory holding it) out
            if any(inside.is_relative_to(rel) for rel in left_out):
                return
        if store.contains(Path(target.path)):
            raise UsageError(
                f"{target.redacted} contains the backup store at {store.home} (or lies inside "
                "it); set PREIMAGE_HOME to a directory outside the workspace"
            )


def _capturer(conn: Any, target: Target, blobs: Any, previous: Snapshot | None
              ) -> Callable[[], Snapshot]:
    """The connector's capture of ``target``; following ``previous`` where it can,
    else streaming its items where it can (``capture_stream``)."""
    follow = getattr(conn, "capture_following", None)
    if previous is not None and follow is not None:
        return partial(follow, target, blobs, previous)
    return partial(getattr(conn, "capture_stream", None) or conn.capture, target, blobs)


def snapshot_bytes(snap: Snapshot) -> bytes:
    """``snap`` as one JSON document with its items inline (the format of a small
    snapshot; large ones are stored in chunks by :func:`_store_snapshot`).

    File names that are not UTF-8 live in memory as surrogate-escaped strings
    (``os.fsdecode``); JSON carries them as ``\\udcXX`` escapes, which load back
    to the same string, so every name round-trips to its exact bytes.
    """
    if not isinstance(snap.items, list):
        snap = snap.model_copy(update={"items": list(snap.items)})
    try:
        return snap.model_dump_json().encode()
    except ValueError:
        text = json.dumps(snap.model_dump(mode="json"), ensure_ascii=False)
        return text.encode("utf-8", "backslashreplace")


@_closing_own_store
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
    previous: Sequence[Snapshot | None] | None = None,
) -> Backup:
    """Capture every target in ``uris`` as one backup and return it.

    ``previous`` (one per URI) are earlier captures of the same targets: a
    connector whose items can leave a target's scope while they still exist (a
    ticket unlinked from a deleted milestone) follows them there
    (``capture_following``), so the two captures compare item by item — what an
    undo of one call needs.

    Raises :class:`InvalidTargetError` / :class:`NoSuchConnectorError` before
    anything is stored when a URI is bad, and the connector's error when a
    target cannot be read (the half-made backup is marked ``failed``).  The
    capture holds the backup's lease while it runs, and records with each
    snapshot every blob the connector wrote, reused or read, so ``prune``
    keeps exactly those.
    """
    st = _open(store)
    targets = [u if isinstance(u, Target) else Target.parse(u) for u in uris]
    if not targets:
        raise UsageError("nothing to capture — give at least one target URI")
    connectors = [get_connector(t.scheme) for t in targets]
    for t in targets:
        _check_not_store(t, st)
    backup_id = new_backup_id()
    quota = load_quota(st)
    with st.catalog.lease(backup_id):
        st.catalog.add_backup(
            backup_id,
            label=redact(label),
            kind=kind,
            tier=tier,
            tool_call=redact_value(tool_call) if tool_call is not None else None,
            session=session,
            parent_id=parent_id,
        )
        started = time.perf_counter()
        stored = logical = 0
        snapshots: list[Snapshot] = []
        try:
            for idx, (target, conn) in enumerate(zip(targets, connectors, strict=True)):
                view = RecordingBlobs(st.blobs)
                view.max_file_size = quota.max_file_size
                follow = previous[idx] if previous else None
                snap, doc = _guarded(partial(_store_snapshot, st, conn, target, view, follow),
                                     "capture", target.redacted)
                view.flush()
                named = {d for d in digests_in(doc.raw) - view.touched if st.blobs.stored_size(d)}
                st.catalog.add_snapshot(
                    SnapshotRow(backup_id, idx, target.scheme, snap.target, doc.digest,
                                doc.count),
                    view.touched | named,
                )
                stored += view.bytes_written
                logical += view.bytes_seen
                snapshots.append(snap)
        except BaseException:
            st.catalog.finish_backup(
                backup_id,
                status="failed",
                stored_bytes=stored,
                logical_bytes=logical,
                seconds=time.perf_counter() - started,
            )
            raise
        st.blobs.flush()   # durable and indexed before the backup says complete
        seconds = time.perf_counter() - started
        st.catalog.finish_backup(
            backup_id, status="complete", stored_bytes=stored, logical_bytes=logical,
            seconds=seconds, snapshots=len(snapshots),
        )
    notes = enforce_quota(st) if quota.max_size is not None else []
    return Backup(backup_id, snapshots, stored, logical, seconds, notes=notes)


def _store_snapshot(
    st: Store, conn: Any, target: Target, view: RecordingBlobs, follow: Snapshot | None
) -> tuple[Snapshot, StoredDocument]:
    """Capture ``target`` and store its document; the snapshot as the caller sees it.

    ``follow`` is an earlier capture a connector may follow (see
    :func:`capture`).  A connector with ``capture_stream`` hands over its items
    while it reads them; they go into chunks as they come and are read back from the store
    when the caller iterates them (:class:`StoredItems`), so no capture holds a
    large state in memory.
    """
    view.previous = partial(_previous_items, st, conn)
    snap: Snapshot = _capturer(conn, target, view, follow)()
    doc = store_document(view, st.catalog, snap, snap.items)
    if doc.chunks is not None:
        items: Any = StoredItems(st.blobs, doc.chunks, item_adapter(type(snap)))
    else:
        items = doc.items
    if items is not snap.items:
        snap = snap.model_copy(update={"items": items})
    return snap, doc


def _previous_items(st: Store, conn: Any, target: str) -> Iterable[Any] | None:
    """The items of ``target``'s newest snapshot, read as they are used; None when
    there is none or it cannot be read (reusing them is only a shortcut)."""
    row = st.catalog.latest_snapshot(target, conn.scheme)
    if row is None:
        return None
    try:
        document = json.loads(st.blobs.get_bytes(row.digest))
        current = conn.snapshot_type.model_fields["schema_version"].default
        if not isinstance(document, dict) or document.get("schema_version") != current:
            return None
        adapter = item_adapter(conn.snapshot_type)
        if is_chunked(document):
            return StoredItems(st.blobs, chunk_list(document), adapter)
        return [adapter.validate_python(x) for x in document.get("items", [])]
    except (PreimageError, ValueError, TypeError, KeyError):
        return None


T = TypeVar("T")


def _guarded(call: Callable[[], T], verb: str, target: str) -> T:
    """Run a connector's ``call``; an exception that is not a preimage error (a client
    library's, a bug) becomes a connector error naming the target, in one line."""
    try:
        return call()
    except (PreimageError, KeyboardInterrupt, SystemExit, MemoryError):
        raise
    except OSError as exc:
        raise TerminalConnectorError(
            f"cannot {verb} {target}: {exc.strerror or exc}"
            + (f" ({exc.filename})" if exc.filename else ""), target=target) from exc
    except Exception as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TerminalConnectorError(
            f"cannot {verb} {target}: {text} — check that the target is what its URI says",
            target=target,
        ) from exc


def load_snapshot_row(store: Store, row: SnapshotRow) -> Snapshot:
    """Read and validate one stored snapshot (verifying its blob).

    A document that hashes right but does not parse, or that names another
    target than its catalog row, raises :class:`StoreError` naming the backup.
    """
    conn = get_connector(row.connector)
    raw = store.blobs.get_bytes(row.digest, backup_id=row.backup_id, path=row.target)
    try:
        document = expand(json.loads(raw), store.blobs, backup_id=row.backup_id,
                          path=row.target)
        snap = load_snapshot(document, conn.snapshot_type)
    except (ValueError, TypeError, KeyError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise StoreError(
            f"the snapshot document of {row.target} in backup {row.backup_id} is malformed "
            f"({first}); run `preimage check` — nothing was written"
        ) from exc
    if snap.target != row.target:
        raise StoreError(
            f"the snapshot document of backup {row.backup_id} names {snap.target}, but the "
            f"catalog says {row.target}; refusing it — run `preimage check`; nothing was written"
        )
    return snap


def _select(backup: BackupRow, only: Iterable[str]) -> list[tuple[SnapshotRow, tuple[str, ...]]]:
    """Snapshots of ``backup`` selected by ``--only`` URIs, with per-snapshot sub-scopes.

    An ``--only`` URI names a target of the backup, a path below one
    (``file:///srv/app/bin``), or a part of one after ``#`` — which works for
    targets with a query too (``web+isso://h/t?profile=p#comment:…``).
    """
    only = [o for o in only if o]
    if not only:
        return [(row, ()) for row in backup.snapshots]
    chosen: dict[int, set[str]] = {}
    for uri in only:
        where, hashed, part = uri.partition("#")
        clean = Target.parse(where).redacted.rstrip("/")
        hit = False
        for row in backup.snapshots:
            base = row.target.rstrip("/")
            if clean == base:
                chosen.setdefault(row.idx, set()).add(unquote(part) if hashed else "")
                hit = True
            elif clean.startswith(base + "/") and not hashed:
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


def _complete(st: Store, ref: str, verb: str) -> BackupRow:
    """Backup ``ref``, refused unless its capture finished (a killed or failed capture
    holds only part of its targets, so it can neither be restored nor vouch for a score)."""
    backup = st.catalog.get(ref)
    if backup.status != "complete":
        raise UsageError(
            f"backup {backup.id} is {backup.status}, not complete (its capture did not finish); "
            f"it cannot be {verb} — pick a complete backup from `preimage list`"
        )
    return backup


def _as_seen(st: Store, row: BackupRow) -> BackupRow:
    """``row`` with an ``open`` status shown as ``abandoned`` when no process holds its
    lease: a killed capture must not look like a running one."""
    if row.status == "open" and not st.catalog.lease_held(row.id):
        return replace(row, status="abandoned")
    return row


@_closing_own_store
def show(ref: str, *, store: Store | None = None) -> BackupRow:
    """The catalog entry of backup ``ref``."""
    st = _open(store)
    return _as_seen(st, st.catalog.get(ref))


@_closing_own_store
def list_backups(limit: int | None = 50, *, store: Store | None = None) -> list[BackupRow]:
    """Backups, newest first, a killed capture shown as ``abandoned``."""
    st = _open(store)
    return [_as_seen(st, r) for r in st.catalog.list_backups(limit)]


def _check_whole(
    st: Store, backup: BackupRow, loaded: list[tuple[SnapshotRow, Any, Snapshot]]
) -> None:
    """Every snapshot row is there and every blob each selected snapshot references
    is present and sound — before anything is written anywhere.

    A restore of one target whose connector restores atomically (it reads every blob
    inside the transaction it writes in, so a damaged one rolls it all back) needs the
    blobs present only: reading each of them here too would read it twice."""
    if backup.expected_snapshots is not None and len(backup.snapshots) != backup.expected_snapshots:
        raise StoreError(
            f"backup {backup.id} should have {backup.expected_snapshots} snapshot(s) but the "
            f"catalog holds {len(backup.snapshots)}; run `preimage check` — nothing was written"
        )
    atomic = len(loaded) == 1 and capabilities_of(get_connector(loaded[0][0].connector)).atomic_restore
    for row, _scope, snap in loaded:
        try:
            refs = sorted(st.catalog.refs(backup.id, row.idx))
            if atomic:
                for digest in refs:
                    if not st.blobs.present(digest):
                        raise BlobMissingError(digest, backup_id=backup.id)
                continue
            st.blobs.verify_many(refs, backup_id=backup.id)
        except (BlobCorruptError, BlobMissingError) as exc:
            where = item_naming(snap, exc.digest)
            path = f"{row.target} {where}" if where else row.target
            raise type(exc)(exc.digest, backup_id=backup.id, path=path) from exc


def item_naming(snap: Snapshot, digest: str) -> str:
    """The natural key of the first item whose fields mention ``digest`` (for messages)."""
    for item in snap.items:
        try:
            if digest in json.dumps(item.model_dump(mode="json")):
                return str(item.natural_key())
        except (AttributeError, TypeError, ValueError):
            continue
    return ""


@_closing_own_store
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
    that still describes the live state (see :func:`_resumable`); otherwise a
    fresh undo backup is taken first.  A dry run writes nothing and returns
    the plan.

    ``conflict="revert"`` undoes the call backup ``ref`` was taken for instead —
    only what the call changed, keeping everything changed since
    (:func:`preimage.undo`, which this returns the result of).
    """
    if ConflictMode(conflict) is ConflictMode.REVERT:
        from preimage._undo import undo as undo_call

        return undo_call(ref, store=store, only=only, dry_run=dry_run)
    st = _open(store)
    backup = _complete(st, ref, "restored")
    if backup.kind == "trash":  # a rewritten rm: renamed into the trash, renamed back
        from preimage._trash import restore_trash

        return restore_trash(st, backup, only=only, dry_run=dry_run,
                             conflict=ConflictMode(conflict).value)
    selected = _select(backup, only)
    loaded = [(row, scope, load_snapshot_row(st, row)) for row, scope in selected]
    _check_whole(st, backup, loaded)
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
    entry = st.catalog.running_restore(backup.id, only_key)
    undo: str | None = None
    restore_id = 0
    if entry is not None:
        if entry.undo_backup and _resumable(st, entry.undo_backup, loaded):
            restore_id, undo = entry.id, entry.undo_backup
        else:
            st.catalog.finish_restore(entry.id, "superseded")
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
        restore_id = st.catalog.start_restore(backup.id, only_key, undo)
    reports: list[RestoreReport] = []
    errors: list[str] = []
    for row, scope, snap in loaded:
        conn = get_connector(row.connector)
        policy = RestorePolicy(dry_run=False, conflict=mode, only=scope)
        try:
            reports.append(_guarded(partial(conn.restore, snap, st.blobs, policy=policy),
                                    "restore", row.target))
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


def _restorable_items(snap: Snapshot, blobs: BlobStore) -> dict[str, dict[str, tuple[str, Any]]]:
    leaves, keys = flatten(snap.scoring_items(blobs))
    items: dict[str, dict[str, tuple[str, Any]]] = {k: {} for k in keys}
    for (key, path), leaf in leaves.items():
        if leaf.fidelity in RESTORABLE:  # not server ids, not access times a read moves
            items[key][path] = (leaf.fidelity, leaf.value)
    return items


def _resumable(st: Store, undo_id: str, loaded: list[tuple[SnapshotRow, Any, Snapshot]]) -> bool:
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
            u = _restorable_items(before, scratch)
            b = _restorable_items(wanted, scratch)
            now = _restorable_items(live, scratch)
            for key in set(u) | set(now):
                have, old, new = now.get(key), u.get(key), b.get(key)
                if have in (old, new):
                    continue
                if have is not None and new is not None and _content(have) == _content(new):
                    continue
                return False
    return True


def _content(fields: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    return {p: v for p, (fidelity, v) in fields.items() if fidelity == "content"}


@contextmanager
def _with_live(
    ref: str, store: Store | None, only: Sequence[str]
) -> Iterator[tuple[BlobStore, list[tuple[SnapshotRow, Snapshot, Snapshot]]]]:
    """Each selected snapshot of backup ``ref`` with the live state of its target,
    captured into a scratch store that lives as long as the block."""
    with contextlib.ExitStack() as stack:
        st = store if store is not None else stack.enter_context(Store())
        yield from _live_pairs(st, ref, only)


def _live_pairs(
    st: Store, ref: str, only: Sequence[str]
) -> Iterator[tuple[BlobStore, list[tuple[SnapshotRow, Snapshot, Snapshot]]]]:
    backup = _complete(st, ref, "compared")
    with st.scratch_area() as scratch:
        if backup.kind == "trash":  # an rm renamed into the trash: read what it holds now
            from preimage._trash import live_target, trash_snapshots

            originals = trash_snapshots(st, backup, scratch, only)
            uris = [live_target(snap) for _row, snap in originals]
        else:
            originals = [(row, load_snapshot_row(st, row)) for row, _scope in _select(backup, only)]
            uris = [row.target for row, _snap in originals]
        pairs = [
            (row, original, get_connector(row.connector).capture(Target.parse(uri), scratch))
            for (row, original), uri in zip(originals, uris, strict=True)
        ]
        yield scratch, pairs


def diff(ref: str, *, store: Store | None = None, only: Sequence[str] = ()) -> list[StateDiff]:
    """What differs between the live state and backup ``ref``, per target."""
    with _with_live(ref, store, only) as (_scratch, pairs):
        return [get_connector(row.connector).diff(original, live) for row, original, live in pairs]


def score(
    ref: str,
    *,
    store: Store | None = None,
    only: Sequence[str] = (),
    remaps: Iterable[IdRemap] = (),
) -> tuple[SimilarityReport, list[tuple[str, SimilarityReport]]]:
    """Score the live state against backup ``ref``: the total and a report per target.

    ``remaps`` (a restore's :attr:`RestoreResult.remaps`) let server-class
    differences name the identity remap that explains them.
    """
    remaps = list(remaps)
    with _with_live(ref, store, only) as (scratch, pairs):
        per_target = [
            (row.target, score_snapshots(original, live, scratch, remaps=remaps))
            for row, original, live in pairs
        ]
    return merge_reports(r for _, r in per_target), per_target
