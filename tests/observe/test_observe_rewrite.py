"""The hook's rewrite into the supervised form (settings `observe: true`), for a harness
started without `preimage session`: made only where the call runs unasked anyway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import preimage
from preimage import Store
from preimage.layer.harnesses.hook import handle
from preimage.observe import unavailable_reason

pytestmark = pytest.mark.skipif(unavailable_reason() is not None,
                                reason=f"no supervision here: {unavailable_reason()}")

DELETE = 'f() { rm -rf "$1"; }; f build'


@pytest.fixture
def observing_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Layer settings with `observe: true`; the hooks decide in this process."""
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "config.yaml").write_text("observe: true\n")
    monkeypatch.setenv("PREIMAGE_SERVICE", "off")
    monkeypatch.delenv("PREIMAGE_SUPERVISOR", raising=False)
    return config


def _answer(command: str, cwd: Path, mode: str) -> dict[str, Any]:
    payload = {"hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": command}, "cwd": str(cwd), "tool_use_id": "toolu_7",
               "session_id": "s7", "permission_mode": mode}
    out = json.loads(handle("claude-code", [], json.dumps(payload)).stdout)
    return out.get("hookSpecificOutput", {})  # type: ignore[no-any-return]


def _after(command: str, cwd: Path) -> None:
    """The PostToolUse event Claude Code sends once the (rewritten) call has run."""
    payload = {"hook_event_name": "PostToolUse", "tool_name": "Bash",
               "tool_input": {"command": command}, "cwd": str(cwd), "tool_use_id": "toolu_7",
               "session_id": "s7", "tool_response": {"stdout": "", "stderr": ""}}
    handle("claude-code", [], json.dumps(payload))


def test_unasked_call_runs_supervised_and_undoes_by_call_id(
        tmp_path: Path, observing_settings: Path, store: Store) -> None:
    """In bypassPermissions mode the call becomes `preimage run …`; running it as the
    harness would leaves an observed backup that `undo toolu_7` reverts."""
    work = tmp_path / "work"
    (work / "build").mkdir(parents=True)
    (work / "build" / "app.o").write_text("object")
    answer = _answer(DELETE, work, "bypassPermissions")
    rewritten = answer["updatedInput"]["command"]
    assert rewritten.startswith("preimage run --tool-use-id toolu_7 --session s7")
    assert answer["permissionDecision"] == "allow"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    ran = subprocess.run(["bash", "-c", rewritten], cwd=work, env=env, capture_output=True,
                         text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    _after(rewritten, work)
    assert not (work / "build").exists()
    observed = [r for r in store.catalog.list_backups(None) if r.kind == "observed"]
    assert [(r.tool_call or {}).get("tool_use_id") for r in observed] == ["toolu_7"]
    assert preimage.undo("toolu_7", store=store).ok
    assert (work / "build" / "app.o").read_text() == "object"


def test_asking_session_keeps_the_command_and_says_why(tmp_path: Path,
                                                       observing_settings: Path) -> None:
    """Where the user's own rules would judge the call, it is read, not rewritten."""
    (tmp_path / "build").mkdir()
    answer = _answer(DELETE, tmp_path, "default")
    assert "updatedInput" not in answer
    assert "not observed: the supervised form would be judged by your permission rules" \
        in answer["additionalContext"]


def test_read_only_and_session_calls_are_left_alone(tmp_path: Path, observing_settings: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only call, and any call inside `preimage session`, keep their text."""
    (tmp_path / "build").mkdir()
    assert "updatedInput" not in _answer("ls -la", tmp_path, "bypassPermissions")
    monkeypatch.setenv("PREIMAGE_SUPERVISOR", str(tmp_path / "boundary.sock"))
    assert "updatedInput" not in _answer(DELETE, tmp_path, "bypassPermissions")


def test_what_only_supervision_saw_is_undone_with_the_call(
        tmp_path: Path, observing_settings: Path, store: Store) -> None:
    """A call the reading cannot follow (`python3 -c` writing outside the workspace): the
    reading backs up the workspace, the supervised run sees the file it really wrote, and
    the observed backup is a part of the reading's, so `undo toolu_7` — or of the backup
    the model was told — brings that file back."""
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("old\n")
    command = f"python3 -c \"open({str(outside)!r}, 'w').write('new')\""
    answer = _answer(command, work, "bypassPermissions")
    rewritten = answer["updatedInput"]["command"]
    assert "--part-of" in rewritten
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    ran = subprocess.run(["bash", "-c", rewritten], cwd=work, env=env, capture_output=True,
                         text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    _after(rewritten, work)
    assert outside.read_text() == "new"
    rows = store.catalog.list_backups(None)
    (layer,) = [r for r in rows if r.kind == "layer"]
    (observed,) = [r for r in rows if r.kind == "observed"]
    assert observed.parent_id == layer.id
    assert preimage.undo("toolu_7", store=store).ok
    assert outside.read_text() == "old\n"


def test_a_part_without_its_after_state_stops_the_undo_before_anything_is_written(
        tmp_path: Path, store: Store) -> None:
    """A call whose observed part has no post-call backup (`preimage run --no-post`): its
    undo refuses, naming `restore`, and writes nothing — not even the parts it could."""
    from preimage.engine.undo import capture_after
    from preimage.observe.supervisor import run_command

    work = tmp_path / "work"
    work.mkdir()
    (work / "kept.txt").write_text("before\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("old\n")
    call = preimage.capture([f"file://{work}"], store=store, kind="layer", tier="workspace")
    run_command(["bash", "-c", f"echo new > {outside}; echo after > {work}/kept.txt"],
                store=store, parent_id=call.id, post_call=False, log=None)
    capture_after(call.id, store=store)
    with pytest.raises(preimage.UsageError, match=f"preimage restore {call.id}"):
        preimage.undo(call.id, store=store)
    assert outside.read_text() == "new\n"
    assert (work / "kept.txt").read_text() == "after\n"
