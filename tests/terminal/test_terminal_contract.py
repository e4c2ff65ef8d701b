"""The conformance kit, run against the git and pip connectors."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from terminal_kit import seed_repository, sh

from preimage.testing import ConnectorContract


class TestGitConnectorContract(ConnectorContract):
    """git:// against a seeded repository; the damage is reset --hard plus clean -fdx."""

    connector = "git"
    observer_exempt = (
        "no independent observer written for it yet")

    @pytest.fixture
    def target_uri(self, tmp_path: Path, git_config: Path) -> str:
        repo, _ = seed_repository(tmp_path / "git")
        return f"git://{repo}"

    @pytest.fixture
    def mutate(self) -> Callable[[str], None]:
        def damage(uri: str) -> None:
            sh(
                "git reset -q --hard HEAD~1 && git clean -fdxq && git stash drop -q",
                cwd=Path(uri[len("git://") :]),
            )

        return damage

    @pytest.fixture
    def malformed_uris(self) -> list[str]:
        return ["git://host/repo", "git://", "git:relative/repo"]

    @pytest.fixture
    def sub_scope(self, target_uri: str) -> str:
        """build/, which clean -fdx removed; HEAD, the index and the stash stay as left."""
        return f"{target_uri}/build"

    @pytest.fixture
    def absent_uri(self, tmp_path: Path) -> str:
        return f"git://{tmp_path}/not-yet"

    @pytest.fixture
    def create(self, git_config: Path) -> Callable[[str], None]:
        def make(uri: str) -> None:
            repo = Path(uri[len("git://") :])
            repo.mkdir(parents=True)
            sh("git init -q && echo x > f && git add f && git commit -qm init", cwd=repo)

        return make


class TestPipConnectorContract(ConnectorContract):
    """pip:// against a venv without pip; the damage is `pip install -U liba` (5.9.0 → 5.10.0 + libb)."""

    connector = "pip"
    observer_exempt = (
        "no independent observer written for it yet")

    @pytest.fixture
    def target_uri(self, venv: Path) -> str:
        return f"pip://{venv}"

    @pytest.fixture
    def mutate(self, wheelhouse: Path) -> Callable[[str], None]:
        def damage(uri: str) -> None:
            python = uri[len("pip://") :] + "/bin/python"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "--python",
                    python,
                    "--disable-pip-version-check",
                    "install",
                    "--no-index",
                    "--find-links",
                    str(wheelhouse),
                    "-U",
                    "liba",
                ],
                check=True,
                capture_output=True,
            )

        return damage

    @pytest.fixture
    def malformed_uris(self, tmp_path: Path) -> list[str]:
        return ["pip://", "pip://host/venv", f"pip://{tmp_path}/no-such-venv"]

    @pytest.fixture
    def sub_scope(self, target_uri: str) -> str:
        """liba, which the upgrade changed; libb, which it added, stays outside."""
        return f"{target_uri}/liba"

    @pytest.fixture
    def absent_uri(self, tmp_path: Path) -> str:
        return f"pip://{tmp_path}/no-venv-yet"
