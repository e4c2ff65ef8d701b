"""`install` and `uninstall` against the real harness binaries: the settings a harness
accepts are accepted, the hook then runs, and uninstall gives back what was there."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from harnesses import BIN, Sandbox, preimage, seed_opencode_dir
from model_server import Call, ModelServer, Script

pytestmark = [pytest.mark.harness, pytest.mark.slow]

# Gemini CLI's own settings, as a user writes them: comments, a URL with "//" in a string,
# a trailing comma — Gemini CLI reads them (strip-json-comments), so install must too.
COMMENTED = """{
  // my own settings; preimage must keep them
  "security": {"auth": {"selectedType": "gemini-api-key"},
               "folderTrust": {"enabled": false}},  /* approvals off here */
  "ui": {"theme": "https://example.invalid//not-a-comment"},
}
"""


def box_env(box: Sandbox, root: Path) -> dict[str, str]:
    store = root / "preimage"
    box.extra_env.update({"PREIMAGE_HOME": str(store / "store"),
                          "PREIMAGE_CONFIG_DIR": str(store / "config"),
                          "PREIMAGE_LOG": str(store / "hook.log")})
    return box.env()


def decisions(env: dict[str, str]) -> list[dict[str, object]]:
    log = Path(env["PREIMAGE_LOG"])
    lines = log.read_text().splitlines() if log.exists() else []
    return [e for e in map(json.loads, lines) if e.get("event") == "decision"]


def test_gemini_settings_with_comments_installed_and_given_back_byte_for_byte(
        model: ModelServer, tmp_path: Path) -> None:
    """A project `.gemini/settings.json` with comments and a trailing comma: install accepts
    it, the real Gemini CLI runs the hook from it, and uninstall writes the original bytes."""
    route = model.route(Script([Call("run_shell_command", {"command": "ls -la"})]))
    box = Sandbox("gemini", tmp_path, route.url, path_dirs=[BIN])
    env = box_env(box, tmp_path)
    settings = box.project / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(COMMENTED)
    preimage("install", "gemini", env=env, cwd=box.project)
    run = box.run()
    assert run.returncode == 0, run.stderr[-3000:]
    assert [d["tool"] for d in decisions(env)] == ["Bash"]          # the hook ran
    preimage("uninstall", "gemini", env=env, cwd=box.project)
    assert settings.read_text() == COMMENTED


def test_opencode_uninstall_removes_what_install_caused(
        model: ModelServer, tmp_path: Path) -> None:
    """In a project without `.opencode/`, install creates it; OpenCode then fills it with its
    plugin package and a `.gitignore`; uninstall removes all of that — and keeps a file
    the user put there meanwhile."""
    route = model.route(Script([Call("bash", {"command": "ls -la", "description": "list"})]))
    box = Sandbox("opencode", tmp_path, route.url, path_dirs=[BIN])
    env = box_env(box, tmp_path)
    folder = box.project / ".opencode"
    shutil.rmtree(folder)                  # a project where OpenCode never ran
    preimage("install", "opencode", env=env, cwd=box.project)
    # What OpenCode's first start there installs from the registry (about a minute),
    # from setup's one install (see fixtures/harnesses.py).
    seed_opencode_dir(folder)
    run = box.run()
    assert run.returncode == 0, run.stderr[-3000:]
    assert [d["tool"] for d in decisions(env)] == ["Bash"]          # the plugin ran
    assert (folder / ".gitignore").exists()                         # OpenCode wrote it
    preimage("uninstall", "opencode", env=env, cwd=box.project)
    assert not folder.exists()
    # again, with a file of the user's in the folder: it stays, with the folder
    preimage("install", "opencode", env=env, cwd=box.project)
    seed_opencode_dir(folder)
    (folder / "agent").mkdir()
    (folder / "agent" / "mine.md").write_text("my agent\n")
    preimage("uninstall", "opencode", env=env, cwd=box.project)
    assert sorted(p.name for p in folder.iterdir()) == ["agent"]


def test_codex_untrusted_hook_is_reported_not_installed_silently(
        model: ModelServer, tmp_path: Path) -> None:
    """Codex skips a hook the user has not trusted, without a word: `install` says so and
    what to do, and `install --list` shows the hook as not trusted — as the real Codex run
    (no decision logged) proves it is."""
    route = model.route(Script([Call("exec_command", {"cmd": "ls -la"})]))
    box = Sandbox("codex", tmp_path, route.url, path_dirs=[BIN])
    env = box_env(box, tmp_path)
    installed = preimage("install", "codex", env=env, cwd=box.project)
    assert "trust" in installed.stderr and "/hooks" in installed.stderr
    argv = [a for a in box.argv("Do the task.") if a != "--dangerously-bypass-hook-trust"]
    run = subprocess.run(argv, cwd=box.project, env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert ".codex" in route.tool_results[0]            # Codex ran the call…
    assert decisions(env) == []                         # …and never the hook
    listing = preimage("install", "--list", env=env, cwd=box.project).stdout
    row = next(r for r in listing.splitlines() if r.startswith("codex") and " project " in r)
    assert "NOT TRUSTED by Codex" in row and "/hooks" in row
