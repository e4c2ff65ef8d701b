"""Session mode: a whole harness supervised, the hooks marking each tool call's window.

The harness here is a bash script that does what a harness does around a tool
call: it runs the real hook (`preimage hook claude-code`, JSON on stdin)
before and after the call, and makes changes of its own in between.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import preimage
from preimage import Store
from preimage.observe import unavailable_reason

pytestmark = pytest.mark.skipif(unavailable_reason() is not None,
                                reason=f"no supervision here: {unavailable_reason()}")


def _hook(event: str, call: str, command: str, cwd: Path) -> str:
    payload = {"hook_event_name": event, "tool_name": "Bash", "tool_use_id": call,
               "tool_input": {"command": command}, "session_id": "s1", "cwd": str(cwd)}
    hook = shlex.join([sys.executable, "-m", "preimage", "hook", "claude-code"])
    return f"printf '%s' {shlex.quote(json.dumps(payload))} | {hook} >/dev/null"


def _session(script: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PREIMAGE_HOME": str(home), "PREIMAGE_SERVICE": "off"}
    return subprocess.run([sys.executable, "-m", "preimage", "session", "--session", "s1", "--",
                           "bash", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def _targets(store: Store, backup: str) -> set[str]:
    from preimage.engine.observed_links import held_targets

    held = held_targets(store, store.catalog.get(backup))
    return {t.rsplit("/", 1)[-1] for t in held}


def test_each_call_gets_its_backup_and_the_harness_its_own(tmp_path: Path, home: Path,
                                                           store: Store) -> None:
    """Changes inside a call's hooks go to its backup; the harness's own, between calls."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a").write_text("a\n")
    script = "\n".join([
        _hook("PreToolUse", "t1", "rm a", work), "rm a", _hook("PostToolUse", "t1", "rm a", work),
        "echo harness > between",
        _hook("PreToolUse", "t2", "echo c > c", work), "echo c > c",
        _hook("PostToolUse", "t2", "echo c > c", work),
    ])
    ran = _session(script, work, home)
    assert ran.returncode == 0, ran.stderr
    observed = [r for r in reversed(store.catalog.list_backups(None)) if r.kind == "observed"]
    assert [(r.tool_call or {}).get("tool_use_id") for r in observed] == ["t1", None, "t2"]
    assert [_targets(store, r.id) for r in observed] == [
        {"a", "work?depth=0"}, {"between", "work?depth=0"}, {"c", "work?depth=0"}]
    result = preimage.undo("t1", store=store)
    assert result.ok
    assert (work / "a").read_text() == "a\n"
    assert (work / "c").exists() and (work / "between").exists()


def test_overlapping_calls_share_one_backup(tmp_path: Path, home: Path, store: Store) -> None:
    """Two calls whose windows overlap land in one backup, sealed when the last one ends."""
    work = tmp_path / "work"
    work.mkdir()
    script = "\n".join([
        _hook("PreToolUse", "p1", "echo x > x", work), _hook("PreToolUse", "p2", "echo y > y",
                                                            work),
        "echo x > x", _hook("PostToolUse", "p1", "echo x > x", work),
        "echo y > y", _hook("PostToolUse", "p2", "echo y > y", work),
    ])
    ran = _session(script, work, home)
    assert ran.returncode == 0, ran.stderr
    observed = [r for r in store.catalog.list_backups(None) if r.kind == "observed"]
    assert len(observed) == 1, [(r.label, [s.target for s in r.snapshots]) for r in observed]
    assert _targets(store, observed[0].id) == {"x", "y", "work?depth=0"}
    preimage.restore(observed[0].id, store=store)
    assert sorted(p.name for p in work.iterdir()) == []


def test_in_a_session_the_hook_leaves_file_changes_to_the_supervisor(
        tmp_path: Path, home: Path, store: Store) -> None:
    """A file-changing call in a session is backed up once, by the supervisor: the hook
    takes no reading backup of its own, and its decision says why."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("old\n")
    command = "sed -i s/old/new/ notes.txt"
    script = "\n".join([_hook("PreToolUse", "w1", command, work), command,
                        _hook("PostToolUse", "w1", command, work)])
    ran = _session(script, work, home)
    assert ran.returncode == 0, ran.stderr
    kinds = [r.kind for r in store.catalog.list_backups(None)]
    assert [k for k in kinds if k != "post-call"] == ["observed"], kinds   # post-call: undo's
    decisions = [json.loads(line) for line in Path(os.environ["PREIMAGE_LOG"]).read_text()
                 .splitlines() if '"decision"' in line]
    assert any("recorded by the session's supervisor" in " ".join(d.get("notes", []))
               for d in decisions), decisions
    assert preimage.undo("w1", store=store).ok
    assert (work / "notes.txt").read_text() == "old\n"


def test_a_hook_whose_supervisor_does_not_answer_still_backs_up(
        tmp_path: Path, home: Path, store: Store) -> None:
    """PREIMAGE_SUPERVISOR naming no live supervisor: the hook backs the call up itself."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("old\n")
    payload = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "n1",
               "tool_input": {"command": "sed -i s/old/new/ notes.txt"}, "session_id": "s1",
               "cwd": str(work)}
    env = {**os.environ, "PREIMAGE_HOME": str(home), "PREIMAGE_SERVICE": "off",
           "PREIMAGE_SUPERVISOR": str(tmp_path / "no-such.sock")}
    ran = subprocess.run([sys.executable, "-m", "preimage", "hook", "claude-code"],
                         input=json.dumps(payload), cwd=work, env=env, capture_output=True,
                         text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    backups = store.catalog.list_backups(None)
    assert len(backups) == 1 and backups[0].kind != "observed"
    assert any(s.target.endswith("notes.txt") for s in backups[0].snapshots)
