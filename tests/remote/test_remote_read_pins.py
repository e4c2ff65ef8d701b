"""A backup one machine is restoring is never forgotten or pruned by another machine."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fleet_world import Fleet, make_tree, tree_digest

pytestmark = [pytest.mark.s3, pytest.mark.postgres]


def test_forget_and_prune_on_another_machine_wait_for_a_restore(
        fleet: Fleet, tmp_path: Path) -> None:
    """While machine A restores a backup (stopped mid-write), machine B's `forget ID --prune`
    is refused and a policy forget keeps it; A's restore then finishes whole."""
    root = tmp_path / "work"
    make_tree(root, 6)
    expected = tree_digest(root)
    a, b = fleet.machine("a"), fleet.machine("b")
    backup_id = fleet.cli(a, "capture", f"file://{root}", check=True).stdout.strip()
    changed = tmp_path / "changed"
    make_tree(changed, 7)   # other content: the restore has files to write
    for path in changed.rglob("*.py"):
        (root / path.relative_to(changed)).write_bytes(path.read_bytes())
    env = {**fleet.env(PREIMAGE_CRASH_AT="restore-write:2:stop"), "PREIMAGE_HOME": str(a),
           "PREIMAGE_CONFIG_DIR": str(a / "config"), "PREIMAGE_SERVICE": "off"}
    proc = subprocess.Popen([sys.executable, "-m", "preimage", "restore", backup_id], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _pid, status = os.waitpid(proc.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), "the restore did not reach its write"
        refused = fleet.cli(b, "forget", backup_id, "--prune")
        assert refused.returncode != 0 and "being read" in refused.stderr
        kept = fleet.cli(b, "forget", "--keep-last", "1", "--prune", check=True)
        assert backup_id in kept.stdout and "being read" in kept.stdout
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        _out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert tree_digest(root) == expected
