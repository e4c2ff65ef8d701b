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


def test_a_corrupt_blob_of_the_second_target_stops_before_the_first_is_written(
    tmp_path: Path, store: Store
) -> None:
    """Every blob of every target is verified before the first write of a restore."""
    one = _tree(tmp_path / "one", tag="one")
    two = _tree(tmp_path / "two", tag="two")
    backup = preimage.capture([f"file://{one}", f"file://{two}"], store=store)
    entry = next(e for e in backup.snapshots[1].items if e.path == "f3")
    store.blobs.path(entry.digest or "").write_bytes(b"garbage")
    shutil.rmtree(one)
    (two / "f3").write_text("edited\n")
    with pytest.raises(preimage.BlobCorruptError, match="f3"):
        preimage.restore(backup.id, store=store)
    assert not one.exists()
    assert (two / "f3").read_text() == "edited\n"


def test_a_refused_restore_leaves_no_stale_undo_for_the_next_one(
    tmp_path: Path, store: Store
) -> None:
    """Work done after a refused restore is in the undo backup of the next restore."""
    root = _tree(tmp_path / "t")
    backup = preimage.capture([f"file://{root}"], store=store)
    (root / "f0").write_text("agent edit\n")
    with pytest.raises(preimage.RestoreConflictError):
        preimage.restore(backup.id, store=store, conflict="refuse")
    (root / "f1").write_text("work done after the refusal\n")
    result = preimage.restore(backup.id, store=store)
    assert result.undo_backup_id is not None
    preimage.restore(result.undo_backup_id, store=store)
    assert (root / "f1").read_text() == "work done after the refusal\n"
    assert (root / "f0").read_text() == "agent edit\n"


def test_an_unfinished_journal_entry_is_superseded_when_the_state_moved_on(
    tmp_path: Path, store: Store
) -> None:
    """A restore killed before writing, then more work: the next restore takes a fresh undo."""
    root = _tree(tmp_path / "t")
    backup = preimage.capture([f"file://{root}"], store=store)
    (root / "f0").write_text("agent edit\n")
    # what a restore killed right after taking its undo backup leaves behind
    stale = preimage.capture([f"file://{root}"], store=store, kind="pre-restore")
    store.catalog.start_restore(backup.id, "[]", stale.id)
    (root / "f2").write_text("later work\n")
    result = preimage.restore(backup.id, store=store)
    assert result.undo_backup_id != stale.id
    preimage.restore(result.undo_backup_id or "", store=store)
    assert (root / "f2").read_text() == "later work\n"
    assert [e.status for e in store.catalog.restores()] == ["done", "done", "superseded"]


def test_an_unfinished_journal_entry_is_resumed_when_nothing_moved(
    tmp_path: Path, store: Store
) -> None:
    """A restore killed before writing and run again keeps its first undo backup."""
    root = _tree(tmp_path / "t")
    backup = preimage.capture([f"file://{root}"], store=store)
    (root / "f0").write_text("agent edit\n")
    first = preimage.capture([f"file://{root}"], store=store, kind="pre-restore")
    store.catalog.start_restore(backup.id, "[]", first.id)
    result = preimage.restore(backup.id, store=store)
    assert result.undo_backup_id == first.id
    assert (root / "f0").read_text() == "v1-0\n"
