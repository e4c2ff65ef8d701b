"""Conformance kit for connector authors.

Subclass :class:`ConnectorContract` once per connector and provide two
fixtures; every test of the contract then runs against your real system::

    class TestMyConnector(ConnectorContract):
        @pytest.fixture
        def target_uri(self, my_server) -> str:
            return seed(my_server)             # a target with representative state

        @pytest.fixture
        def mutate(self, my_server) -> Callable[[str], None]:
            return lambda uri: damage(uri)     # what an agent would do to it

The contract: capture → JSON round trip; a capture changes nothing; the
mutation shows in ``diff``; a dry-run restore changes nothing; a restore
brings ``content`` and ``metadata`` back at 1.0; a second restore has
nothing to do; the undo backup taken before the restore brings the mutated
state back; the completeness audit: state in scope that the connector
does not model is recorded as uncaptured, so ``score`` stays below 1.0 and
``diff`` names it (provide ``add_uncapturable`` to run it); and ``undo``: a
connector that writes single items declares its granularity (``reverter`` on
the class, with a :class:`~preimage.restoration.revert.Granularity`), and the
undo of the mutation alone — captured before and after it, as the backup
layer does around a call — brings back every item as it was, compared on the
leaves the undo tells changes apart by; one that restores only whole targets
has its undo refused before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import preimage
from preimage._registry import get_connector
from preimage._store import Store
from preimage.restoration import Outcome
from preimage.restoration.revert import Granularity, compared_leaves, reverter_for
from preimage.similarity import diff_snapshots
from preimage.similarity import score as score_snapshots
from preimage.snapshot_schemas import Snapshot, load_snapshot

__all__ = ["ConnectorContract"]


class ConnectorContract:
    """Tests every connector must pass; subclass it and provide the fixtures."""

    @pytest.fixture
    def target_uri(self) -> str:
        """A target URI seeded with representative state (override)."""
        raise NotImplementedError("override the target_uri fixture")

    @pytest.fixture
    def mutate(self) -> Callable[[str], None]:
        """A callable that damages the target as an agent would (override)."""
        raise NotImplementedError("override the mutate fixture")

    @pytest.fixture
    def add_uncapturable(self) -> Callable[[str], str] | None:
        """A callable that puts into the target something the connector does not model
        and returns a name its uncaptured entry contains (override; ``None`` skips the
        audit test for a connector that models everything in its scope)."""
        return None

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        """A private backup store for the test."""
        st = Store(tmp_path / "preimage-home")
        yield st
        st.close()

    # ------------------------------------------------------------ helpers
    @staticmethod
    def _live(uri: str, store: Store) -> Snapshot:
        # Into the test's own store, so that blob-backed items (table rows)
        # can be expanded by the diff and score that follow.
        return get_connector(preimage.Target.parse(uri).scheme).capture(
            preimage.Target.parse(uri), store.blobs
        )

    # ------------------------------------------------------------ the contract
    def test_snapshot_round_trips_through_json(self, target_uri: str, store: Store) -> None:
        """A snapshot written as JSON and read back is the same snapshot."""
        backup = preimage.capture([target_uri], store=store)
        snap = backup.snapshots[0]
        conn = get_connector(preimage.Target.parse(target_uri).scheme)
        again = load_snapshot(json.loads(snap.model_dump_json()), conn.snapshot_type)
        assert again == snap

    def test_capture_changes_nothing(self, target_uri: str, store: Store) -> None:
        """Capturing twice in a row sees the same state: capture is read-only."""
        first = preimage.capture([target_uri], store=store).snapshots[0]
        second = preimage.capture([target_uri], store=store).snapshots[0]
        assert diff_snapshots(first, second, store.blobs).empty

    def test_mutation_shows_in_diff(
        self, target_uri: str, mutate: Callable[[str], None], store: Store
    ) -> None:
        """After the mutation, diff against the backup is not empty."""
        backup = preimage.capture([target_uri], store=store)
        mutate(target_uri)
        diffs = preimage.diff(backup.id, store=store)
        assert any(not d.empty for d in diffs)

    def test_dry_run_changes_nothing(
        self, target_uri: str, mutate: Callable[[str], None], store: Store
    ) -> None:
        """A dry-run restore plans changes but leaves the live state as it was."""
        backup = preimage.capture([target_uri], store=store)
        mutate(target_uri)
        damaged = self._live(target_uri, store)
        result = preimage.restore(backup.id, store=store, dry_run=True)
        assert result.dry_run
        assert any(r.changes for r in result.reports)
        assert diff_snapshots(damaged, self._live(target_uri, store), store.blobs).empty

    def test_restore_brings_content_and_metadata_back(
        self, target_uri: str, mutate: Callable[[str], None], store: Store
    ) -> None:
        """After mutate + restore, content and metadata score 1.0."""
        backup = preimage.capture([target_uri], store=store)
        mutate(target_uri)
        result = preimage.restore(backup.id, store=store)
        assert result.ok
        total, _ = preimage.score(backup.id, store=store)
        assert total.classes["content"].score == 1.0, total.differences[:10]
        assert total.classes["metadata"].score == 1.0, total.differences[:10]

    def test_second_restore_has_nothing_to_do(
        self, target_uri: str, mutate: Callable[[str], None], store: Store
    ) -> None:
        """Restoring an already restored target writes nothing."""
        backup = preimage.capture([target_uri], store=store)
        mutate(target_uri)
        preimage.restore(backup.id, store=store)
        again = preimage.restore(backup.id, store=store, dry_run=True)
        planned = [i for r in again.reports for i in r.items if i.outcome is Outcome.PLANNED]
        assert planned == []

    def test_undo_backup_brings_the_mutated_state_back(
        self, target_uri: str, mutate: Callable[[str], None], store: Store
    ) -> None:
        """The backup taken before a restore undoes that restore."""
        backup = preimage.capture([target_uri], store=store)
        mutate(target_uri)
        damaged = self._live(target_uri, store)
        result = preimage.restore(backup.id, store=store)
        assert result.undo_backup_id
        preimage.restore(result.undo_backup_id, store=store)
        report = score_snapshots(damaged, self._live(target_uri, store), store.blobs)
        assert report.restorable.score == 1.0, report.differences[:10]

    def test_state_it_cannot_read_is_recorded_as_uncaptured(
        self, target_uri: str, add_uncapturable: Callable[[str], str] | None, store: Store
    ) -> None:
        """What the capture cannot read is listed as uncaptured: score below 1.0, diff names it."""
        if add_uncapturable is None:
            pytest.skip("the connector declares no state it cannot read (add_uncapturable)")
        name = add_uncapturable(target_uri)
        backup = preimage.capture([target_uri], store=store)
        entries = [u for s in backup.snapshots for u in s.uncaptured]
        assert any(name in u.name for u in entries), entries
        total, _ = preimage.score(backup.id, store=store)
        assert total.overall.score is not None and total.overall.score < 1.0
        diffs = preimage.diff(backup.id, store=store)
        assert any(name in line for d in diffs for line in d.uncaptured)

    def test_undo_of_the_mutation_alone_brings_every_item_back(
        self, target_uri: str, mutate: Callable[[str], None], store: Store
    ) -> None:
        """Captured before and after the mutation (as the backup layer does around a
        call), the mutation is undone item by item: every item is back on the leaves an
        undo compares, with no conflict; a connector without item writes is refused
        before anything is written."""
        from preimage._undo import capture_after

        conn = get_connector(preimage.Target.parse(target_uri).scheme)
        pre = preimage.capture([target_uri], store=store, kind="layer", session="contract")
        mutate(target_uri)
        capture_after(pre.id, store=store)
        reverter = getattr(conn, "reverter", None)
        if reverter is None:
            damaged = self._live(target_uri, store)
            with pytest.raises(preimage.UsageError, match="restores whole targets"):
                preimage.undo(pre.id, store=store)
            assert diff_snapshots(damaged, self._live(target_uri, store), store.blobs).empty
            return
        granularity = reverter.granularity
        assert isinstance(granularity, Granularity) and granularity.item
        result = preimage.undo(pre.id, store=store)
        assert result.ok and result.conflicts == 0, [p.to_dict() for p in result.plans]
        before = pre.snapshots[0]
        rv = reverter_for(conn, before)
        want = compared_leaves(before, store.blobs, rv)
        got = compared_leaves(self._live(target_uri, store), store.blobs, rv)
        assert got.keys() == want.keys(), ("missing", sorted(want.keys() - got.keys())[:10],
                                           "extra", sorted(got.keys() - want.keys())[:10])
        wrong = [k for k in want if got[k] != want[k]]
        assert not wrong, [(k, sorted(set(want[k].items()) ^ set(got[k].items()))[:4])
                           for k in wrong[:3]]
