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


class TestPipConnectorContract(ConnectorContract):
    """pip:// against a venv without pip; the damage is `pip install -U liba` (5.9.0 → 5.10.0 + libb)."""

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
