"""The schema oracle (pg_dump --schema-only beside the capture) and the gaps it found: each
kind a real schema used that came back wrong while the score said 1.0."""

from __future__ import annotations

from typing import Any

import pytest

import preimage
from preimage.connectors.postgres import oracle as pg_oracle

pytestmark = pytest.mark.postgres

# Every kind the oracle found missing or wrong, one statement each (the database's name
# is filled in).
GAPS = """
DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'gap_role')
    THEN CREATE ROLE gap_role; END IF; END $$;
CREATE EXTENSION citext;
COMMENT ON EXTENSION citext IS 'our own words';
CREATE TABLE public.items (id int PRIMARY KEY, code text UNIQUE, qty int);
ALTER TABLE public.items CLUSTER ON items_pkey;
COMMENT ON INDEX public.items_pkey IS 'the key''s index';
CREATE INDEX items_expr ON public.items ((qty * 2));
ALTER INDEX public.items_expr ALTER COLUMN 1 SET STATISTICS 321;
CREATE TABLE public.tags (id int, name text, CONSTRAINT tags_name UNIQUE (name));
ALTER TABLE public.tags CLUSTER ON tags_name;
CREATE VIEW public.item_view AS SELECT id, qty FROM public.items;
COMMENT ON COLUMN public.item_view.qty IS 'view column';
CREATE MATERIALIZED VIEW public.item_counts AS SELECT qty, count(*) AS n FROM public.items
    GROUP BY qty;
CREATE UNIQUE INDEX item_counts_qty ON public.item_counts (qty);
ALTER MATERIALIZED VIEW public.item_counts CLUSTER ON item_counts_qty;
COMMENT ON COLUMN public.item_counts.n IS 'matview column';
CREATE TYPE public.pair AS (a int, b text);
COMMENT ON COLUMN public.pair.b IS 'attribute';
ALTER ROLE gap_role IN DATABASE {db} SET work_mem = '8MB';
ALTER DATABASE {db} SET search_path = public, pg_catalog;
INSERT INTO public.items SELECT g, 'c' || g, g % 7 FROM generate_series(1, 40) g;
REFRESH MATERIALIZED VIEW public.item_counts;
"""


def _oracle_lines(report: Any) -> list[str]:
    return [f"{d.item}: {d.original or d.restored}" for d in report.differences
            if d.reason == "uncaptured (oracle)"]


@pytest.mark.parametrize("accident", ["DROP DATABASE", "DROP SCHEMA public CASCADE"])
def test_every_gap_comes_back(accident: str, db: Any, cli: Any, pg_dump: Any, check: Any,
                              store: Any) -> None:
    """CLUSTER ON a key's index (table and materialized view), index statistics, comments on a
    key's index, view and matview columns, a composite attribute and an extension, role
    settings in the database and a list search_path: pg_dump --create identical, 1.0, and
    the oracle agrees."""
    db.sql(GAPS.format(db=db.name))
    before = pg_dump(db, "--create")
    backup = preimage.capture([db.uri()], store=store)
    assert backup.snapshots[0].oracle is not None and backup.snapshots[0].oracle.ran
    if accident == "DROP DATABASE":
        db.server.psql(f"DROP DATABASE {db.name}")
    else:
        db.sql(accident)
    cli.restore(backup.id)
    check.same_dump(pg_dump(db, "--create"), before)
    score = check.full_fidelity(cli, backup.id)
    assert score["restorable"]["score"] == 1.0
    assert [n for n in score["oracles"] if "schema identical" in n], score["oracles"]


def test_changed_settings_are_set_back(db: Any, cli: Any, pg_dump: Any, check: Any,
                                       store: Any) -> None:
    """Settings changed on a kept database go back as captured: the cluster index moved,
    statistics and comments changed or added, role settings dropped."""
    db.sql(GAPS.format(db=db.name))
    before = pg_dump(db, "--create")
    backup = preimage.capture([db.uri()], store=store)
    db.sql(f"""
        ALTER TABLE public.items CLUSTER ON items_code_key;
        ALTER TABLE public.tags SET WITHOUT CLUSTER;
        ALTER INDEX public.items_expr ALTER COLUMN 1 SET STATISTICS 5;
        COMMENT ON INDEX public.items_pkey IS NULL;
        COMMENT ON INDEX public.items_code_key IS 'added later';
        COMMENT ON COLUMN public.item_view.qty IS 'changed';
        COMMENT ON COLUMN public.item_view.id IS 'added';
        COMMENT ON COLUMN public.pair.a IS 'added';
        COMMENT ON EXTENSION citext IS NULL;
        ALTER ROLE gap_role IN DATABASE {db.name} RESET ALL;
        ALTER ROLE postgres IN DATABASE {db.name} SET work_mem = '1MB';
        ALTER MATERIALIZED VIEW public.item_counts SET WITHOUT CLUSTER;
    """)
    damaged, _ = preimage.score(backup.id, store=store)
    assert damaged.value() is not None and damaged.value() < 1.0
    lines = _oracle_lines(damaged)
    assert any("CLUSTER ON items_pkey" in line for line in lines), lines
    assert any("ALTER ROLE gap_role IN DATABASE" in line for line in lines), lines
    cli.restore(backup.id)
    check.same_dump(pg_dump(db, "--create"), before)
    score = check.full_fidelity(cli, backup.id)
    assert [n for n in score["oracles"] if "schema identical" in n], score["oracles"]


def test_oracle_names_what_the_capture_does_not_bring_back(db: Any, cli: Any,
                                                           store: Any) -> None:
    """A TOAST storage option (recorded as uncaptured) is named by the oracle after a
    whole-database restore, as the line pg_dump prints for it, and keeps restorable < 1.0."""
    db.sql("CREATE TABLE public.docs (id int PRIMARY KEY, body text) "
           "WITH (toast.autovacuum_enabled = false, fillfactor = 80)")
    backup = preimage.capture([db.uri()], store=store)
    db.server.psql(f"DROP DATABASE {db.name}")
    cli.restore(backup.id)
    report, _ = preimage.score(backup.id, store=store)
    assert report.value() is not None and report.value() < 1.0
    lines = _oracle_lines(report)
    assert any("toast.autovacuum_enabled" in line and line.startswith("TABLE public.docs")
               for line in lines), lines
    assert any("not brought back" in n for n in report.oracles), report.oracles


def test_score_says_when_the_oracle_did_not_run(db: Any, store: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pg_dump on the machine, the capture still succeeds and the score says the
    schema oracle did not run, and why."""
    db.sql("CREATE TABLE public.t (id int PRIMARY KEY)")
    monkeypatch.setattr(pg_oracle, "find_pg_dump", lambda _major: None)
    backup = preimage.capture([db.uri()], store=store)
    assert backup.snapshots[0].oracle is not None
    assert not backup.snapshots[0].oracle.ran
    report, _ = preimage.score(backup.id, store=store)
    assert report.value() == 1.0
    assert any("did not run" in n and "pg_dump was not found" in n
               for n in report.oracles), report.oracles


def test_row_scope_has_no_oracle(db: Any, store: Any) -> None:
    """A row scope holds rows only: no schema dump is taken for it."""
    db.sql("CREATE TABLE public.t (id int PRIMARY KEY, v text); INSERT INTO public.t VALUES (1, 'a')")
    backup = preimage.capture([db.uri("table=public.t&where=id%3D1")], store=store)
    assert backup.snapshots[0].oracle is None


def test_normalize_drops_dump_noise_and_sorts_with_options() -> None:
    """pg_dump's own comments, blank lines and \\restrict keys go; WITH (…) options are sorted
    (quoted commas kept); each line is named by its TOC entry."""
    text = "\n".join([
        "--", "-- PostgreSQL database dump", "-- Dumped from database version 15.1",
        "\\restrict abc", "SET statement_timeout = 0;", "",
        "-- Name: docs; Type: TABLE; Schema: public; Owner: app", "--", "",
        "CREATE TABLE public.docs (", "    id integer", ")",
        "WITH (fillfactor='80', autovacuum_enabled='false');",
        "-- Name: pub; Type: PUBLICATION; Schema: -; Owner: app",
        "CREATE PUBLICATION pub WITH (publish = 'insert, update');",
        "\\unrestrict abc",
    ])
    assert pg_oracle.normalize(text) == [
        "(preamble)\tSET statement_timeout = 0;",
        "TABLE public.docs\tCREATE TABLE public.docs (",
        "TABLE public.docs\t    id integer",
        "TABLE public.docs\t)",
        "TABLE public.docs\tWITH (autovacuum_enabled='false', fillfactor='80');",
        "PUBLICATION pub\tCREATE PUBLICATION pub WITH (publish = 'insert, update');",
    ]


def test_an_index_tablespace_is_recorded_as_uncaptured(db: Any, store: Any) -> None:
    """An index in a tablespace of its own (cluster-wide, not captured) is listed as
    uncaptured, so the score stays below 1.0 and names it."""
    import shutil
    import uuid

    name = f"ts_{uuid.uuid4().hex[:8]}"
    where = db.server.base / name
    where.mkdir()
    if db.server.run_as:
        shutil.chown(where, db.server.run_as, db.server.run_as)
    db.server.psql(f"CREATE TABLESPACE {name} LOCATION '{where}'")
    try:
        db.sql(f"CREATE TABLE public.t (id int PRIMARY KEY, v text);"
               f"CREATE INDEX t_v ON public.t (v) TABLESPACE {name}")
        backup = preimage.capture([db.uri()], store=store)
        entries = [u for u in backup.snapshots[0].uncaptured if u.kind == "index tablespace"]
        assert [u.name for u in entries] == ["public.t_v"]
        report, _ = preimage.score(backup.id, store=store)
        assert report.value() is not None and report.value() < 1.0
    finally:
        db.sql("DROP INDEX IF EXISTS public.t_v")
        db.server.psql(f"DROP TABLESPACE IF EXISTS {name}")


def test_lines_the_fields_already_show_are_not_counted_twice() -> None:
    """A COMMENT or OWNER TO line whose object's comment/owner field already differs with the
    same value is taken out; each field difference takes one line; other lines stay."""
    from preimage.similarity.oracle import OracleOutcome, split_accounted
    from preimage.similarity.report import LeafDifference

    def diff(item: str, path: str, original: object, restored: object) -> LeafDifference:
        return LeafDifference(item=item, path=path, fidelity="metadata",
                              reason="changed value", original=original, restored=restored)

    outcome = OracleOutcome("note", missing=[
        "COMMENT public.TABLE t\tCOMMENT ON TABLE public.t IS 'it''s';",
        "COMMENT public.COLUMN t.q\tCOMMENT ON COLUMN public.t.q IS 'qq';",
        "COMMENT public.COLUMN t.r\tCOMMENT ON COLUMN public.t.r IS 'qq';",
        "VIEW public.v\tALTER TABLE public.v OWNER TO postgres;",
        "TABLE public.t\tALTER TABLE public.t CLUSTER ON t_pkey;",
    ], extra=["COMMENT public.TABLE t\tCOMMENT ON TABLE public.t IS 'new';"])
    taken = split_accounted(outcome, [
        diff("table public/t", "comment", "it's", "new"),
        diff("table public/t", "columns[1].comment", "qq", None),
        diff("view public/v", "owner", "postgres", "x"),
    ])
    assert taken == 4
    assert outcome.missing == [
        "COMMENT public.COLUMN t.r\tCOMMENT ON COLUMN public.t.r IS 'qq';",
        "TABLE public.t\tALTER TABLE public.t CLUSTER ON t_pkey;",
    ]
    assert outcome.extra == []


def test_a_changed_comment_and_owner_count_once(db: Any, store: Any) -> None:
    """Comments and an owner changed on a live database: the score lists each once (the
    connector's field); the oracle names only lines outside its rule (CLUSTER ON)."""
    db.sql("CREATE TABLE public.t (id int PRIMARY KEY, q int); COMMENT ON TABLE public.t IS "
           "'it''s'; COMMENT ON COLUMN public.t.q IS 'qq'; CREATE VIEW public.v AS SELECT 1 AS a;"
           "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'gap_owner') "
           "THEN CREATE ROLE gap_owner; END IF; END $$;")
    backup = preimage.capture([db.uri()], store=store)
    db.sql("COMMENT ON TABLE public.t IS 'new'; COMMENT ON COLUMN public.t.q IS NULL;"
           "ALTER VIEW public.v OWNER TO gap_owner; ALTER TABLE public.t CLUSTER ON t_pkey")
    report, _ = preimage.score(backup.id, store=store)
    lines = _oracle_lines(report)
    # CLUSTER ON is outside the rule: named although a field of the key shows it too
    assert lines == ["CONSTRAINT public.t t_pkey: ALTER TABLE public.t CLUSTER ON t_pkey;"], lines
    assert any("shown by the snapshot's own fields" in n for n in report.oracles), report.oracles
    fields = {(d.item, d.path) for d in report.differences if d.reason != "uncaptured (oracle)"}
    assert {("table public/t", "comment"), ("view public/v", "owner")} <= fields
