"""Compare a backup with anything of its kind: ``score ID --against URI`` (a live target
anywhere, such as a staging copy a team's own runbook restored), ``score ID1 --against
ID2`` and ``diff ID1 ID2`` (two backups).

Each pair is compared after the original is re-addressed to the other side's target
(:func:`~preimage.interface.connector.relocate`): identities that must differ in
another place (root, database, namespace, folder prefix) are mapped, listed in the
report's ``mapped``, and never counted as lost.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from preimage.engine.backups import closing_own_store, guarded, open_store, select_snapshots
from preimage.interface.blobs import BlobStore
from preimage.interface.connector import relocate
from preimage.interface.errors import UsageError
from preimage.interface.registry import get_connector
from preimage.interface.target import Target
from preimage.restoration import IdentityMapping
from preimage.similarity import SimilarityReport, StateDiff, merge_reports
from preimage.similarity import score as score_snapshots
from preimage.snapshot_schemas import Snapshot
from preimage.store.snapshots import complete_backup, load_snapshot_row
from preimage.store.store import Store

__all__ = ["diff_backups", "is_uri", "score_against"]

Pair = tuple[str, Snapshot, Snapshot | None]  # connector, original, other (None: absent)


def is_uri(text: str) -> bool:
    """Whether ``text`` names a target (``scheme:…``) rather than a backup ID."""
    return ":" in text.split("/", 1)[0]


def _originals(st: Store, ref: str, only: Sequence[str]) -> list[tuple[str, Snapshot]]:
    backup = complete_backup(st, ref, "compared")
    if backup.kind == "observed":   # files it linked into the trash become snapshots
        from preimage.engine.observed_links import materialize

        backup = materialize(st, backup)
    if backup.kind == "trash":
        raise UsageError(f"backup {backup.id} holds paths an rm moved into the trash; compare "
                         "it with `preimage score` in place")
    return [(row.connector, load_snapshot_row(st, row))
            for row, _scope in select_snapshots(backup, only)]


def _pair_backups(
    originals: list[tuple[str, Snapshot]], others: list[tuple[str, Snapshot]]
) -> list[Pair]:
    """Pair the snapshots of two backups: by target, then (one each) by connector."""
    left = list(others)
    pairs: list[Pair] = []
    pending = []
    for conn, snap in originals:
        same = next((o for o in left if o[1].target == snap.target), None)
        if same is not None:
            left.remove(same)
            pairs.append((conn, snap, same[1]))
        else:
            pending.append((conn, snap))
    for conn, snap in pending:
        kin = [o for o in left if o[0] == conn]
        if len(kin) > 1:
            raise UsageError(
                f"{snap.target}: the other backup holds {len(kin)} {conn} targets "
                f"({', '.join(o[1].target for o in kin)}); name one side with --only"
            )
        if kin:
            left.remove(kin[0])
        pairs.append((conn, snap, kin[0][1] if kin else None))
    return pairs


@contextmanager
def _pairs(
    st: Store, ref: str, against: str, only: Sequence[str]
) -> Iterator[tuple[BlobStore, list[Pair]]]:
    """The original snapshots of ``ref`` with what they are compared to: the live state
    of URI ``against`` (captured into a scratch area) or the snapshots of backup
    ``against``."""
    originals = _originals(st, ref, only)
    if not is_uri(against):
        others = _originals(st, against, ())
        with st.scratch_area() as scratch:  # what a relocation rewrites stays out of the store
            yield scratch, _pair_backups(originals, others)
        return
    target = Target.parse(against)
    if len(originals) != 1:
        raise UsageError(
            f"--against {target.redacted}: backup {ref} holds {len(originals)} targets; pick "
            "the one to compare with --only URI"
        )
    conn_name, original = originals[0]
    conn = get_connector(conn_name)
    if type(get_connector(target.scheme)) is not type(conn):
        raise UsageError(f"--against {target.redacted}: not a {conn_name} target like "
                         f"{original.target}; compare targets of one kind")
    with st.scratch_area() as scratch:
        live = guarded(lambda: conn.capture(target, scratch), "capture", target.redacted)
        yield scratch, [(conn_name, original, live)]


def _relocated(
    conn_name: str, original: Snapshot, other: Snapshot | None, blobs: BlobStore
) -> tuple[Snapshot, list[IdentityMapping]]:
    if other is None:
        return original, []
    moved = relocate(get_connector(conn_name), original, Target.parse(other.target), other=other,
                     blobs=blobs)
    return moved.snapshot, list(moved.mappings)


@closing_own_store
def score_against(
    ref: str, against: str, *, store: Store | None = None, only: Sequence[str] = ()
) -> tuple[SimilarityReport, list[tuple[str, SimilarityReport]]]:
    """Score ``against`` — a target URI (its live state) or another backup — against
    backup ``ref``: the total and a report per compared target (named by the other side).

    Raises :class:`~preimage.UsageError` for targets of another kind, or a connector
    that cannot compare across places.
    """
    st = open_store(store)
    per_target: list[tuple[str, SimilarityReport]] = []
    with _pairs(st, ref, against, only) as (blobs, pairs):
        for conn_name, original, other in pairs:
            moved, mappings = _relocated(conn_name, original, other, blobs)
            report = score_snapshots(moved, other, blobs)
            report.mapped = mappings
            per_target.append((other.target if other else original.target, report))
    return merge_reports(r for _, r in per_target), per_target


@closing_own_store
def diff_backups(
    ref: str, other: str, *, store: Store | None = None, only: Sequence[str] = ()
) -> list[StateDiff]:
    """What differs between backup ``ref`` and ``other`` (a backup ID or a target URI),
    per target, after mapping the identities that differ by place."""
    st = open_store(store)
    out = []
    with _pairs(st, ref, other, only) as (blobs, pairs):
        for conn_name, original, snap in pairs:
            moved, mappings = _relocated(conn_name, original, snap, blobs)
            if snap is None:
                empty = moved.model_copy(update={"items": [], "uncaptured": []})
                d = get_connector(conn_name).diff(moved, empty)
            else:
                d = get_connector(conn_name).diff(moved, snap)
            d.mapped = mappings
            out.append(d)
    return out
