"""Store format 3 on the shared store: chunked snapshot documents, their links in the
PostgreSQL catalog, and the upgrade of a catalog written at format 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fleet_world import Fleet, make_tree, tree_digest

pytestmark = [pytest.mark.s3, pytest.mark.postgres]


#: Files in the big trees: enough for a document of several chunks (an item in 128 ends
#: one, and items past 64 KiB leave the head) and for links far outnumbering the
#: chunks, so that what is stored and referenced shows it scales with chunks, not files.
FILES = 640


def _tree(root: Path, n: int) -> Path:
    for i in range(n):
        d = root / f"d{i // 100:02}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:05}").write_bytes(f"file {i}\n".encode() * (1 + i % 7))
    return root


def _capture(fleet: Fleet, home: Path, root: Path) -> dict[str, object]:
    out = fleet.cli(home, "capture", f"file://{root}", "--json", check=True).stdout
    return dict(json.loads(out))


def test_a_chunked_document_on_the_shared_store(fleet: Fleet, tmp_path: Path) -> None:
    """An unchanged re-capture of many files (:data:`FILES`) stores only a small head and
    references its chunks, not every file; after the first backup is forgotten and pruned,
    the second checks clean and restores on a fresh machine."""
    root = _tree(tmp_path / "t", FILES)
    home = fleet.machine("writer")
    first = _capture(fleet, home, root)
    again = _capture(fleet, home, root)
    assert int(str(again["stored_bytes"])) < FILES + 30   # < 1 KB per thousand entries
    db = fleet.database
    rows = fleet.pg.psql(f"SELECT count(*) FROM refs WHERE backup_id='{again['id']}'", db)
    assert int(rows.strip()) < 60   # the head and its chunks
    assert int(fleet.pg.psql("SELECT count(*) FROM links", db).strip()) >= FILES
    for i in range(0, FILES, FILES // 10):
        (root / f"d{i // 100:02}" / f"f{i:05}").write_bytes(b"second version\n")
    second = _capture(fleet, home, root)
    expected = tree_digest(root)
    fleet.cli(home, "forget", str(first["id"]), str(again["id"]), check=True)
    report = json.loads(fleet.cli(fleet.machine("pruner"), "prune", "--json",
                                  check=True).stdout)
    assert report["unreferenced_blobs"] >= 10   # the first versions of the changed files
    check = fleet.cli(fleet.machine(), "check", "--read-data", "--json")
    assert check.returncode == 0, check.stdout + check.stderr
    shutil.rmtree(root)
    fleet.cli(fleet.machine(), "restore", str(second["id"]), check=True)
    assert tree_digest(root) == expected


def test_a_format_two_catalog_is_upgraded_on_open(fleet: Fleet, tmp_path: Path) -> None:
    """A shared catalog at schema 1 / store format 2 (no links table) opens at format 3:
    its backups restore, new captures chunk, and `store migrate` reports the schema found."""
    small = tmp_path / "small"
    expected_small = make_tree(small, 3)
    home = fleet.machine("old")
    old = _capture(fleet, home, small)
    fleet.pg.psql("DROP TABLE links; UPDATE meta SET value='2' WHERE key='format';"
                  " UPDATE meta SET value='1' WHERE key='catalog_schema'", fleet.database)
    migrated = fleet.cli(fleet.machine(), "store", "migrate", check=True)
    assert "catalog schema 1 → 2; store format 3" in migrated.stdout
    assert fleet.pg.psql("SELECT value FROM meta WHERE key='format'",
                         fleet.database).strip() == "3"
    shutil.rmtree(small)
    fleet.cli(fleet.machine(), "restore", str(old["id"]), check=True)
    assert tree_digest(small) == expected_small
    # A capture through an old catalog upgraded by merely opening it (no `store migrate`).
    fleet.pg.psql("DROP TABLE links; UPDATE meta SET value='2' WHERE key='format'",
                  fleet.database)
    big = _tree(tmp_path / "big", FILES)
    expected_big = tree_digest(big)
    new = _capture(fleet, fleet.machine(), big)
    assert int(fleet.pg.psql("SELECT count(*) FROM links", fleet.database).strip()) >= FILES
    shutil.rmtree(big)
    fleet.cli(fleet.machine(), "restore", str(new["id"]), check=True)
    assert tree_digest(big) == expected_big
    check = fleet.cli(fleet.machine(), "check", "--read-data", "--json")
    assert check.returncode == 0, check.stdout + check.stderr
