"""Capture targets into the store as one backup: the connectors read, the store keeps the
snapshot documents and blobs, the catalog records the backup, the quota is applied after."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

from preimage.engine.backups import Backup, closing_own_store, guarded, open_store
from preimage.engine.deadline import check_for
from preimage.interface.errors import (
    CaptureAbandonedError,
    PreimageError,
    StoreBusyError,
    UsageError,
)
from preimage.interface.redact import redact, redact_value
from preimage.interface.registry import get_connector
from preimage.interface.target import Target
from preimage.snapshot_schemas import Snapshot
from preimage.store.backend import RecordingBlobs, SnapshotRow
from preimage.store.documents import (
    StoredDocument,
    StoredItems,
    chunk_list,
    is_chunked,
    item_adapter,
    store_document,
)
from preimage.store.format import digests_in
from preimage.store.ids import new_backup_id
from preimage.store.quota import Quota
from preimage.store.quota import enforce as enforce_quota
from preimage.store.quota import load as load_quota
from preimage.store.store import Store


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


@closing_own_store
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
    pins: contextlib.ExitStack | None = None,
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
    keeps exactly those.  With ``pins``, the new backup is pinned (read pin) into that
    stack before it is complete, so the quota this capture applies — or any other
    process's — cannot forget it before the caller is done with it (a restore's undo
    backup).
    """
    st = open_store(store)
    targets = [u if isinstance(u, Target) else Target.parse(u) for u in uris]
    if not targets:
        raise UsageError("nothing to capture — give at least one target URI")
    connectors = [get_connector(t.scheme) for t in targets]
    for t in targets:
        _check_not_store(t, st)
    backup_id = new_backup_id()
    quota = load_quota(st)
    given_up = check_for(backup_id)
    try:
        return _capture(st, backup_id, targets, connectors, quota, given_up, pins, previous,
                        label=label, kind=kind, tier=tier, tool_call=tool_call,
                        session=session, parent_id=parent_id)
    except CaptureAbandonedError:
        # what it wrote is referenced by nothing complete: reclaim it now (a prune that
        # does not wait; one already running, or the next, does it otherwise)
        from preimage.store.prune import prune

        with contextlib.suppress(StoreBusyError):
            prune(st, wait=False)
        raise


def _capture(st: Store, backup_id: str, targets: list[Target], connectors: list[Any],
             quota: Quota, given_up: Callable[[], None], pins: contextlib.ExitStack | None,
             previous: Sequence[Snapshot | None] | None, *, label: str, kind: str, tier: str,
             tool_call: dict[str, Any] | None, session: str | None,
             parent_id: str | None) -> Backup:
    with st.catalog.lease(backup_id):
        if pins is not None:
            pins.enter_context(st.catalog.pin(backup_id))
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
                view.given_up = given_up
                follow = previous[idx] if previous else None
                snap, doc = guarded(partial(_store_snapshot, st, conn, target, view, follow),
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
            st.blobs.flush()   # durable and indexed before the backup says complete
            given_up()   # the last look: past it, everything was read before the deadline
        except BaseException as exc:
            st.catalog.finish_backup(
                backup_id,
                status="abandoned" if isinstance(exc, CaptureAbandonedError) else "failed",
                stored_bytes=stored,
                logical_bytes=logical,
                seconds=time.perf_counter() - started,
            )
            raise
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
