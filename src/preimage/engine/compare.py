"""Compare a backup with the live state of its targets: ``diff`` (what differs, per target)
and ``score`` (how faithfully the live state reproduces the backup, per fidelity class)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from preimage.engine.backups import select_snapshots
from preimage.engine.live_capture import live_capture
from preimage.interface.blobs import BlobStore
from preimage.interface.errors import UNRESTORABLE, BlobCorruptError, BlobMissingError
from preimage.interface.registry import get_connector
from preimage.interface.target import Target
from preimage.restoration import IdRemap
from preimage.similarity import SimilarityReport, StateDiff, merge_reports
from preimage.similarity import score as score_snapshots
from preimage.snapshot_schemas import Snapshot
from preimage.store.backend import SnapshotRow
from preimage.store.snapshots import load_snapshot_row, pinned_backup
from preimage.store.store import Store


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
    with pinned_backup(st, ref, "compared") as backup, st.scratch_area() as scratch:
        if backup.kind == "observed":   # files it linked into the trash become snapshots
            from preimage.engine.observed_links import materialize

            backup = materialize(st, backup)
        if backup.kind == "trash":  # an rm renamed into the trash: read what it holds now
            from preimage.engine.trash import live_target, trash_snapshots

            originals = trash_snapshots(st, backup, scratch, only)
            uris = [live_target(snap) for _row, snap in originals]
        else:
            originals = [(row, load_snapshot_row(st, row))
                         for row, _scope in select_snapshots(backup, only)]
            uris = [row.target for row, _snap in originals]
        pairs = [
            (row, original, live_capture(get_connector(row.connector), Target.parse(uri), scratch))
            for (row, original), uri in zip(originals, uris, strict=True)
        ]
        yield scratch, pairs


@contextmanager
def _compare_errors() -> Iterator[None]:
    """A damaged backup met by ``diff`` or ``score``: the error says what it means here
    (nothing is written by either; the comparison cannot be made)."""
    try:
        yield
    except (BlobCorruptError, BlobMissingError) as exc:
        if exc.consequence != UNRESTORABLE:
            raise
        raise type(exc)(exc.digest, backup_id=exc.backup_id, path=exc.path, consequence=(
            "the backup cannot be compared with the live state; run `preimage check`"
        )) from exc


def diff(ref: str, *, store: Store | None = None, only: Sequence[str] = ()) -> list[StateDiff]:
    """What differs between the live state and backup ``ref``, per target."""
    with _compare_errors(), _with_live(ref, store, only) as (_scratch, pairs):
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
    with _compare_errors(), _with_live(ref, store, only) as (scratch, pairs):
        per_target = [
            (row.target, score_snapshots(original, live, scratch, remaps=remaps))
            for row, original, live in pairs
        ]
    return merge_reports(r for _, r in per_target), per_target
