"""A plain restore of an MCP call's workspace snapshot puts back the workspace, not the home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from preimage.layer.call import ToolCall
from preimage.layer.deciding.backup_layer import BackupLayer


def test_plain_restore_of_an_mcp_workspace_snapshot_leaves_the_home(
        home: Path, tmp_path: Path) -> None:
    """An MCP call no rule reads is snapshotted with the home's state as a precaution; a
    plain restore brings back the workspace, leaves the home as it is now and says how to
    restore it too (`--only`), which then works."""
    user, project = tmp_path / "user", tmp_path / "project"
    (user / ".config" / "app").mkdir(parents=True)
    project.mkdir()
    (user / ".config" / "app" / "conf").write_text("before\n")
    (project / "data.txt").write_text("before\n")
    env = dict(os.environ, HOME=str(user))
    decision = BackupLayer(env=env).before(
        ToolCall.mcp("mystery", "run", {"x": 1}, cwd=str(project)))
    assert decision.backup_id and decision.tier is not None
    assert decision.tier.value == "workspace"
    home_targets = [t for t in decision.targets if t.startswith(user.as_uri())]
    assert home_targets                                   # the precaution was taken
    (project / "data.txt").write_text("by the call\n")
    (user / ".config" / "app" / "conf").write_text("the user's later edit\n")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "preimage", *args], capture_output=True,
                              text=True, env=env, timeout=300)

    plain = cli("restore", decision.backup_id, "--json")
    assert plain.returncode == 0, plain.stderr
    assert (project / "data.txt").read_text() == "before\n"
    assert (user / ".config" / "app" / "conf").read_text() == "the user's later edit\n"
    assert "not restored by default" in plain.stdout and "--only" in plain.stdout
    conf = next(t for t in home_targets if "/.config" in t)
    asked = cli("restore", decision.backup_id, "--only", conf)
    assert asked.returncode == 0, asked.stderr
    assert (user / ".config" / "app" / "conf").read_text() == "before\n"
    assert json.loads(plain.stdout)
