"""Qwen Code's adapter, without its binary: its payloads in, answers Qwen Code obeys out."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from harnesses import BIN

from preimage.layer.harnesses import get_harness
from preimage.layer.harnesses.hook import handle


def _pre(command: str, cwd: Path, **tool_input: str) -> str:
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "run_shell_command",
                       "tool_input": {"command": command, **tool_input}, "cwd": str(cwd),
                       "session_id": "s", "tool_use_id": "call-1"})


def test_qwen_tools_read_as_neutral_tool_calls(tmp_path: Path) -> None:
    """run_shell_command (with `directory`), write_file and edit map to Bash/Write/Edit."""
    qwen = get_harness("qwen-code")
    event = qwen.event(json.loads(_pre("make", tmp_path, directory="sub")))
    assert event.phase == "pre" and event.call is not None
    assert event.call.tool == "Bash" and event.call.workdir == str(tmp_path / "sub")
    for tool, expected in (("write_file", "Write"), ("edit", "Edit")):
        call = qwen.event({"hook_event_name": "PreToolUse", "tool_name": tool, "cwd": "/",
                           "tool_input": {"file_path": "/p/a.py"}}).call
        assert call is not None and call.tool == expected and call.input["file_path"] == "/p/a.py"
    failed = qwen.event({"hook_event_name": "PostToolUseFailure", "tool_name": "edit",
                         "cwd": "/", "tool_input": {}, "error": "no match"})
    assert failed.phase == "post" and failed.result is not None
    assert failed.result.status == "error"


def test_qwen_gets_a_refusal_naming_the_rewrite_it_cannot_apply(home: Path,
                                                                tmp_path: Path) -> None:
    """A call the layer would rewrite (`git push --force`) is refused with the reversible
    command, since Qwen Code would run the original; an `rm` is not moved to the trash."""
    repo = tmp_path / "repo"   # apart from the test's store
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    out = json.loads(handle("qwen", [], _pre("git push --force origin main", repo)).stdout)
    specific = out["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "git push --force-with-lease origin main" in specific["permissionDecisionReason"]
    (repo / "build").mkdir()
    rm = json.loads(handle("qwen", [], _pre("rm -rf build", repo)).stdout)
    assert "updatedInput" not in json.dumps(rm) and "deny" not in json.dumps(rm)


def test_qwen_failed_backup_under_ask_is_refused(home: Path, tmp_path: Path) -> None:
    """Qwen Code cannot ask the user: a backup that failed under `ask` refuses the call."""
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    (tmp_path / "build").mkdir()
    os.environ["PREIMAGE_HOME"] = str(blocker / "store")
    try:
        out = json.loads(handle("qwen", ["--on-failure", "ask"],
                                _pre("rm -r build", tmp_path)).stdout)
    finally:
        os.environ["PREIMAGE_HOME"] = str(home)
    specific = out["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "NOT backed up" in specific["permissionDecisionReason"]


def test_qwen_install_writes_its_three_events_and_uninstall_restores(home: Path,
                                                                     tmp_path: Path) -> None:
    """`install qwen` adds the pre, post and failure hooks to .qwen/settings.json;
    `uninstall qwen` gives a pre-existing file back byte for byte."""
    settings = tmp_path / ".qwen" / "settings.json"
    settings.parent.mkdir()
    original = '{\n    "model": {"name": "qwen3-coder-plus"}\n}\n'
    settings.write_text(original)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([os.path.join(BIN, "preimage"), *args], cwd=tmp_path, text=True,
                              capture_output=True, timeout=120)

    assert cli("install", "qwen").returncode == 0
    hooks = json.loads(settings.read_text())["hooks"]
    assert sorted(hooks) == ["PostToolUse", "PostToolUseFailure", "PreToolUse"]
    assert hooks["PreToolUse"][0]["hooks"][0]["command"].startswith("preimage hook qwen")
    assert cli("uninstall", "qwen").returncode == 0
    assert settings.read_text() == original
