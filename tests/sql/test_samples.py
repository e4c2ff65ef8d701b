"""Real public sample databases (fixtures/samples/), loaded from their published SQL:
whole-database and row-scope accidents undone with pg_dump byte-identical and every
sequence where it was."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

import preimage

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

# sample → (what destroys the whole database, a row scope: table, predicate)
CASES = {
    "pagila": ("DROP SCHEMA public CASCADE", ("public.payment", "amount < 2.99")),
    "chinook": (None, ("public.invoice_line", "unit_price > 0.99")),
    "northwind": (None, ("public.order_details", "discount > 0")),
}


@pytest.mark.parametrize("sample", sorted(CASES))
def test_whole_database_comes_back(
    sample: str, sample_db: Any, cli: Any, pg_dump: Any, check: Any, store: Any
) -> None:
    """The database is destroyed (DROP SCHEMA … CASCADE or DROP DATABASE) and restored:
    pg_dump --create is identical, sequences are where they were, content and metadata 1.0."""
    db = sample_db(sample)
    before, seqs = pg_dump(db, "--create"), check.sequences(db)
    captured = preimage.capture([db.uri()], store=store)
    assert captured.snapshots[0].uncaptured == []  # every object of the sample is modelled
    backup = captured.id
    destroy = CASES[sample][0]
    if destroy:
        db.sql(destroy)
    else:
        db.server.psql(f"DROP DATABASE {db.name}")
    cli.restore(backup)
    check.full_fidelity(cli, backup)
    check.same_dump(pg_dump(db, "--create"), before)
    assert check.sequences(db) == seqs


@pytest.mark.parametrize("sample", sorted(CASES))
def test_row_scope_delete_comes_back(
    sample: str, sample_db: Any, cli: Any, pg_dump: Any, check: Any
) -> None:
    """A DELETE … WHERE undone from a before-image of the rows it touched: the rows are back
    at their places (pg_dump identical), rows outside the predicate untouched."""
    db = sample_db(sample)
    table, predicate = CASES[sample][1]
    before, seqs = pg_dump(db), check.sequences(db)
    count = db.sql(f"SELECT count(*) FROM {table} WHERE {predicate}").strip()
    assert int(count) > 0
    backup = cli.capture(db.uri(f"table={table}&where={quote(predicate)}"))
    db.sql(f"DELETE FROM {table} WHERE {predicate}")
    report = cli.restore(backup)
    assert not any(i["outcome"] == "failed" for r in report["reports"] for i in r["items"])
    assert db.sql(f"SELECT count(*) FROM {table} WHERE {predicate}").strip() == count
    check.full_fidelity(cli, backup)
    check.same_dump(pg_dump(db), before)
    assert check.sequences(db) == seqs
