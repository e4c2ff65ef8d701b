"""The store format version and the migrations between versions.

Format 1 is the first release's store; format 2 records every blob each
snapshot references (so ``prune`` and ``check`` need not guess), a catalog
``meta`` table holding the version and settings, and the number of snapshots
a finished backup has.  Format 3 writes large snapshot documents as a head and
content-defined chunks of items, with the blobs a chunk names recorded once as
its links (:mod:`preimage.store.documents`); a format-2 preimage would not follow
those links, so it must not open a format-3 store.  Format 4 keeps small blobs in pack
files found through an index beside them (:mod:`preimage.store.local_packs`), which a
format-3 preimage would not look in.  A store at an older format is upgraded when it is
opened (once, under a store-wide lock); a store at a newer format is refused
with :class:`~preimage.StoreFormatError` and left untouched.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from preimage.interface.errors import PreimageError, StoreFormatError

if TYPE_CHECKING:
    from preimage.interface.blobs import BlobStore
    from preimage.store.store import Store

FORMAT = 4
# A shared store (pack repository + PostgreSQL catalog) never holds local packs: it stays
# at format 3, so that machines not yet upgraded keep using it.
SHARED_FORMAT = 3

_HEX64 = re.compile(rb"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")
_SCAN_CHUNK = 1 << 20


# The trash area holds, beside each rewritten rm's renamed paths, the call it came from.
CALL_SUFFIX = ".call.json"      # trash/<ID>.call.json: the call a rewritten rm came from
PENDING_SECONDS = 24 * 3600     # prune keeps a call file this long for a call not yet run


def digests_in(data: bytes) -> set[str]:
    """Every 64-hex-digit string in ``data`` (a blob name can hide anywhere in JSON)."""
    return {m.decode() for m in _HEX64.findall(data)}


def conservative_refs(blobs: BlobStore, roots: Iterable[str]) -> set[str]:
    """Blobs reachable from ``roots``: every digest named in a JSON blob, recursively.

    Used where a backup's references were never recorded (stores written
    before format 2).  It can only over-count — a 64-hex string that happens
    to name a blob keeps that blob — which is the safe direction for ``prune``.
    """
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        digest = todo.pop()
        if digest in seen or not blobs.stored_size(digest):
            continue
        seen.add(digest)
        try:
            stream = blobs.chunks(digest)
            head = next(stream, b"")
        except PreimageError:
            continue
        if head.lstrip()[:1] not in (b"{", b"["):
            continue
        tail = b""
        found: set[str] = set()
        try:
            for chunk in itertools.chain([head], stream):
                window = tail + chunk
                found |= digests_in(window)
                tail = window[-64:]
        except PreimageError:
            pass
        todo.extend(found - seen)
    return seen


def _one_to_two(store: Store) -> None:
    cat = store.catalog
    cat.migrate_schema(2)
    for backup in cat.list_backups(None):
        for row in backup.snapshots:
            cat.add_refs(backup.id, row.idx, conservative_refs(store.blobs, [row.digest]))
        if backup.status == "complete" and backup.expected_snapshots is None:
            _set_expected(store, backup.id, len(backup.snapshots))


def _set_expected(store: Store, backup_id: str, n: int) -> None:
    row = store.catalog.get(backup_id)
    store.catalog.finish_backup(
        backup_id, status=row.status, stored_bytes=row.stored_bytes,
        logical_bytes=row.logical_bytes, seconds=row.seconds, snapshots=n,
    )


def _two_to_three(store: Store) -> None:
    # Format 3 stores large snapshot documents in chunks whose blobs the catalog
    # links to (see preimage.store.documents); documents written before stay valid as
    # they are, so only the catalog's links table is added.
    store.catalog.migrate_schema(3)


def _three_to_four(store: Store) -> None:
    # Format 4 packs small blobs.  Blobs written before stay loose files and are read as
    # they are, forever: nothing is rewritten, so an upgrade cannot lose or damage a
    # blob, and the pack index is created by the first blob that goes into a pack.
    # The catalog's tables do not change; only the recorded number does, so that a
    # format-3 preimage (which would not see packed blobs) refuses the store.
    return


MIGRATIONS: dict[int, Callable[[Store], None]] = {
    1: _one_to_two, 2: _two_to_three, 3: _three_to_four,
}


def required(store: Store) -> int:
    """The format ``store`` must be at: :data:`FORMAT` where its blobs are the local
    store's (which packs small blobs), :data:`SHARED_FORMAT` for any other backend."""
    from preimage.store.blobs import LocalBlobStore

    return FORMAT if isinstance(store.blobs, LocalBlobStore) else SHARED_FORMAT


def upgrade(store: Store) -> None:
    """Bring ``store`` to the format it needs (:func:`required`), or refuse a newer one
    than this preimage understands."""
    found = store.catalog.format_version()
    if found > FORMAT:
        raise StoreFormatError(str(store.home), found, FORMAT)
    target = required(store)
    if found >= target:
        return
    with store.catalog.exclusive("upgrade", wait=600):
        found = store.catalog.format_version()   # another process may have upgraded it
        while found < target:
            MIGRATIONS[found](store)
            found += 1
            store.catalog.set_format_version(found)


def describe() -> dict[str, object]:
    """The format this preimage writes, for ``stats --json``."""
    return {"format": FORMAT, "migrations_from": sorted(MIGRATIONS)}


__all__ = ["FORMAT", "SHARED_FORMAT", "conservative_refs", "describe", "digests_in",
           "required", "upgrade"]
