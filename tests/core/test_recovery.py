"""The recovery path: `last`, the restore journal, the undo backup and refusing unsound backups."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import preimage
from preimage import Store


def _tree(root: Path, n: int = 5, tag: str = "v1") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"f{i}").write_text(f"{tag}-{i}\n")
    return root


def _state(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(root.iterdir())} if root.exists() else {}


def test_last_never_names_an_undo_backup(tmp_path: Path, store: Store) -> None:
    """`restore last` twice in a row brings the backup back twice, never the damage."""
    root = _tree(tmp_path / "t")
    good = _state(root)
    backup = preimage.capture([f"file://{root}"], store=store)
    shutil.rmtree(root)
    first = preimage.restore("last", store=store)
    assert first.backup_id == backup.id
    assert first.undo_backup_id is not None
    assert store.catalog.resolve("last") == backup.id
    second = preimage.restore("last", store=store)
    assert second.backup_id == backup.id
    assert _state(root) == good


def test_scoring_a_failed_backup_is_refused(tmp_path: Path, store: Store) -> None:
    """A capture that did not finish cannot pass a fidelity gate or claim "no difference"."""
    root = _tree(tmp_path / "t")
    backup = preimage.capture([f"file://{root}"], store=store)
    with store.catalog._tx() as db:  # a capture killed half-way leaves its backup open
        db.execute("UPDATE backups SET status='open' WHERE id=?", (backup.id,))
    for call in (preimage.score, preimage.diff):
        with pytest.raises(preimage.UsageError, match="not complete"):
            call(backup.id, store=store)
    with store.catalog._tx() as db:
        db.execute("UPDATE backups SET status='failed' WHERE id=?", (backup.id,))
    with pytest.raises(preimage.UsageError, match="not complete"):
        preimage.score(backup.id, store=store)


def test_cli_score_of_an_unfinished_backup_exits_2(
    tmp_path: Path, store: Store, cli: object
) -> None:
    """`score ID --min 0.99` on an unfinished capture exits 2, not 0."""
    root = _tree(tmp_path / "t")
    backup = preimage.capture([f"file://{root}"], store=store)
    with store.catalog._tx() as db:
        db.execute("UPDATE backups SET status='failed' WHERE id=?", (backup.id,))
    res = cli("score", backup.id, "--min", "0.99")  # type: ignore[operator]
    assert res.returncode == 2, res.stdout
    assert "not complete" in res.stderr
