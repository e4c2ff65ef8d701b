"""Killed writers and prune on the shared store: never a complete backup with a chunk missing."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fleet_world import Fleet, make_tree, tree_digest

pytestmark = [pytest.mark.s3, pytest.mark.postgres]


def test_kill_9_mid_upload_then_prune_reclaims_the_orphans(fleet: Fleet, tmp_path: Path) -> None:
    """A writer SIGKILLed after its first pack reached the bucket, before any index named it:
    its backup never counts as complete, `last` does not name it, and the next prune marks
    it abandoned and deletes the orphan pack."""
    root = tmp_path / "work"
    make_tree(root, 5, big=20 << 20)   # random bytes: a full 16 MiB pack, and more after it
    home = fleet.machine()
    proc = fleet.cli(home, "capture", f"file://{root}",
                     env=fleet.env(PREIMAGE_CRASH_AT="pack:1"))
    assert proc.returncode == -9
    packs = [k for k, _ in fleet.objects() if "/data/" in k]
    assert packs, "the crash point is after a pack upload"
    assert not [k for k, _ in fleet.objects() if "/index/" in k]
    rows = json.loads(fleet.cli(home, "list", "--json", check=True).stdout)
    # open in the catalog; shown as abandoned since no process holds its lease
    assert [r["status"] for r in rows] == ["abandoned"]
    assert fleet.cli(home, "restore", "last").returncode == 2
    report = json.loads(fleet.cli(fleet.machine(), "prune", "--json", check=True).stdout)
    assert report["abandoned"] == [rows[0]["id"]]
    assert not [k for k, _ in fleet.objects() if "/data/" in k]
    # The store is sound afterwards: a new capture and a restore elsewhere work.
    expected = tree_digest(root)
    backup_id = fleet.cli(home, "capture", f"file://{root}", check=True).stdout.strip()
    shutil.rmtree(root)
    fleet.cli(fleet.machine(), "restore", backup_id, check=True)
    assert tree_digest(root) == expected
    check = fleet.cli(fleet.machine(), "check", "--read-data", "--json")
    assert check.returncode == 0, check.stdout + check.stderr


def test_prune_during_concurrent_writes_keeps_every_referenced_chunk(
        fleet: Fleet, tmp_path: Path) -> None:
    """Backups are forgotten while four writers keep capturing trees that share bytes with
    them and a prune runs: every complete backup still restores on a fresh machine, `check
    --read-data` finds nothing, and the forgotten bytes are gone."""
    shared = os.urandom(2 << 20)
    seed_root = tmp_path / "seed"
    make_tree(seed_root, 100, big=6 << 20, shared=shared)
    home = fleet.machine()
    old = [fleet.cli(home, "capture", f"file://{seed_root}", check=True).stdout.strip()]
    (seed_root / "data.bin").write_bytes(os.urandom(3 << 20) + shared)
    old.append(fleet.cli(home, "capture", f"file://{seed_root}", check=True).stdout.strip())
    fleet.cli(home, "forget", *old, check=True)
    before = sum(s for k, s in fleet.objects() if "/data/" in k)

    script = (
        "import hashlib, json, os, subprocess, sys\n"
        "root, n = sys.argv[1], int(sys.argv[2])\n"
        "data = os.path.join(root, 'data.bin')\n"
        "for i in range(n):\n"
        "    with open(data, 'r+b') as f:\n"
        "        f.seek(i * 4096); f.write(os.urandom(4096))\n"
        "    sha = hashlib.sha256(open(data, 'rb').read()).hexdigest()\n"
        "    p = subprocess.run([sys.executable, '-m', 'preimage', 'capture', 'file://' + root,"
        " '--json'], capture_output=True, text=True)\n"
        "    got = json.loads(p.stdout)['id'] if p.returncode == 0 else None\n"
        "    print(json.dumps({'rc': p.returncode, 'id': got, 'sha': sha, 'err': p.stderr}),"
        " flush=True)\n"
    )
    writers, roots = [], []
    for i in range(4):
        root = tmp_path / f"w{i}"
        make_tree(root, 200 + i, big=1 << 20, shared=shared)
        roots.append(root)
        env = {**fleet.env(), "PREIMAGE_HOME": str(fleet.machine(f"w{i}"))}
        writers.append(subprocess.Popen([sys.executable, "-c", script, str(root), "3"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=env))
    pruned = fleet.cli(fleet.machine("pruner"), "prune", "--json", check=True)
    report = json.loads(pruned.stdout)
    ended = [w.communicate(timeout=600) for w in writers]   # all of them, before any assert
    done = []
    for w, (out, errs), root in zip(writers, ended, roots, strict=True):
        fleet.outputs += [out, errs]
        assert w.returncode == 0, errs
        for line in out.splitlines():
            rec = json.loads(line)
            assert rec["rc"] == 0, rec["err"]
            done.append((rec["id"], root, rec["sha"]))
    assert len(done) == 12
    # A second prune now that nothing runs finishes any generation the first left pending.
    fleet.cli(fleet.machine("pruner"), "prune", "--json", check=True)
    assert report["unreferenced_blobs"] > 0
    after = sum(s for k, s in fleet.objects() if "/data/" in k)
    assert after < before + 4 * (3 << 20)
    check = fleet.cli(fleet.machine(), "check", "--read-data", "--json")
    assert check.returncode == 0, check.stdout + check.stderr
    for root in roots:
        shutil.rmtree(root)
    for backup_id, root, sha in done:
        fleet.cli(fleet.machine(), "restore", backup_id, check=True)
        assert hashlib.sha256((root / "data.bin").read_bytes()).hexdigest() == sha
