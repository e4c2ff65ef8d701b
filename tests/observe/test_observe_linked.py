"""Removed files kept by a hard link in the store's trash, not copied: they restore exactly.

The oracle is ``fixtures/layer_audit/observe.tree_state`` (an lstat + sha256 walk
sharing no code with the file connector): type, content, mode, mtime in ns,
xattrs and hard-link groups of every path.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))

from layer_audit import observe

import preimage
from preimage import Store
from preimage.engine.observed_links import held_targets, linked
from preimage.observe import run_command, unavailable_reason

# every test here runs once per supervisor loop (compiled and Python: conftest.py)
pytestmark = [pytest.mark.skipif(unavailable_reason() is not None,
                                 reason=f"no supervision here: {unavailable_reason()}"),
              pytest.mark.usefixtures("loop")]


def _tree(root: Path) -> None:
    """Files with odd modes, ns times and xattrs, a hard-link pair, nested directories."""
    (root / "deep" / "er").mkdir(parents=True)
    for i, rel in enumerate(["a.txt", "deep/b.bin", "deep/er/c.txt"]):
        p = root / rel
        p.write_bytes(os.urandom(3000 + i))
        os.chmod(p, 0o640 + i)
        os.setxattr(p, "user.tag", f"v{i}".encode())
        os.utime(p, ns=(1_600_000_000_123_456_789 + i, 1_500_000_000_987_654_321 + i))
    os.symlink("a.txt", root / "ln")


def _pair(root: Path) -> None:
    (root / "pair1").write_text("shared\n")
    os.link(root / "pair1", root / "pair2")


def _differences(before: observe.State, after: observe.State) -> list[str]:
    return [observe.describe(before, after, p) for p in observe.changed_paths(before, after)]


def _run(work: Path, command: str, store: Store, **kw: object) -> preimage.BackupRow:
    outcome = run_command(["bash", "-c", command], store=store, cwd=str(work), log=None,
                          post_call=bool(kw.get("post", False)))
    assert outcome.returncode == 0
    assert outcome.backup_id is not None
    return store.catalog.get(outcome.backup_id)


def test_rm_rf_links_files_and_restores_them_exactly(tmp_path: Path, store: Store) -> None:
    """rm -rf keeps each single-link file by a link (no bytes stored); restore is exact."""
    box = tmp_path / "box"
    box.mkdir()
    _tree(box)
    before = observe.tree_state(box)
    backup = _run(tmp_path, "rm -rf box", store)
    assert not box.exists()
    kept = {os.path.relpath(e.original, box) for e in linked(store, backup.id)}
    assert kept == {"a.txt", "deep/b.bin", "deep/er/c.txt"}
    assert backup.stored_bytes < 3000   # the linked files' bytes were not copied
    preimage.restore(backup.id, store=store)
    assert _differences(before, observe.tree_state(box)) == []
    assert linked(store, backup.id) == []   # read into the store, links dropped
    assert preimage.score(backup.id, store=store)[0].value("content") == 1.0


def test_restore_twice_and_diff_after_links_are_read(tmp_path: Path, store: Store) -> None:
    """Once read into the store, a linked file restores again after a second removal."""
    box = tmp_path / "box"
    box.mkdir()
    _tree(box)
    before = observe.tree_state(box)
    backup = _run(tmp_path, "rm box/a.txt box/deep/er/c.txt", store)
    assert [d for d in preimage.diff(backup.id, store=store) if d.changes]
    preimage.restore(backup.id, store=store)
    assert _differences(before, observe.tree_state(box)) == []
    (box / "a.txt").unlink()
    (box / "deep" / "er" / "c.txt").write_text("changed\n")
    preimage.restore(backup.id, store=store)
    assert _differences(before, observe.tree_state(box)) == []


def test_rename_over_a_file_links_the_old_one(tmp_path: Path, store: Store) -> None:
    """mv new old: the replaced file is kept by a link; restore brings both names back."""
    box = tmp_path / "box"
    box.mkdir()
    _tree(box)
    (box / "new.txt").write_text("new\n")
    before = observe.tree_state(box)
    backup = _run(box, "mv new.txt a.txt", store)
    assert [e.original for e in linked(store, backup.id)] == [str(box / "a.txt")]
    assert f"file://{box}/a.txt" in held_targets(store, backup)
    preimage.restore(backup.id, store=store)
    assert _differences(before, observe.tree_state(box)) == []


def test_a_file_with_other_links_is_copied_and_its_group_restored(
        tmp_path: Path, store: Store) -> None:
    """A file with a second name is never linked (the other name could change it)."""
    box = tmp_path / "box"
    box.mkdir()
    _tree(box)
    _pair(box)
    before = observe.tree_state(box)
    backup = _run(box, "rm pair1 && echo other > pair2", store)
    assert linked(store, backup.id) == []
    preimage.restore(backup.id, store=store)
    assert _differences(before, observe.tree_state(box)) == []


def test_undo_of_a_linked_delete(tmp_path: Path, store: Store) -> None:
    """undo puts back only the removed file and keeps a file the call created."""
    box = tmp_path / "box"
    box.mkdir()
    _tree(box)
    backup = _run(box, "rm deep/b.bin && echo new > made.txt", store, post=True)
    body = observe.tree_state(box)
    assert preimage.undo(backup.id, store=store).ok
    assert (box / "deep" / "b.bin").exists()
    assert not (box / "made.txt").exists()
    assert "deep/b.bin" not in body


def test_killed_supervisor_leaves_a_restorable_linked_backup(
        tmp_path: Path, home: Path, store: Store) -> None:
    """kill -9 after a linked rm: the next rm fails; the removed file restores exactly."""
    box = tmp_path / "box"
    box.mkdir()
    _tree(box)
    before = observe.tree_state(box)
    script = ("rm a.txt && touch ../ready; while [ ! -e ../go ]; do sleep 0.02; done; "
              "rm deep/b.bin; echo \"rm: $?\"")
    env = {**os.environ, "PREIMAGE_HOME": str(home), "PREIMAGE_SERVICE": "off"}
    sup = subprocess.Popen([sys.executable, "-m", "preimage", "run", "--no-post", "--",
                            "bash", "-c", script], cwd=box, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (tmp_path / "ready").exists():
        assert time.monotonic() < deadline, "the call's first change never came"
        time.sleep(0.02)
    os.kill(sup.pid, signal.SIGKILL)
    sup.wait()
    (tmp_path / "go").touch()
    deadline = time.monotonic() + 120
    while _processes_in(box) and time.monotonic() < deadline:   # the orphaned call ends
        time.sleep(0.05)
    assert (box / "deep" / "b.bin").exists()   # its rm failed: nothing ran unrecorded
    observed = [r for r in store.catalog.list_backups(None) if r.kind == "observed"]
    assert len(observed) == 1
    assert [e.original for e in linked(store, observed[0].id)] == [str(box / "a.txt")]
    preimage.restore(observed[0].id, store=store)
    assert _differences(before, observe.tree_state(box)) == []


def _processes_in(cwd: Path) -> list[str]:
    """Pids of processes whose working directory is ``cwd`` (the orphaned call)."""
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.readlink(f"/proc/{pid}/cwd") == str(cwd):
                    out.append(pid)
            except OSError:
                continue
    return out


def test_write_through_an_old_descriptor_is_reported_not_captured(
        tmp_path: Path, store: Store) -> None:
    """A removed file written later through a descriptor opened before the call is named."""
    from preimage.store.snapshots import load_snapshot_row

    box = tmp_path / "box"
    box.mkdir()
    (box / "log.txt").write_text("before\n")
    with open(box / "log.txt", "a") as held:
        backup = _run(box, "rm log.txt", store)
        held.write("written after the rm\n")
    preimage.restore(backup.id, store=store)
    row = next(r for r in store.catalog.get(backup.id).snapshots
               if r.target == f"file://{box}/log.txt")
    snap = load_snapshot_row(store, row)
    assert [u.name for u in snap.uncaptured] == [str(box / "log.txt")]



def test_export_and_import_keep_a_linked_file_exact(
        tmp_path: Path, home: Path, store: Store) -> None:
    """An observed backup exported before its first use restores in another store with
    its ns times."""
    box = tmp_path / "box"
    box.mkdir()
    _tree(box)
    before = observe.tree_state(box)
    backup = _run(tmp_path, "rm -rf box", store)
    env = {**os.environ, "PREIMAGE_SERVICE": "off"}
    archive = tmp_path / "b.tar.zst"
    subprocess.run([sys.executable, "-m", "preimage", "export", backup.id, "-o", str(archive)],
                   env={**env, "PREIMAGE_HOME": str(home)}, check=True, capture_output=True)
    other = {**env, "PREIMAGE_HOME": str(tmp_path / "other")}
    for args in (["import", str(archive)], ["restore", backup.id]):
        subprocess.run([sys.executable, "-m", "preimage", *args], env=other, check=True,
                       capture_output=True)
    assert _differences(before, observe.tree_state(box)) == []


def test_a_file_over_the_per_file_cap_is_not_linked(tmp_path: Path, store: Store) -> None:
    """A file over the store's per-file cap is reported as not captured, as by any
    capture, rather than linked and then dropped when the backup is read."""
    from preimage.store.quota import Quota, save

    save(store, Quota(max_file_size=1000))
    box = tmp_path / "box"
    box.mkdir()
    (box / "big.bin").write_bytes(os.urandom(5000))
    (box / "small.txt").write_text("small\n")
    outcome = run_command(["rm", "big.bin", "small.txt"], store=store, cwd=str(box), log=None,
                          post_call=False)
    assert outcome.backup_id is not None
    assert [e.original for e in linked(store, outcome.backup_id)] == [str(box / "small.txt")]
    assert any(u.startswith(f"{box}/big.bin") for u in outcome.uncaptured)


def test_a_backup_still_being_recorded_is_refused_in_one_line(
        tmp_path: Path, home: Path, store: Store) -> None:
    """Restoring a call's backup while the call runs says so instead of waiting on it."""
    box = tmp_path / "box"
    box.mkdir()
    (box / "a.txt").write_text("a\n")
    env = {**os.environ, "PREIMAGE_HOME": str(home), "PREIMAGE_SERVICE": "off"}
    script = "rm a.txt && touch ../ready; while [ ! -e ../go ]; do sleep 0.02; done"
    sup = subprocess.Popen([sys.executable, "-m", "preimage", "run", "--no-post", "--",
                            "bash", "-c", script], cwd=box, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "ready").exists():
            assert time.monotonic() < deadline, "the call's first change never came"
            time.sleep(0.02)
        backup_id = next(r.id for r in store.catalog.list_backups(None) if r.kind == "observed")
        ran = subprocess.run([sys.executable, "-m", "preimage", "restore", backup_id],
                             env=env, capture_output=True, text=True)
        assert ran.returncode != 0
        assert "still being recorded" in ran.stderr
        assert "Traceback" not in ran.stderr
    finally:
        (tmp_path / "go").touch()
        sup.wait()
    preimage.restore(backup_id, store=store)
    assert (box / "a.txt").read_text() == "a\n"


def test_a_linked_file_restores_into_another_place(tmp_path: Path, store: Store) -> None:
    """restore --to of a removed file kept by a link writes it, exact, where asked."""
    from preimage.engine.elsewhere import restore_to

    box = tmp_path / "box"
    box.mkdir()
    _tree(box)
    before = os.stat(box / "a.txt")
    body = (box / "a.txt").read_bytes()
    backup = _run(box, "rm a.txt", store)
    dest = tmp_path / "elsewhere" / "a.txt"
    restore_to(backup.id, f"file://{dest}", store=store, only=[f"file://{box}/a.txt"])
    assert dest.read_bytes() == body
    assert os.stat(dest).st_mtime_ns == before.st_mtime_ns
    assert os.getxattr(dest, "user.tag") == b"v0"
    assert not (box / "a.txt").exists()


def test_a_new_hard_link_records_the_file_it_links(tmp_path: Path, store: Store) -> None:
    """link A B changes A's link count: A is in the backup, and restoring puts it back
    with one link."""
    box = tmp_path / "box"
    box.mkdir()
    _tree(box)
    before = observe.tree_state(box)
    backup = _run(box, "link a.txt b.txt", store)
    assert f"file://{box}/a.txt" in held_targets(store, backup)
    preimage.restore(backup.id, store=store)
    assert _differences(before, observe.tree_state(box)) == []
