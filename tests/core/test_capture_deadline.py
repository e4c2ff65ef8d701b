"""A capture that outlives the hook's ``--timeout`` is abandoned and reclaimed, never
completed: the call it was for runs meanwhile, so it would hold a mix of before and after."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from preimage import Store
from preimage.layer.harnesses.hook import handle
from preimage.store.backend import BackupRow

Cli = Callable[..., subprocess.CompletedProcess[str]]


def _tree(root: Path, n: int = 300) -> Path:
    root.mkdir(parents=True)
    for i in range(n):
        (root / f"f{i:03}").write_bytes(os.urandom(20_000))
    return root


def _payload(command: str, cwd: Path) -> str:
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}, "cwd": str(cwd),
                       "session_id": "s1", "tool_use_id": "t1"})


def _settled(store: Store) -> list[BackupRow]:
    """The backups once the hook's backup exists and no capture runs any more (a capture
    left behind ends soon)."""
    for _ in range(600):
        rows = store.catalog.list_backups(None)
        if rows and not any(r.status == "open" and store.catalog.lease_held(r.id) for r in rows):
            return rows
        time.sleep(0.1)
    raise AssertionError("a capture is still running a minute after its hook answered")


def test_a_timed_out_hook_capture_in_a_resident_process_is_abandoned_not_completed(
    tmp_path: Path, store: Store
) -> None:
    """In a long-lived process (the decision service) the capture stops, is marked abandoned and leaves no blob."""
    data = _tree(tmp_path / "proj" / "data")
    outcome = handle("claude-code", ["--timeout", "0.05", "--on-failure", "allow"],
                     _payload(f"chmod -R 600 {data}", data.parent), cwd=str(data.parent))
    assert "NOT backed up" in outcome.stdout
    rows = _settled(store)
    assert rows and all(r.status == "abandoned" for r in rows), [r.status for r in rows]
    assert not list(store.blobs.digests())


def test_a_timed_out_hook_process_leaves_nothing_to_restore_or_reclaim(
    tmp_path: Path, cli: Cli, store: Store
) -> None:
    """The in-process hook that gave up leaves an abandoned backup, no blobs, and `restore last` finds nothing."""
    data = _tree(tmp_path / "proj" / "data")
    proc = cli("hook", "claude-code", "--timeout", "0.05", "--on-failure", "allow",
               input=_payload(f"chmod -R 600 {data}", data.parent),
               env={"PREIMAGE_SERVICE": "off"})
    assert "NOT backed up" in json.loads(proc.stdout)["systemMessage"]
    rows = _settled(store)
    assert rows and all(r.status == "abandoned" for r in rows), [r.status for r in rows]
    assert not list(store.blobs.digests())
    restored = cli("restore", "last")
    assert restored.returncode == 2 and "no backup" in restored.stderr
