"""Snapshot documents in the store, read and written: a snapshot as bytes, a catalog row
read back into its connector's snapshot type, a backup looked up only when complete."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from preimage.interface.errors import (
    StoreError,
    UsageError,
)
from preimage.interface.registry import get_connector
from preimage.snapshot_schemas import Snapshot, load_snapshot
from preimage.store.backend import BackupRow, SnapshotRow
from preimage.store.documents import (
    StoredItems,
    chunk_list,
    expand,
    is_chunked,
    item_adapter,
)
from preimage.store.store import Store


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


def load_snapshot_row(store: Store, row: SnapshotRow) -> Snapshot:
    """Read and validate one stored snapshot (verifying its blob).

    A document that hashes right but does not parse, or that names another
    target than its catalog row, raises :class:`StoreError` naming the backup.
    """
    conn = get_connector(row.connector)
    raw = store.blobs.get_bytes(row.digest, backup_id=row.backup_id, path=row.target)
    try:
        document = json.loads(raw)
        snap = _load_streamed(store, row, document, conn.snapshot_type)
        if snap is None:
            document = expand(document, store.blobs, backup_id=row.backup_id,
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


def _load_streamed(store: Store, row: SnapshotRow, document: Any,
                   snapshot_type: type[Snapshot]) -> Snapshot | None:
    """A chunked document of the current schema version as a snapshot whose items are
    read from the store as they are used (:class:`StoredItems`, each chunk verified and
    validated when it is read), so a restore, diff or score of a million files never
    holds the document whole; None for any other document (loaded whole, migrated)."""
    if not isinstance(document, dict) or not is_chunked(document):
        return None
    current = snapshot_type.model_fields["schema_version"].default
    if document.get("schema_version", 1) != current:
        return None
    chunks = chunk_list(document)
    count = document["items"].get("count")
    if count is not None and sum(n for _, n in chunks) != count:
        raise ValueError("the chunks' item counts do not add up to the head's count")
    head = load_snapshot({**document, "items": []}, snapshot_type)
    items = StoredItems(store.blobs, chunks, item_adapter(snapshot_type),
                        backup_id=row.backup_id, path=row.target)
    return head.model_copy(update={"items": items})


def complete_backup(st: Store, ref: str, verb: str) -> BackupRow:
    """Backup ``ref``, refused unless its capture finished (a killed or failed capture
    holds only part of its targets, so it can neither be restored nor vouch for a score)."""
    backup = st.catalog.get(ref)
    if backup.status == "overlapped":
        raise UsageError(
            f"backup {backup.id} was captured while the session's next call ran (the capture "
            f"after a call outlasted the hook's timeout), so it holds no state of one moment; "
            f"it cannot be {verb} — pick a complete backup from `preimage list`")
    if backup.status != "complete":
        raise UsageError(
            f"backup {backup.id} is {backup.status}, not complete (its capture did not finish); "
            f"it cannot be {verb} — pick a complete backup from `preimage list`"
        )
    return backup


@contextmanager
def pinned_backup(st: Store, ref: str, verb: str) -> Iterator[BackupRow]:
    """Backup ``ref``, complete (:func:`complete_backup`), pinned for the block: no
    ``forget`` — by name, by policy or by the quota — removes it, nor so ``prune`` its
    blobs, while the block reads it (:meth:`Catalog.pin`).  It is looked up after the
    pin is taken, so a backup forgotten just before is reported missing, not half read."""
    backup_id = st.catalog.resolve(ref)
    with st.catalog.pin(backup_id):
        yield complete_backup(st, backup_id, verb)


def as_seen(st: Store, row: BackupRow) -> BackupRow:
    """``row`` with an ``open`` status shown as ``abandoned`` when no process holds its
    lease: a killed capture must not look like a running one."""
    if row.status == "open" and not st.catalog.lease_held(row.id):
        return replace(row, status="abandoned")
    return row


def item_naming(snap: Snapshot, digest: str) -> str:
    """The natural key of the first item whose fields mention ``digest`` (for messages)."""
    for item in snap.items:
        try:
            if digest in json.dumps(item.model_dump(mode="json")):
                return str(item.natural_key())
        except (AttributeError, TypeError, ValueError):
            continue
    return ""
