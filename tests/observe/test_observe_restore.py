"""Calls run for real under supervision, then restored: the tree must come back exactly.

The oracle is ``fixtures/layer_audit/observe.tree_state`` — an lstat + sha256
walk that shares no code with the file connector — comparing type, content,
mode, owner, mtime in ns, xattrs and hard-link groups of every path (git's
index and SQLite databases by their own tools' dumps).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES, ran_on, seed
from layer_audit import observe

import preimage
from preimage import Store
from preimage.observe import run_command, unavailable_reason

pytestmark = pytest.mark.skipif(unavailable_reason() is not None,
                                reason=f"no supervision here: {unavailable_reason()}")


def _differences(before: observe.State, after: observe.State) -> list[str]:
    return [observe.describe(before, after, p) for p in observe.changed_paths(before, after)]


def supervised(box: Path, command: str, store: Store,
               loop: str | None = None) -> tuple[str | None, int]:
    """Run ``command`` with bash in ``box/work`` under supervision: (backup, status);
    ``loop``: the supervisor loop it must have run on."""
    env = {"PATH": os.environ["PATH"], "HOME": str(box / "home"), "LANG": "C.UTF-8"}
    outcome = run_command(["bash", "-c", command], store=store, cwd=str(box / "work"), env=env,
                          log=None, post_call=False)
    assert loop is None or ran_on(loop, outcome.loop), outcome.loop
    return outcome.backup_id, outcome.returncode


@pytest.mark.parametrize(("kind", "command"), [(k, c) for k, _i, c in CASES],
                         ids=[f"{k}-{i}" for k, i, _c in CASES])
def test_observed_call_restores_exactly(tmp_path: Path, store: Store, kind: str,
                                        command: str, loop: str) -> None:
    """Whatever the call changed, restoring its observed backup brings the tree back."""
    box = tmp_path / "box"
    seed(box)
    before = observe.tree_state(box)
    backup_id, status = supervised(box, command, store, loop)
    assert status == 0, f"{kind}: {command!r} failed under supervision"
    changed = _differences(before, observe.tree_state(box))
    assert changed, f"{command!r} changed nothing: not a test of a restore"
    assert backup_id is not None
    preimage.restore(backup_id, store=store)
    assert _differences(before, observe.tree_state(box)) == []


def test_observed_backup_holds_only_what_changed(tmp_path: Path, store: Store) -> None:
    """A call touching one file records that file and its directory, nothing else."""
    box = tmp_path / "box"
    seed(box)
    backup_id, _ = supervised(box, "cat README.md src/*.py >/dev/null; echo x >> notes.txt",
                              store)
    assert backup_id is not None
    targets = [s.target for s in store.catalog.get(backup_id).snapshots]
    work = box / "work"
    assert targets == [f"file://{work}?depth=0", f"file://{work}/notes.txt"]


def test_read_only_call_leaves_no_backup(tmp_path: Path, store: Store) -> None:
    """Reading, listing and writing to /dev/null record nothing and take no backup."""
    box = tmp_path / "box"
    seed(box)
    backup_id, status = supervised(box, "grep -r project . >/dev/null; ls -la; cat data/*.csv",
                                   store)
    assert (backup_id, status) == (None, 0)


def test_observed_backup_scores_and_says_observed(tmp_path: Path, store: Store) -> None:
    """The backup is kind `observed`, and after a restore it scores 1.0 on restorable fields."""
    box = tmp_path / "box"
    seed(box)
    backup_id, _ = supervised(box, "rm -rf src; echo new > docs/guide.md", store)
    assert backup_id is not None
    assert store.catalog.get(backup_id).kind == "observed"
    preimage.restore(backup_id, store=store)
    total, _per_target = preimage.score(backup_id, store=store)
    assert total.value("restorable") == 1.0


def test_undo_reverts_only_the_call(tmp_path: Path, store: Store) -> None:
    """`undo` of an observed call keeps a change made after it to another file."""
    box = tmp_path / "box"
    seed(box)
    env = {"PATH": os.environ["PATH"], "HOME": str(box / "home")}
    outcome = run_command(["bash", "-c", "rm src/util.py; echo y > docs/guide.md"],
                          store=store, cwd=str(box / "work"), env=env, log=None)
    assert outcome.post_backup_id is not None and outcome.backup_id is not None
    (box / "work" / "notes.txt").write_text("changed later\n")
    preimage.undo(outcome.backup_id, store=store)
    assert (box / "work" / "src" / "util.py").read_text().startswith("def greet")
    assert (box / "work" / "docs" / "guide.md").read_text() == "# guide\n"
    assert (box / "work" / "notes.txt").read_text() == "changed later\n"
