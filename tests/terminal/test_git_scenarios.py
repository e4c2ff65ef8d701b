"""The git regret scenarios (T-git-*), end to end through the CLI."""

from __future__ import annotations

import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from terminal_kit import as_json, git, git_views, sh

CliResult = subprocess.CompletedProcess[str]

SCENARIOS = {
    # Gemini CLI issue 15580, Claude Code issue 4541
    "T-git-reset-hard": "git fetch && git reset --hard origin/main",
    # Claude Code issues 16098, 70363
    "T-git-checkout-dot": "git reset HEAD && git checkout -- .",
    # git-flight-rules PR 186: the ignored .env.local goes too
    "T-git-clean-fdx": "git clean -fdx",
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario_restores_every_git_view(
    scenario: str, repo: Path, cli: Callable[..., CliResult]
) -> None:
    """After the destructive call and a restore, status, diffs, stashes and history are as before."""
    before = git_views(repo)
    backup_id = cli("capture", f"git://{repo}", check=True).stdout.strip()
    sh(SCENARIOS[scenario], cwd=repo)
    assert git_views(repo) != before, "the scenario's command should have changed the repository"

    result = as_json(cli("restore", backup_id, "--json", check=True))
    assert result["ok"]

    doc = as_json(cli("score", backup_id, "--json", check=True))
    assert doc["content"] == 1.0, doc["differences"]
    assert doc["metadata"] == 1.0, doc["differences"]
    assert git_views(repo) == before


def test_reset_hard_brings_back_the_facts_of_the_case(
    repo: Path, cli: Callable[..., CliResult]
) -> None:
    """The new files, both diffs and the staged index come back byte for byte after reset --hard."""
    staged = git(repo, "diff", "--cached", "--binary")
    unstaged = git(repo, "diff", "--binary")
    local_head = git(repo, "rev-parse", "HEAD")
    backup_id = cli("capture", f"git://{repo}", check=True).stdout.strip()
    sh(SCENARIOS["T-git-reset-hard"], cwd=repo)
    assert not (repo / "src" / "new_module.py").exists()
    cli("restore", backup_id, check=True)
    assert (repo / "src" / "new_module.py").read_text() == "NEW = 1\n"
    assert (repo / "notes" / "todo.txt").read_text() == "untracked notes\n"
    assert git(repo, "diff", "--cached", "--binary") == staged
    assert git(repo, "diff", "--binary") == unstaged
    assert git(repo, "rev-parse", "HEAD") == local_head
    assert "local work, not pushed" in git(repo, "log", "-1", "--format=%s")


def test_clean_fdx_brings_back_ignored_secrets_with_their_mode(
    repo: Path, cli: Callable[..., CliResult]
) -> None:
    """`git clean -fdx` deletes .env.local; the restore brings it back with mode 600 and its mtime."""
    env_file = repo / ".env.local"
    st = env_file.stat()
    backup_id = cli("capture", f"git://{repo}", check=True).stdout.strip()
    sh(SCENARIOS["T-git-clean-fdx"], cwd=repo)
    assert not env_file.exists()
    cli("restore", backup_id, check=True)
    assert env_file.read_text() == "API_KEY=s3cret\n"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert env_file.stat().st_mtime_ns == st.st_mtime_ns
    assert (repo / "build" / "out.bin").read_bytes() == b"\x00compiled\x01"
