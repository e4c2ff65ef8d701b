"""The backup layer's hook, in its own process, in front of a browser agent on a real isso.

The agent's Chromium (this test process) holds its profile open; the hook
process captures with a profile of preimage's own that is signed in to the
app (``PREIMAGE_BROWSER_PROFILE``), decides from the agent's calls which
thread is at risk, and the backup it names restores the deleted comments.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures.isso import IssoServer, seed_thread
from preimage import Store

from .conftest import CliRunner, moderator_deletes

pytestmark = [pytest.mark.browser, pytest.mark.webapp]


def _hook(tool: str, tool_input: dict[str, Any], env: dict[str, str], cwd: Path) -> Any:
    payload = json.dumps({"hook_event_name": "PreToolUse", "tool_name": tool,
                          "tool_input": tool_input, "cwd": str(cwd), "session_id": "agent-1",
                          "tool_use_id": tool})
    proc = subprocess.run([sys.executable, "-m", "preimage", "hook", "claude-code"],
                          input=payload, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_hook_backs_up_the_thread_a_moderator_agent_deletes_from(
    isso_server: IssoServer, profile: Path, cli_profile: Path, preimage_cli: CliRunner,
    store: Store, tmp_path: Path,
) -> None:
    """navigate (admin page filtered to a thread) → click "Delete" → the hook captured that
    thread through its own signed-in profile; the agent deletes; restore brings it back."""
    thread = "/blog/hooked"
    ids = seed_thread(isso_server, thread)
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.yaml").write_text(json.dumps({
        "mcp": {"playwright": {"kind": "browser", "profile": str(profile)}},
        "sites": {isso_server.url: "isso"},
    }))
    env = {**os.environ, "PREIMAGE_HOME": str(store.home),
           "PREIMAGE_CONFIG_DIR": str(config), "PREIMAGE_BROWSER_PROFILE": str(cli_profile)}
    page = f"{isso_server.url}/admin/?comment_search_url=https://blog.example{thread}"
    assert _hook("mcp__playwright__browser_navigate", {"url": page}, env, tmp_path) == {}
    answer = _hook("mcp__playwright__browser_click",
                   {"element": "Delete comment", "ref": "e12"}, env, tmp_path)
    context = answer["hookSpecificOutput"]["additionalContext"]
    backups = preimage_cli("list")
    assert len(backups) == 1 and backups[0]["id"] in context
    assert [s["target"] for s in backups[0]["snapshots"]] == [
        f"web+isso://127.0.0.1:{isso_server.port}{thread}?profile={cli_profile}"]

    moderator_deletes(isso_server, profile, thread, [ids["root1"], ids["reply3"], ids["root2"]])
    restored = preimage_cli("restore", backups[0]["id"])
    assert restored["ok"]
    score = preimage_cli("score", backups[0]["id"])
    assert (score["content"], score["metadata"]) == (1.0, 1.0)
    assert len([c for c in isso_server.comments(thread) if c["mode"] == 1]) == 6
