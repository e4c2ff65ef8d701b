"""Conformance kit for connector authors.

Subclass :class:`ConnectorContract` once per connector and provide the
fixtures; every test of the contract that applies to what the connector
declares it can do (its :class:`~preimage.Capabilities`) then runs against
your real system, the way SQLAlchemy's suite runs by a dialect's
requirements::

    class TestMyConnector(ConnectorContract):
        connector = "mything"                   # the scheme, or the connector class

        @pytest.fixture
        def target_uri(self, my_server) -> str:
            return seed(my_server)              # a target with representative state

        @pytest.fixture
        def mutate(self, my_server) -> Callable[[str], None]:
            return lambda uri: damage(uri)      # what an agent would do to it

        @pytest.fixture
        def malformed_uris(self) -> list[str]:
            return ["mything://", "mything://host/?bogus=1"]

Fixtures, by capability (a capability declared without its fixture fails the
test that needs it, naming the fixture — a declaration is a promise):

==========================  ==============================================================
``target_uri``              always: a seeded target
``mutate``                  always: ``mutate(uri)`` damages it — best when it removes,
                            changes and adds items, so every policy has work to do
``observe``                 always: ``observe(uri)`` reads the live state *without the
                            connector* (a stat walk, the server's dump tool, the API)
                            and returns ``{item: {field: value}}`` for every field the
                            connector promises to bring back; given a ``sub_scope`` URI,
                            only the items inside it.  The item :data:`TARGET_ITEM`
                            holds the target's own fields (a file's mode, a folder's
                            flags), which putting a child back may rightly rewrite
``malformed_uris``          always: URIs of this scheme that must be refused
``sub_scope``               ``sub_scopes``: an ``--only`` URI inside the target naming
                            part of what ``mutate`` damages, not all of it
``absent_uri``, ``create``  ``absent_targets`` (or not): a target that does not exist
                            yet, and ``create(uri)`` making something there
``unreachable_uri``         ``remote``: the target on a server that is not listening
``add_uncapturable``        ``audits_completeness``: ``add_uncapturable(uri)`` puts into
                            the target something the connector does not read and returns
                            a name its uncaptured entry contains
``elsewhere_uri``           ``relocates``: another target of the same kind, not
                            overlapping ``target_uri`` (another directory, database,
                            namespace, account, profile, instance), empty or absent
==========================  ==============================================================

The observer is the kit's outside oracle: the policy tests compare what the connector's
own capture says, which a connector that reads a field wrongly (every mode as 0o644, a
value left out) would agree with; the observer tests check capture → damage → restore
against the author's independent reading, field by field.  A class without an observer
fails those tests, naming the fixture, unless it says why it has none in
``observer_exempt`` (the tests are then left out, as for an undeclared capability).

What is checked: a capture is read-only and round-trips through JSON; every
field of every item has a fidelity class; the mutation shows in ``diff``; a
dry run writes nothing; ``overwrite`` brings content and metadata back at
1.0 and a second restore has nothing to do; the undo backup taken before a
restore undoes it; ``merge`` puts back what is missing and keeps what the
agent changed or added; ``refuse`` writes nothing once the target changed;
an undeclared policy is refused; a sub-scope restore writes only inside its
scope; an absent target comes back as absent (or is refused in one line);
malformed URIs are refused before anything is stored; an unreachable server
is a transient error; server-assigned differences carry a reason of their
own and the remaps a restore reports name captured items; state the capture
could not read keeps the score below 1.0; and ``undo``: a connector that
declares its undo granularity (``Capabilities.undo``, a
:class:`~preimage.Granularity`) has the mutation alone undone — captured
before and after it, as the backup layer does around a call — and every item
back as it was, compared on the leaves the undo tells changes apart by; one
that declares none has its undo refused before anything is written.  Against the
observer: ``overwrite`` brings every observed field of every item back; ``merge`` puts
back the items the damage removed and keeps the agent's; a sub-scope restore brings back
the observed items inside its scope and leaves the others as the agent left them; a dry
run and ``refuse`` leave every observed field as the damage left it.  A connector that
declares ``relocates`` restores into ``elsewhere_uri`` at 1.0 for content and metadata,
reports the identities it mapped, leaves the source as it was, and refuses the source
itself as a destination.
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

import preimage
from preimage.interface.connector import Capabilities, Connector, Granularity, capabilities_of
from preimage.interface.registry import get_connector
from preimage.restoration import Outcome
from preimage.restoration.revert import compared_leaves, reverter_for
from preimage.similarity import diff_snapshots, flatten
from preimage.similarity import score as score_snapshots
from preimage.similarity.leaf_match import SERVER_REASON
from preimage.snapshot_schemas import Record, Snapshot, load_snapshot
from preimage.store.store import Store

__all__ = ["TARGET_ITEM", "ConnectorContract", "known_failure", "observed_differences"]

_WHOLE_ITEM = ("missing item", "extra item", "not captured")


def _record_models(annotation: Any) -> Iterator[type[Record]]:
    """Every :class:`Record` model named by a type annotation (through unions, lists,
    ``Annotated`` and optionals)."""
    if isinstance(annotation, type) and issubclass(annotation, Record):
        yield annotation
        for info in annotation.model_fields.values():
            yield from _record_models(info.annotation)
        return
    for arg in typing.get_args(annotation):
        yield from _record_models(arg)


def known_failure(test: Callable[..., None], reason: str) -> Callable[..., None]:
    """``test`` (a contract test) marked as a known failure of one connector, strictly:
    the run fails the day it passes, so the mark comes off with the fix::

        class TestMine(ConnectorContract):
            test_merge_puts_back_what_is_missing_and_keeps_the_rest = known_failure(
                ConnectorContract.test_merge_puts_back_what_is_missing_and_keeps_the_rest,
                "rows of tables without a primary key are not merged yet",
            )
    """

    @functools.wraps(test)
    def run(self: Any, *args: Any, **kwargs: Any) -> None:
        test(self, *args, **kwargs)

    marked: Callable[..., None] = pytest.mark.xfail(reason=reason, strict=True)(run)
    return marked


#: The contract tests that only some capabilities call for: when each applies, and what
#: the connector declares when it does not.
_CONDITIONAL: dict[str, tuple[Callable[[Capabilities], bool], str]] = {
    "test_merge_puts_back_what_is_missing_and_keeps_the_rest": (
        lambda c: "merge" in c.policies, "does not declare the merge policy"),
    "test_refuse_writes_nothing_once_the_target_changed": (
        lambda c: "refuse" in c.policies, "does not declare the refuse policy"),
    "test_undeclared_policies_are_refused_before_writing": (
        lambda c: not {"merge", "refuse"} <= c.policies, "declares every policy"),
    "test_a_sub_scope_restore_writes_only_inside_it": (
        lambda c: c.sub_scopes, "restores whole targets only"),
    "test_merge_matches_the_observer": (
        lambda c: "merge" in c.policies, "does not declare the merge policy"),
    "test_a_sub_scope_restore_matches_the_observer": (
        lambda c: c.sub_scopes, "restores whole targets only"),
    "test_an_unreachable_server_is_a_transient_error": (
        lambda c: c.remote, "keeps its state locally"),
    "test_server_differences_are_explained": (
        lambda c: c.server_identities, "declares no server-assigned identities"),
    "test_state_it_cannot_read_is_recorded_as_uncaptured": (
        lambda c: c.audits_completeness, "does not audit its completeness"),
    "test_it_restores_into_another_target": (
        lambda c: c.relocates, "does not restore into another target"),
}


#: The tests that check the connector against the author's observer (``observe``).
_OBSERVED = (
    "test_overwrite_matches_the_observer",
    "test_merge_matches_the_observer",
    "test_a_sub_scope_restore_matches_the_observer",
    "test_dry_run_and_refuse_leave_the_observed_state",
)

Observed = Mapping[str, Mapping[str, Any]]
#: The observer's item for the target itself: checked by overwrite, dry run and refuse;
#: a merge or sub-scope restore that puts a child back may rightly rewrite it.
TARGET_ITEM = "(target)"


def observed_differences(want: Observed, got: Observed, keys: Iterable[str] | None = None
                         ) -> list[str]:
    """Every ``item field: want → got`` that differs (of ``keys`` only, when given), an
    item one side lacks as ``item: (absent)``."""
    out = []
    for item in sorted(set(want) | set(got) if keys is None else set(keys)):
        if item not in got or item not in want:
            side = "missing" if item not in got else "extra"
            if item in want or item in got:
                out.append(f"{item}: {side}")
            continue
        for name in sorted(set(want[item]) | set(got[item])):
            a, b = want[item].get(name, "(absent)"), got[item].get(name, "(absent)")
            if a != b or type(a) is not type(b):
                out.append(f"{item} {name}: {a!r} → {b!r}")
    return out


class ConnectorContract:
    """Tests every connector must pass; subclass it and provide the fixtures.

    Name the connector under test in ``connector`` (its URI scheme, or the connector class
    itself before it is registered) and the tests its capabilities do not call for are
    left out of the class, so they are neither collected nor reported as skipped.  Left
    unnamed, the kit reads the capabilities from ``target_uri`` and skips them instead.
    """

    connector: ClassVar[str | type | None] = None
    #: Why this connector's contract has no independent observer yet (empty: it has one).
    observer_exempt: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.observer_exempt:
            for name in _OBSERVED:
                setattr(cls, name, None)
        if cls.connector is None:
            return
        named = cls.connector
        caps = capabilities_of(get_connector(named) if isinstance(named, str) else named)
        for name, (applies, _) in _CONDITIONAL.items():
            if not applies(caps):
                setattr(cls, name, None)  # not a test of this class

    # ------------------------------------------------------------ fixtures
    @pytest.fixture
    def target_uri(self) -> str:
        """A target URI seeded with representative state (override)."""
        raise NotImplementedError("override the target_uri fixture")

    @pytest.fixture
    def mutate(self) -> Callable[[str], None]:
        """A callable that damages the target as an agent would (override)."""
        raise NotImplementedError("override the mutate fixture")

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        """A private backup store for the test."""
        st = Store(tmp_path / "preimage-home")
        yield st
        st.close()

    # ------------------------------------------------------------ helpers
    @staticmethod
    def _connector(uri: str) -> Connector:
        return get_connector(preimage.Target.parse(uri).scheme)

    @classmethod
    def _caps(cls, uri: str) -> Capabilities:
        return capabilities_of(cls._connector(uri))

    def _applicable(self, uri: str, test: str) -> Capabilities:
        """The capabilities of ``uri``'s connector; skips ``test`` when they do not call
        for it (only reached when the class does not name its connector)."""
        caps = self._caps(uri)
        applies, declares = _CONDITIONAL[test]
        if not applies(caps):
            pytest.skip(f"the connector {declares}")
        return caps

    @staticmethod
    def _live(uri: str, store: Store) -> Snapshot:
        # Into the test's own store, so that blob-backed items (table rows)
        # can be expanded by the diff and score that follow.
        target = preimage.Target.parse(uri)
        return get_connector(target.scheme).capture(target, store.blobs)

    @staticmethod
    def _needs(request: pytest.FixtureRequest, name: str, declared: str) -> Any:
        """The fixture ``name``, which the declared capability ``declared`` promises."""
        try:
            return request.getfixturevalue(name)
        except pytest.FixtureLookupError:
            pytest.fail(f"the connector declares {declared}: provide the {name!r} fixture")

    def _observer(self, request: pytest.FixtureRequest) -> Callable[[str], Observed]:
        """The author's ``observe`` fixture (every contract needs one, or an exemption)."""
        try:
            observe: Callable[[str], Observed] = request.getfixturevalue("observe")
        except pytest.FixtureLookupError:
            pytest.fail("provide the 'observe' fixture: a reading of the live state that "
                        "does not use the connector (or say why not in observer_exempt)")
        return observe

    @staticmethod
    def _changed(before: Snapshot, after: Snapshot, store: Store) -> set[str]:
        """Natural keys of the items that differ between two snapshots."""
        return {c.key for c in diff_snapshots(before, after, store.blobs).changes}

    @staticmethod
    def _reverted(
        original: Snapshot, damaged: Snapshot, after: Snapshot, store: Store, keys: set[str]
    ) -> list[str]:
        """Content fields of the items ``keys`` that the damage changed and that are back
        at their captured value in ``after``.  Metadata is left out (putting a missing
        child back may rightly set its directory's times to the captured ones), and so
        are derived fields (a folder's message count comes back with its messages)."""
        o, _ = flatten(original.scoring_items(store.blobs))
        d, _ = flatten(damaged.scoring_items(store.blobs))
        a, _ = flatten(after.scoring_items(store.blobs))
        return sorted(
            f"{key} {path}" for (key, path), leaf in d.items()
            if key in keys and leaf.fidelity == "content" and not leaf.derived
            and (key, path) in o and o[(key, path)].value != leaf.value
            and (key, path) in a and a[(key, path)].value == o[(key, path)].value
        )

    def _damaged_backup(
        self, uri: str, mutate: Callable[[str], None], store: Store
    ) -> tuple[preimage.Backup, Snapshot]:
        """A backup of ``uri``, then the damage; returns the backup and the damaged state."""
        backup = preimage.capture([uri], store=store)
        mutate(uri)
        return backup, self._live(uri, store)

    # ------------------------------------------------------------ always
    def test_capabilities_are_consistent(self, target_uri: str) -> None:
        """The declaration holds together: overwrite is always honoured, and a connector
        with a reverter of its own declares how finely it undoes a call."""
        caps = self._caps(target_uri)
        assert "overwrite" in caps.policies
        assert caps.policies <= {"overwrite", "merge", "refuse"}
        conn = self._connector(target_uri)
        assert getattr(conn, "reverter", None) is None or caps.undo is not None, (
            "a connector with a reverter declares Capabilities.undo (a Granularity)")

    def test_every_schema_field_has_a_fidelity_class(self, target_uri: str, store: Store) -> None:
        """Every field of every item — in the schema and in what scoring expands — is
        declared content, metadata, access, server or key (or is a model that declares its own)."""
        conn = self._connector(target_uri)
        models = set(_record_models(conn.snapshot_type.model_fields["items"].annotation))
        snap = preimage.capture([target_uri], store=store).snapshots[0]
        for item in snap.scoring_items(store.blobs):
            models |= set(_record_models(type(item)))
        undeclared = [
            f"{model.__name__}.{name}"
            for model in sorted(models, key=lambda m: m.__name__)
            for name, info in model.model_fields.items()
            if model.field_class(name) is None and not any(_record_models(info.annotation))
        ]
        assert undeclared == [], "declare a fidelity class for every field"

    def test_snapshot_round_trips_through_json(self, target_uri: str, store: Store) -> None:
        """A snapshot written as JSON and read back is the same snapshot."""
        snap = preimage.capture([target_uri], store=store).snapshots[0]
        conn = self._connector(target_uri)
        again = load_snapshot(json.loads(snap.model_dump_json()), conn.snapshot_type)
        assert again == snap

    def test_capture_changes_nothing(self, target_uri: str, store: Store) -> None:
        """Capturing twice in a row sees the same state: capture is read-only."""
        first = preimage.capture([target_uri], store=store).snapshots[0]
        second = preimage.capture([target_uri], store=store).snapshots[0]
        assert diff_snapshots(first, second, store.blobs).empty

    def test_malformed_uris_are_refused_before_anything_is_stored(
        self, request: pytest.FixtureRequest, store: Store
    ) -> None:
        """Each malformed URI is refused with one line naming it; no backup is recorded."""
        uris = self._needs(request, "malformed_uris", "a URI grammar")
        assert uris, "give at least one malformed URI"
        for uri in uris:
            with pytest.raises(preimage.UsageError) as info:
                preimage.capture([uri], store=store)
            assert len(str(info.value).splitlines()) == 1, str(info.value)
        assert [b for b in store.catalog.list_backups(None) if b.status == "complete"] == []

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
        backup, damaged = self._damaged_backup(target_uri, mutate, store)
        result = preimage.restore(backup.id, store=store, dry_run=True)
        assert result.dry_run
        assert any(r.changes for r in result.reports)
        assert diff_snapshots(damaged, self._live(target_uri, store), store.blobs).empty

    # ------------------------------------------------------------ policies
    def test_overwrite_brings_content_and_metadata_back(
        self, target_uri: str, mutate: Callable[[str], None], store: Store
    ) -> None:
        """After mutate + restore, content and metadata score 1.0 and nothing extra remains."""
        backup = preimage.capture([target_uri], store=store)
        mutate(target_uri)
        result = preimage.restore(backup.id, store=store)
        assert result.ok
        total, _ = preimage.score(backup.id, store=store, remaps=result.remaps)
        assert total.classes["content"].score in (1.0, None), total.differences[:10]
        assert total.classes["metadata"].score in (1.0, None), total.differences[:10]
        assert total.restorable.score == 1.0, total.differences[:10]

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
        backup, damaged = self._damaged_backup(target_uri, mutate, store)
        result = preimage.restore(backup.id, store=store)
        assert result.undo_backup_id
        preimage.restore(result.undo_backup_id, store=store)
        report = score_snapshots(damaged, self._live(target_uri, store), store.blobs)
        assert report.restorable.score == 1.0, report.differences[:10]

    def test_merge_puts_back_what_is_missing_and_keeps_the_rest(
        self, target_uri: str, mutate: Callable[[str], None], store: Store
    ) -> None:
        """merge re-creates the items the mutation removed, and leaves the content the
        agent changed or added as the agent left it."""
        self._applicable(target_uri, "test_merge_puts_back_what_is_missing_and_keeps_the_rest")
        backup, damaged = self._damaged_backup(target_uri, mutate, store)
        original = backup.snapshots[0]
        preimage.restore(backup.id, store=store, conflict="merge")
        after = self._live(target_uri, store)
        changes = diff_snapshots(original, damaged, store.blobs).changes
        removed = {c.key for c in changes if c.change == "removed"}
        kept = {c.key for c in changes if c.change in ("changed", "added")}
        assert removed | kept, "mutate should remove, change or add something"
        back = diff_snapshots(original, after, store.blobs)
        still_missing = {c.key for c in back.changes if c.change == "removed"}
        assert not removed & still_missing, f"merge did not put back: {sorted(removed & still_missing)}"
        reverted = self._reverted(original, damaged, after, store, kept)
        assert reverted == [], f"merge wrote the captured value over what the agent changed: {reverted}"

    def test_refuse_writes_nothing_once_the_target_changed(
        self, target_uri: str, mutate: Callable[[str], None], store: Store
    ) -> None:
        """refuse stops with RestoreConflictError and leaves the live state as it was."""
        self._applicable(target_uri, "test_refuse_writes_nothing_once_the_target_changed")
        backup, damaged = self._damaged_backup(target_uri, mutate, store)
        with pytest.raises(preimage.RestoreConflictError):
            preimage.restore(backup.id, store=store, conflict="refuse")
        assert diff_snapshots(damaged, self._live(target_uri, store), store.blobs).empty

    def test_undeclared_policies_are_refused_before_writing(
        self, target_uri: str, mutate: Callable[[str], None], store: Store
    ) -> None:
        """A policy the connector does not declare fails before anything is written."""
        caps = self._applicable(target_uri, "test_undeclared_policies_are_refused_before_writing")
        missing = {"merge", "refuse"} - set(caps.policies)
        backup, damaged = self._damaged_backup(target_uri, mutate, store)
        for policy in sorted(missing):
            with pytest.raises(preimage.PreimageError):
                preimage.restore(backup.id, store=store, conflict=policy)
        assert diff_snapshots(damaged, self._live(target_uri, store), store.blobs).empty

    # ------------------------------------------------------------ scope and absence
    def test_a_sub_scope_restore_writes_only_inside_it(
        self, target_uri: str, mutate: Callable[[str], None], store: Store,
        request: pytest.FixtureRequest,
    ) -> None:
        """restore --only brings back damage inside the scope and leaves the rest as
        the agent left it; nothing the mutation did not touch is written."""
        self._applicable(target_uri, "test_a_sub_scope_restore_writes_only_inside_it")
        only = self._needs(request, "sub_scope", "sub_scopes")
        backup, damaged = self._damaged_backup(target_uri, mutate, store)
        original = backup.snapshots[0]
        preimage.restore(backup.id, store=store, only=[only])
        after = self._live(target_uri, store)
        written = self._changed(damaged, after, store)
        assert written, "nothing inside the scope came back"
        assert written <= self._changed(damaged, original, store), "wrote what was not damaged"
        assert self._changed(original, after, store), "the restore went outside its scope"

    def test_an_absent_target_comes_back_absent(
        self, store: Store, request: pytest.FixtureRequest, target_uri: str
    ) -> None:
        """A target that did not exist captures as absent; restoring that backup
        removes what appeared since.  A connector that cannot capture absence refuses
        it in one line instead."""
        declared = self._caps(target_uri).absent_targets
        absent = self._needs(request, "absent_uri", "absent_targets (or not)")
        if not declared:
            with pytest.raises(preimage.PreimageError) as info:
                preimage.capture([absent], store=store)
            assert len(str(info.value).splitlines()) == 1
            return
        create = self._needs(request, "create", "absent_targets")
        backup = preimage.capture([absent], store=store)
        create(absent)
        assert any(not d.empty for d in preimage.diff(backup.id, store=store))
        assert preimage.restore(backup.id, store=store).ok
        assert all(d.empty for d in preimage.diff(backup.id, store=store))

    # ------------------------------------------------------------ errors and identities
    def test_an_unreachable_server_is_a_transient_error(
        self, target_uri: str, store: Store, request: pytest.FixtureRequest
    ) -> None:
        """Capturing from a server that is not there raises TransientConnectorError (worth
        retrying) in one line, and no complete backup is recorded."""
        self._applicable(target_uri, "test_an_unreachable_server_is_a_transient_error")
        uri = self._needs(request, "unreachable_uri", "remote")
        with pytest.raises(preimage.TransientConnectorError) as info:
            preimage.capture([uri], store=store)
        assert len(str(info.value).splitlines()) == 1, str(info.value)
        assert [b for b in store.catalog.list_backups(None) if b.status == "complete"] == []

    def test_server_differences_are_explained(
        self, target_uri: str, mutate: Callable[[str], None], store: Store
    ) -> None:
        """After a restore every server-assigned difference says why in the system's
        own terms, and every remap the restore reports names a captured item."""
        self._applicable(target_uri, "test_server_differences_are_explained")
        backup = preimage.capture([target_uri], store=store)
        mutate(target_uri)
        result = preimage.restore(backup.id, store=store)
        items = list(backup.snapshots[0].scoring_items(store.blobs))
        names = {i.natural_key() for i in items} | {i.label() for i in items}
        unknown = [m.key for m in result.remaps if m.key not in names]
        assert unknown == [], "a remap must name a captured item by natural key or label"
        total, _ = preimage.score(backup.id, store=store, remaps=result.remaps)
        generic = [
            f"{d.item} {d.path}" for d in total.differences
            if d.fidelity == "server" and d.reason not in _WHOLE_ITEM
            and (not d.note or d.note.startswith(SERVER_REASON))
        ]
        assert generic == [], f"declare reason= on these server fields: {generic}"

    def test_state_it_cannot_read_is_recorded_as_uncaptured(
        self, target_uri: str, store: Store, request: pytest.FixtureRequest
    ) -> None:
        """What the capture cannot read is listed as uncaptured: the score stays below 1.0
        and diff names it."""
        self._applicable(target_uri, "test_state_it_cannot_read_is_recorded_as_uncaptured")
        add_uncapturable = self._needs(request, "add_uncapturable", "audits_completeness")
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
        from preimage.engine.undo import capture_after

        conn = get_connector(preimage.Target.parse(target_uri).scheme)
        pre = preimage.capture([target_uri], store=store, kind="layer", session="contract")
        mutate(target_uri)
        capture_after(pre.id, store=store)
        granularity = capabilities_of(conn).undo
        if granularity is None:
            damaged = self._live(target_uri, store)
            with pytest.raises(preimage.UsageError, match="restores whole targets"):
                preimage.undo(pre.id, store=store)
            assert diff_snapshots(damaged, self._live(target_uri, store), store.blobs).empty
            return
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

    # ------------------------------------------------------------ against the observer
    def _observed_damage(
        self, uri: str, mutate: Callable[[str], None], store: Store,
        observe: Callable[[str], Observed],
    ) -> tuple[preimage.Backup, Observed, Observed]:
        """Observe, capture, damage, observe: the backup and both observations."""
        before = observe(uri)
        assert before, "the observer saw nothing in the seeded target"
        backup = preimage.capture([uri], store=store)
        mutate(uri)
        damaged = observe(uri)
        assert observed_differences(before, damaged), "the observer does not see the damage"
        return backup, before, damaged

    def test_overwrite_matches_the_observer(
        self, target_uri: str, mutate: Callable[[str], None], store: Store,
        request: pytest.FixtureRequest,
    ) -> None:
        """Read by the author's observer, not the connector: after capture → damage →
        overwrite, every observed field of every item is as it was before the damage."""
        observe = self._observer(request)
        backup, before, _ = self._observed_damage(target_uri, mutate, store, observe)
        preimage.restore(backup.id, store=store)
        wrong = observed_differences(before, observe(target_uri))
        assert wrong == [], f"the observer sees these not brought back: {wrong[:10]}"

    def test_merge_matches_the_observer(
        self, target_uri: str, mutate: Callable[[str], None], store: Store,
        request: pytest.FixtureRequest,
    ) -> None:
        """Read by the observer: merge brings back every item the damage removed, as it
        was, and leaves every item the agent changed or added as the agent left it."""
        self._applicable(target_uri, "test_merge_puts_back_what_is_missing_and_keeps_the_rest")
        observe = self._observer(request)
        backup, before, damaged = self._observed_damage(target_uri, mutate, store, observe)
        preimage.restore(backup.id, store=store, conflict="merge")
        after = observe(target_uri)
        removed = set(before) - set(damaged)
        touched = {k for k in damaged if damaged[k] != before.get(k)} - {TARGET_ITEM}
        wrong = observed_differences(before, after, removed)
        assert wrong == [], f"merge did not put these back: {wrong[:10]}"
        overwritten = observed_differences(damaged, after, touched)
        assert overwritten == [], f"merge wrote over what the agent changed: {overwritten[:10]}"

    def test_a_sub_scope_restore_matches_the_observer(
        self, target_uri: str, mutate: Callable[[str], None], store: Store,
        request: pytest.FixtureRequest,
    ) -> None:
        """Read by the observer: restore --only brings back the items inside the scope and
        leaves every other item as the agent left it."""
        self._applicable(target_uri, "test_a_sub_scope_restore_writes_only_inside_it")
        only = self._needs(request, "sub_scope", "sub_scopes")
        observe = self._observer(request)
        inside = set(observe(only))
        backup, before, damaged = self._observed_damage(target_uri, mutate, store, observe)
        inside |= set(observe(only))
        assert inside, "the observer sees nothing inside the sub-scope"
        preimage.restore(backup.id, store=store, only=[only])
        after = observe(target_uri)
        wrong = observed_differences(before, after, inside)
        assert wrong == [], f"not brought back inside the scope: {wrong[:10]}"
        outside = (set(before) | set(damaged)) - inside - {TARGET_ITEM}
        written = observed_differences(damaged, after, outside)
        assert written == [], f"written outside the scope: {written[:10]}"

    def test_dry_run_and_refuse_leave_the_observed_state(
        self, target_uri: str, mutate: Callable[[str], None], store: Store,
        request: pytest.FixtureRequest,
    ) -> None:
        """Read by the observer: a dry run (and refuse, when declared) writes nothing."""
        observe = self._observer(request)
        backup, _, damaged = self._observed_damage(target_uri, mutate, store, observe)
        preimage.restore(backup.id, store=store, dry_run=True)
        assert observed_differences(damaged, observe(target_uri)) == []
        if "refuse" in self._caps(target_uri).policies:
            with pytest.raises(preimage.RestoreConflictError):
                preimage.restore(backup.id, store=store, conflict="refuse")
            assert observed_differences(damaged, observe(target_uri)) == []

    # ------------------------------------------------------------ elsewhere
    def test_it_restores_into_another_target(
        self, target_uri: str, store: Store, request: pytest.FixtureRequest
    ) -> None:
        """Restored into another target of its kind, the state scores 1.0 for content and
        metadata there, the identities mapped on the way are reported, the source is left
        as it was, and the source itself is refused as a destination."""
        self._applicable(target_uri, "test_it_restores_into_another_target")
        elsewhere = self._needs(request, "elsewhere_uri", "relocates")
        backup = preimage.capture([target_uri], store=store)
        with pytest.raises(preimage.UsageError):
            preimage.restore_to(backup.id, target_uri, store=store)
        result = preimage.restore_to(backup.id, elsewhere, store=store)
        assert result.ok, [r.notes for r in result.reports]
        [(moved, mappings)] = result.mappings.items()
        assert mappings, "no identity was reported as mapped"
        total, _ = preimage.score_against(backup.id, moved, store=store)
        for cls in ("content", "metadata"):
            score = total.score_of(cls).score
            assert score in (None, 1.0), [d for d in total.differences if d.fidelity == cls]
        assert {m.what for m in mappings} <= {m.what for m in total.mapped}
        assert all(d.empty for d in preimage.diff(backup.id, store=store)), "the source changed"
