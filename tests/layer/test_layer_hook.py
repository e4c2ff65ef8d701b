"""The Claude Code hook: stdin JSON to stdout JSON, whatever arrives and whatever fails."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from layer_world import World

Cli = Callable[..., subprocess.CompletedProcess[str]]


def payload(command: str, cwd: Path, **extra: Any) -> str:
    """A PreToolUse payload for a Bash call."""
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}, "cwd": str(cwd),
                       "session_id": "s1", "tool_use_id": "t1", **extra})


@pytest.mark.parametrize("stdin", [
    "", "not json", "[1, 2]", '{"tool_name": 5}', '{"tool_name": "Bash", "tool_input": "rm -rf /"}',
    '{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "rm x"}}',
    '{"tool_name": "Bash", "tool_input": {"command": "rm -rf \\"unterminated"}}',
    '{"tool_name": "SomeNewTool", "tool_input": {"x": 1}}',
])
def test_malformed_or_unknown_payload_is_allowed(stdin: str, home: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Anything the hook cannot read is let through with a JSON answer that decides nothing."""
    from preimage.layer.harnesses.hook import run_hook

    monkeypatch.chdir(tmp_path)
    answer = run_hook(stdin)
    json.dumps(answer)
    assert answer.get("hookSpecificOutput", {}).get("permissionDecision") in (None, "allow")


def test_hook_process_answers_json_to_garbage(cli: Cli, home: Path, tmp_path: Path) -> None:
    """A payload that is not JSON gets a JSON answer that says so and decides nothing."""
    proc = cli("hook", "claude-code", input="\x00 not json {", cwd=tmp_path)
    assert proc.returncode == 0
    answer = json.loads(proc.stdout)
    assert "nothing was backed up" in answer["systemMessage"]
    assert "hookSpecificOutput" not in answer
    assert "Traceback" not in proc.stderr


def test_malformed_payload_is_logged(cli: Cli, home: Path, tmp_path: Path) -> None:
    """A payload that is not JSON leaves a line in the hook log saying so."""
    cli("hook", "claude-code", input="{oops")
    log = (tmp_path / "hook.log").read_text()
    assert '"event": "malformed"' in log


def test_read_only_call_passes_silently(cli: Cli, home: Path, world: World) -> None:
    """A read-only command gets an empty answer and no backup."""
    proc = cli("hook", "claude-code", input=payload("ls -la | grep x", world.proj),
               env=world.env | {"PREIMAGE_HOME": str(home)})
    assert json.loads(proc.stdout) == {}
    assert not (home / "catalog.sqlite").exists()


def test_force_push_is_rewritten_with_updated_input(cli: Cli, home: Path, world: World) -> None:
    """`git push --force` comes back as --force-with-lease with the backup named and no
    decision of preimage's (the user's own rules judge it, as they would the original);
    `--approve` answers allow."""
    proc = cli("hook", "claude-code", "--approve",
               input=payload("git push --force origin main", world.proj),
               env=world.env | {"PREIMAGE_HOME": str(home)})
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
    proc = cli("hook", "claude-code", input=payload("git push --force origin main", world.proj),
               env=world.env | {"PREIMAGE_HOME": str(home)})
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    assert "permissionDecision" not in out
    assert out["updatedInput"] == {"command": "git push --force-with-lease origin main"}
    assert "preimage backup " in out["additionalContext"]


def test_unwritable_store_says_so_and_lets_the_call_run(cli: Cli, world: World,
                                                        tmp_path: Path) -> None:
    """With PREIMAGE_HOME under a regular file and `--on-failure allow` the answer lets the
    call run and says it is NOT backed up."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory")
    env = world.env | {"PREIMAGE_HOME": str(blocker / "store")}
    proc = cli("hook", "claude-code", "--on-failure", "allow",
               input=payload("rm -rf ~/Documents", world.home), env=env)
    answer = json.loads(proc.stdout)
    assert proc.returncode == 0
    assert "NOT backed up" in answer["systemMessage"]
    assert "could NOT back up" in answer["hookSpecificOutput"]["additionalContext"]
    assert "permissionDecision" not in answer["hookSpecificOutput"]


@pytest.mark.parametrize("flags", [[], ["--on-failure", "ask"]])
def test_unwritable_store_asks_by_default(cli: Cli, world: World, tmp_path: Path,
                                          flags: list[str]) -> None:
    """A failed backup is a question to the user, by default (fail closed) and with
    `--on-failure ask`; a harness that cannot ask denies (tests/harness)."""
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    env = world.env | {"PREIMAGE_HOME": str(blocker / "store")}
    proc = cli("hook", "claude-code", *flags,
               input=payload("rm -rf ~/Documents", world.home), env=env)
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "ask"
    assert "NOT backed up" in out["permissionDecisionReason"]


@pytest.mark.parametrize(("harness", "flags", "expected"), [
    ("claude-code", [], "ask"), ("claude-code", ["--on-failure", "deny"], "deny"),
    ("claude-code", ["--on-failure", "allow"], None), ("codex", [], "deny"),
])
def test_unreadable_settings_are_a_failed_backup(cli: Cli, world: World, tmp_path: Path,
                                                 harness: str, flags: list[str],
                                                 expected: str | None) -> None:
    """Settings that cannot be read (a broken config.yaml) leave the call unprotected: the
    hook answers as for a failed backup — it asks by default, and a harness that cannot
    ask refuses; `--on-failure` on the hook's command line still chooses."""
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.yaml").write_text("mode: [unclosed\n")
    env = world.env | {"PREIMAGE_CONFIG_DIR": str(config)}
    proc = cli("hook", harness, *flags, input=payload("rm -rf ~/Documents", world.home),
               env=env)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    answer = json.loads(proc.stdout)
    assert "NOT backed up" in answer["systemMessage"]
    assert "config.yaml" in answer["systemMessage"]
    out = answer.get("hookSpecificOutput", {})
    assert out.get("permissionDecision") == expected
    if expected:
        assert "settings unreadable" in out["permissionDecisionReason"]
    # after the call, there is nothing to decide: the message alone
    after = json.loads(payload("rm -rf ~/Documents", world.home))
    after["hook_event_name"] = "PostToolUse"
    proc = cli("hook", harness, *flags, input=json.dumps(after), env=env)
    answer = json.loads(proc.stdout)
    assert "settings unreadable" in answer["systemMessage"]
    assert "permissionDecision" not in answer.get("hookSpecificOutput", {})


def test_run_hook_answers_unreadable_settings_alike(world: World, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedding entry point answers unreadable settings as the hook does: it asks."""
    from preimage.layer.harnesses.hook import run_hook

    (tmp_path / "config.yaml").write_text("- not a mapping\n")
    monkeypatch.setenv("PREIMAGE_CONFIG_DIR", str(tmp_path))
    answer = run_hook(payload("rm -rf ~/Documents", world.home))
    assert answer["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert "settings unreadable" in answer["systemMessage"]


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))


def test_full_store_says_so_and_lets_the_call_run(home: Path, world: World) -> None:
    """When the store's disk is full (writes fail with EFBIG) the hook still answers at once.

    (A truncation needs a copy; a plain rm would be a rename, which needs no space.)"""
    big = world.home / "Documents" / "big.bin"
    big.write_bytes(os.urandom(512 * 1024))
    env = {**os.environ, **world.env, "PREIMAGE_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-m", "preimage", "hook", "claude-code"],
                          input=payload("truncate -s 0 ~/Documents/big.bin", world.home),
                          capture_output=True,
                          text=True, env=env, preexec_fn=_limit_file_size, timeout=120)
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert "NOT backed up" in answer["systemMessage"]
    assert big.exists()


def test_install_keeps_existing_settings(cli: Cli, tmp_path: Path) -> None:
    """`install claude-code` adds the hook once and keeps every other key and hook."""
    project = tmp_path / "p"
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    mine = {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter"}]}
    settings.write_text(json.dumps({"model": "opus", "env": {"A": "1"},
                                    "hooks": {"PreToolUse": [mine], "Stop": [{"hooks": []}]}}))
    for _ in range(2):
        proc = cli("install", "claude-code", "--project", str(project))
        assert proc.returncode == 0, proc.stderr
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["env"] == {"A": "1"} and "Stop" in data["hooks"]
    pre = data["hooks"]["PreToolUse"]
    assert pre[0] == mine
    ours = [h for g in pre for h in g["hooks"] if "hook claude-code" in h["command"]]
    assert len(ours) == 1 and ours[0]["type"] == "command"


def test_install_refuses_to_clobber_invalid_settings(cli: Cli, tmp_path: Path) -> None:
    """A settings.json that is not JSON is left exactly as it was, with exit code 2."""
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text("{ not json")
    proc = cli("install", "claude-code", "--project", str(tmp_path))
    assert proc.returncode == 2
    assert settings.read_text() == "{ not json"


def test_guard_does_not_run_when_backup_fails_and_told_to_deny(cli: Cli, world: World,
                                                               tmp_path: Path) -> None:
    """`guard --on-failure deny` leaves the files alone when the store cannot be written."""
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    env = world.env | {"PREIMAGE_HOME": str(blocker / "store")}
    proc = cli("guard", "--on-failure", "deny", "--", "rm -rf ~/Documents", env=env,
               cwd=world.home)
    assert proc.returncode == 3
    assert (world.home / "Documents" / "notes.md").exists()
    assert "NOT back up" in proc.stderr or "not run" in proc.stderr


def test_target_no_connector_can_capture_is_reported(cli: Cli, home: Path, world: World) -> None:
    """A call whose system cannot be captured here is answered as NOT backed up, never silently."""
    proc = cli("hook", "claude-code", input=payload("kubectl delete namespace shop", world.proj),
               env=world.env | {"PREIMAGE_HOME": str(home)})
    answer = json.loads(proc.stdout)
    assert "NOT backed up" in answer["systemMessage"]
    assert "k8s://preimage-test/shop" in answer["systemMessage"]


def test_the_hook_log_is_rotated_and_keeps_the_last_two_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its size limit the hook log becomes `hook.log.1` (replacing the one before) and
    a new `hook.log` starts: two files at most, however long agents run, every line whole
    in one of them; a hook that finds the log already rotated by another leaves the new
    one in place."""
    from preimage.layer.harnesses import hook

    log = tmp_path / "logs" / "hook.log"
    monkeypatch.setenv("PREIMAGE_LOG", str(log))
    monkeypatch.setattr(hook, "LOG_LIMIT", 2000)
    for n in range(100):
        hook.log({"event": "decision", "n": n})
    rotated = log.with_name("hook.log.1")
    lines = [json.loads(x) for f in (rotated, log) for x in f.read_text().splitlines()]
    numbers = [line["n"] for line in lines]
    assert numbers == list(range(numbers[0], 100))   # the newest, in order, none cut
    assert 0 < numbers[0] < 100 - 10 and log.stat().st_size <= 2000 + 200
    assert sorted(p.name for p in log.parent.iterdir()) == ["hook.log", "hook.log.1"]
    full = os.stat(rotated)
    hook._rotate(log, full)   # another hook rotated first: this name is the new log's
    assert log.exists() and rotated.stat().st_ino == full.st_ino
