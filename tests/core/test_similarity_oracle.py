"""The schema oracle in the meter (preimage.similarity.oracle): dump lines compared as a
multiset, counted as metadata leaves, named in the report; an oracle that did not run
counts nothing and says why."""

from __future__ import annotations

from pathlib import Path

from preimage.similarity import score
from preimage.similarity.render import report_lines
from preimage.snapshot_schemas.oracle import SchemaOracle
from preimage.snapshot_schemas.postgres import PostgresSnapshot
from preimage.store.store import Store

LINES = ["TABLE public.t\tCREATE TABLE public.t (", "TABLE public.t\t    id integer", "TABLE public.t\t);",
         "CONSTRAINT public.t t_pkey\tALTER TABLE public.t CLUSTER ON t_pkey;"]


def _snapshot(store: Store, lines: list[str], tool: str = "pg_dump 15.18") -> PostgresSnapshot:
    digest = store.blobs.put_bytes("".join(line + "\n" for line in lines).encode())
    oracle = SchemaOracle(tool=tool, ran=True, digest=digest, lines=len(lines))
    return PostgresSnapshot(target="postgresql://h/db", database="db", oracle=oracle)


def test_identical_dumps_count_nothing_and_say_so(tmp_path: Path) -> None:
    """The same dump on both sides: no difference, and the report says the schema is identical."""
    store = Store(tmp_path / "home")
    report = score(_snapshot(store, LINES), _snapshot(store, LINES), store.blobs)
    assert report.differences == []
    assert report.oracles == ["pg_dump 15.18: schema identical (4 lines)"]
    store.close()


def test_a_missing_line_lowers_restorable_and_is_named(tmp_path: Path) -> None:
    """A line only the backup's dump has is an unmatched metadata leaf, named with its entry;
    a line only the live dump has is an extra one."""
    store = Store(tmp_path / "home")
    live = [*LINES[:3], "TABLE public.t\tALTER TABLE public.t SET WITHOUT CLUSTER;"]
    report = score(_snapshot(store, LINES), _snapshot(store, live), store.blobs)
    assert report.restorable.score is not None and report.restorable.score < 1.0
    assert report.classes["metadata"].original == 1 and report.classes["metadata"].extra == 1
    found = {(d.item, d.original, d.restored) for d in report.differences}
    assert found == {
        ("CONSTRAINT public.t t_pkey", "ALTER TABLE public.t CLUSTER ON t_pkey;", None),
        ("TABLE public.t", None, "ALTER TABLE public.t SET WITHOUT CLUSTER;"),
    }
    lines = report_lines(report)
    assert any("backup: ALTER TABLE public.t CLUSTER ON t_pkey;" in line for line in lines)
    assert "pg_dump 15.18: 1 schema line(s) not brought back, 1 not in the backup" in lines
    store.close()


def test_repeated_lines_are_counted_as_a_multiset(tmp_path: Path) -> None:
    """Two equal lines in the backup and one live: one is missing (order never matters)."""
    store = Store(tmp_path / "home")
    before = [*LINES, LINES[1]]
    report = score(_snapshot(store, before), _snapshot(store, list(reversed(LINES))), store.blobs)
    assert [(d.item, d.original) for d in report.differences] == [
        ("TABLE public.t", "    id integer")]
    store.close()


def test_an_oracle_that_did_not_run_counts_nothing_and_says_why(tmp_path: Path) -> None:
    """No dump at capture, none live, or two versions of the tool: nothing is counted, the
    report says why."""
    store = Store(tmp_path / "home")
    ran = _snapshot(store, LINES)
    missing = PostgresSnapshot(target="postgresql://h/db", database="db", oracle=SchemaOracle(
        tool="pg_dump", reason="pg_dump was not found on this machine"))
    for original, live, said in (
        (missing, ran, "did not run at capture: pg_dump was not found"),
        (ran, missing, "did not run on the live state: pg_dump was not found"),
        (ran, _snapshot(store, LINES, tool="pg_dump 16.4"), "not compared"),
    ):
        report = score(original, live, store.blobs)
        assert report.differences == [] and report.restorable.score is None
        assert len(report.oracles) == 1 and said in report.oracles[0], report.oracles
    store.close()
