"""A restore from the shared store into a removed target appears whole or not at all."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fleet_world import Fleet, make_tree, tree_digest

pytestmark = [pytest.mark.s3, pytest.mark.postgres]


def _many(root: Path) -> dict[str, str]:
    # a file over 8 MiB: a restore streams its blob into place, not through the spool
    make_tree(root, 3, big=12 << 20)
    for i in range(300):
        d = root / "many" / f"d{i // 100}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:03}").write_bytes(os.urandom(200 + i))
    return tree_digest(root)


def _staging_beside(root: Path) -> list[str]:
    return [n for n in os.listdir(root.parent) if n.startswith(".preimage-tmp-")]


def test_a_restore_killed_mid_way_leaves_the_target_absent_and_the_rerun_finishes(
        fleet: Fleet, tmp_path: Path) -> None:
    """kill -9 after 150 files of a restore from the shared store into a removed tree: the
    tree is still absent; the same restore again brings it back exactly, nothing left beside."""
    root = tmp_path / "work"
    expected = _many(root)
    home = fleet.machine("a")
    backup_id = fleet.cli(home, "capture", f"file://{root}", check=True).stdout.strip()
    shutil.rmtree(root)
    env = {**fleet.env(PREIMAGE_CRASH_AT="restore-write:150"), "PREIMAGE_HOME": str(home),
           "PREIMAGE_CONFIG_DIR": str(home / "config"), "PREIMAGE_SERVICE": "off"}
    killed = subprocess.run([sys.executable, "-m", "preimage", "restore", backup_id], env=env,
                            capture_output=True, text=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not root.exists()
    assert _staging_beside(root) != []
    fleet.cli(home, "restore", backup_id, check=True)
    assert tree_digest(root) == expected
    assert _staging_beside(root) == []


def test_a_damaged_pack_leaves_a_removed_target_absent(fleet: Fleet, tmp_path: Path) -> None:
    """Every data pack damaged in the bucket after the capture: a restore into the removed
    tree from another machine fails in one line, and the tree stays absent with nothing beside."""
    root = tmp_path / "work"
    _many(root)
    backup_id = fleet.cli(fleet.machine("a"), "capture", f"file://{root}",
                          check=True).stdout.strip()
    shutil.rmtree(root)
    packs = [(k, n) for k, n in fleet.objects() if "/data/" in k and n > 4096]
    assert packs
    for key, size in packs:
        body = bytearray(fleet.seaweed.get_object(fleet.bucket, key))
        body[size // 2] ^= 0xFF
        status, _ = fleet.seaweed.request("PUT", f"/{fleet.bucket}/{key}", bytes(body))
        assert status == 200
    proc = fleet.cli(fleet.machine("b"), "restore", backup_id)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "is corrupt" in proc.stderr and "is as it was" in proc.stderr
    assert not root.exists()
    assert _staging_beside(root) == []
