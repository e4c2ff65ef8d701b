"""A file over the store's per-file cap is not backed up, and the hook says so and applies
its on-failure rule instead of vouching for a backup that cannot bring the file back."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from preimage import Store
from preimage.store import quota as store_quota

Cli = Callable[..., subprocess.CompletedProcess[str]]


def _payload(command: str, cwd: Path) -> str:
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}, "cwd": str(cwd),
                       "session_id": "s1", "tool_use_id": "t1"})


@pytest.mark.parametrize(("flags", "decision"), [
    (["--on-failure", "allow"], None), (["--on-failure", "deny"], "deny"), ([], "ask"),
])
def test_a_capped_file_is_reported_not_backed_up_and_on_failure_applies(
    tmp_path: Path, cli: Cli, store: Store, flags: list[str], decision: str | None
) -> None:
    """`echo x > model.bin` over a 1 MiB cap: the answer says model.bin is NOT backed up and follows --on-failure."""
    store_quota.save(store, store_quota.Quota(max_file_size=1 << 20))
    work = tmp_path / "work"
    work.mkdir()
    (work / "model.bin").write_bytes(os.urandom(3 << 20))
    proc = cli("hook", "claude-code", *flags, input=_payload("echo x > model.bin", work),
               env={"PREIMAGE_SERVICE": "off"})
    answer = json.loads(proc.stdout)
    assert "NOT backed up" in answer["systemMessage"] and "model.bin" in answer["systemMessage"]
    assert "per-file cap" in answer["systemMessage"]
    assert answer["hookSpecificOutput"].get("permissionDecision") == decision


def test_a_file_under_the_cap_is_backed_up_silently(tmp_path: Path, cli: Cli, store: Store) -> None:
    """The same call on a file under the cap is backed up and nothing fails."""
    store_quota.save(store, store_quota.Quota(max_file_size=1 << 20))
    work = tmp_path / "work"
    work.mkdir()
    (work / "model.bin").write_bytes(os.urandom(1000))
    proc = cli("hook", "claude-code", input=_payload("echo x > model.bin", work),
               env={"PREIMAGE_SERVICE": "off"})
    answer = json.loads(proc.stdout)
    assert "systemMessage" not in answer
    assert "holds the state before this call" in answer["hookSpecificOutput"]["additionalContext"]
