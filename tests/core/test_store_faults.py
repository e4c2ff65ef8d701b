"""Crash injection and corruption: the store keeps its promises when things go wrong."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import preimage
from preimage import Store
from preimage.store.check import check
from preimage.store.prune import forget, prune
from preimage.store.retention import RetentionPolicy

sys.path.insert(0, str(Path(__file__).resolve().parent))
import store_faults

CRASH_TRIALS = 24   # benchmarks/bench_store.py runs many more


@pytest.mark.parametrize("seed", range(CRASH_TRIALS))
def test_a_crash_at_any_point_leaves_a_sound_store_and_a_rerun_finishes(
    seed: int, tmp_path: Path
) -> None:
    """kill -9 of capture/restore/forget/prune at a seeded point: no complete backup loses a
    blob, the re-run finishes, and a re-run restore's undo describes what it replaced."""
    trial = store_faults.crash_trial(seed, tmp_path / "trial")
    assert trial.problems == [], trial


def test_check_names_every_one_of_50_faults_and_restore_writes_nothing(tmp_path: Path) -> None:
    """50 random faults (blobs, documents, catalog rows): check names each; restore writes nothing."""
    home, trees = tmp_path / "home", tmp_path / "trees"
    faults = store_faults.corrupt(home, trees, 50, seed=13)
    assert len({f.kind for f in faults}) >= 8
    with Store(home) as st:
        report = check(st, read_data=True)
        assert not report.ok
        text = "\n".join(f"{p.subject} {p.message}" for p in report.problems)
        for fault in faults:
            assert any(name in text for name in fault.names), fault
        for i, fault in enumerate(faults):
            if not fault.data_fault:
                continue
            root = trees / f"t{i}"
            (root / "f0").unlink()
            before = store_faults.tree_state(root)
            with pytest.raises(preimage.PreimageError):
                preimage.restore(fault.backup_id, store=st)
            assert store_faults.tree_state(root) == before, fault


def test_forget_and_prune_while_eight_captures_run(tmp_path: Path, home: Path) -> None:
    """Eight processes capture while forget+prune loop: no referenced blob is ever deleted,
    and once they stop, prune leaves exactly the referenced bytes."""
    trees = []
    for i in range(8):
        t = tmp_path / f"tree{i}"
        (t / "sub").mkdir(parents=True)
        for j in range(20):
            (t / "sub" / f"f{j}").write_text(f"{i}-{j}\n" * 50)
        (t / "shared").write_text("same content in every tree\n" * 100)
        trees.append(t)
    env = {**os.environ, "PREIMAGE_HOME": str(home)}
    script = (
        "import sys, preimage\n"
        "for _ in range(4):\n"
        "    b = preimage.capture([sys.argv[1]])\n"
        "    print(b.id, flush=True)\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, f"file://{t}"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for t in trees]
    rounds = 0
    with Store(home) as st:
        while any(p.poll() is None for p in procs) or rounds < 2:
            forget(st, policy=RetentionPolicy(keep_last=3))
            prune(st, timeout=120)
            rounds += 1
        ended = [p.communicate(timeout=300) for p in procs]   # all, before any assert
        for p, (_out, err) in zip(procs, ended, strict=True):
            assert p.returncode == 0, err
        report = check(st, read_data=True)
        assert report.ok, [p.message for p in report.problems]
        kept = [r for r in st.catalog.list_backups(None) if r.status == "complete"]
        assert len(kept) >= 3
        for r in kept:
            preimage.restore(r.id, store=st, dry_run=True)
        prune(st)
        live = st.catalog.referenced(skip_statuses=("failed", "abandoned"))
        assert set(st.blobs.digests()) == live
        assert not st.blobs.hidden() and not st.blobs.leftovers()



def _at_once(code: str, *args: str, n: int = 8) -> list[tuple[int, str, str]]:
    """Run ``code`` in ``n`` processes released together (each prints "ready" and waits
    for a line): each one's exit code, output and errors."""
    procs = [subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:   # all of them at once: communicate() would go one by one
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.close()
        p.stdin = None   # sent; communicate() only reads
    ended = [p.communicate(timeout=300) for p in procs]
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, ended, strict=True)]


_OPEN_TOGETHER = """
import os, sys
from pathlib import Path
from preimage.store.store import Store
home = Path(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()   # the go signal: every process is here
st = Store(home)
st.blobs.put_bytes(os.urandom(64))
st.blobs.flush()       # seals the pack: opens the pack index
st.close()
print("ok", flush=True)
"""


def test_eight_processes_opening_a_new_store_at_once_all_capture(tmp_path: Path) -> None:
    """Switching a new database to WAL fails at once with "database is locked" while
    another process does the same, whatever the busy timeout: eight processes that open a
    fresh store together (its catalog and its pack index) each retry it and all succeed,
    round after round."""
    for n in range(5):
        for code, out, err in _at_once(_OPEN_TOGETHER, str(tmp_path / f"home{n}")):
            assert code == 0 and out.strip() == "ok", err


_WAL_TOGETHER = """
import sqlite3, sys
from preimage.store.wal import use_wal
print("ready", flush=True)
sys.stdin.readline()
db = sqlite3.connect(sys.argv[1], timeout=60, isolation_level=None)
use_wal(db)
db.execute("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY)")
print(db.execute("PRAGMA journal_mode").fetchone()[0], flush=True)
"""


def test_a_new_database_switched_to_wal_by_eight_processes_at_once(tmp_path: Path) -> None:
    """The switch itself, twenty rounds of eight processes on a fresh file each: a plain
    `PRAGMA journal_mode=WAL` failed in about one round of five here."""
    for n in range(20):
        for code, out, err in _at_once(_WAL_TOGETHER, str(tmp_path / f"{n}.db")):
            assert code == 0 and out.strip() == "wal", err
