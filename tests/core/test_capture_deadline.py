"""A capture that outlives the hook's ``--timeout`` is abandoned and reclaimed, never
completed: the call it was for runs meanwhile, so it would hold a mix of before and after."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

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


def _outliving_the_waiter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every capture's checks wait until its waiter has given up: a capture that outlives
    the hook's timeout however fast the machine reads the tree."""
    from preimage.engine import capture, deadline

    def check_for(backup_id: str) -> Callable[[], None]:
        event = deadline._event.get()
        check = deadline.check_for(backup_id)

        def late_check() -> None:
            if event is not None:
                event.wait(60)
            check()

        return late_check

    monkeypatch.setattr(capture, "check_for", check_for)


def test_a_timed_out_hook_capture_in_a_resident_process_is_abandoned_not_completed(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a long-lived process (the decision service) the capture stops, is marked abandoned and leaves no blob."""
    _outliving_the_waiter(monkeypatch)
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
