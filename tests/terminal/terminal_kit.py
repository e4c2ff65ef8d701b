"""Helpers for the terminal tests: git and shell calls, what a user sees, seeded repositories.

Imported by the tests as ``terminal_kit`` (the area's conftest puts this
directory on ``sys.path``).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def fixture_module(name: str) -> ModuleType:
    """Load ``fixtures/<name>.py`` (the fixtures folder is not a package)."""
    path = ROOT / "fixtures" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"preimage_fixture_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


wheels = fixture_module("wheels")


def as_json(proc: subprocess.CompletedProcess[str]) -> Any:
    """The JSON a CLI command printed."""
    return json.loads(proc.stdout)


def git(repo: Path, *args: str, check: bool = True, input: str | None = None) -> str:
    """stdout of `git -C repo args…` (raises with stderr when it fails and ``check``)."""
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, input=input, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def sh(command: str, cwd: Path) -> None:
    """Run a shell command as an agent's tool call would."""
    subprocess.run(command, shell=True, cwd=cwd, check=True, capture_output=True)


def git_views(repo: Path) -> dict[str, str]:
    """What a user looks at: status, diffs, stash list, the whole history, ignored files."""
    return {
        "status": git(repo, "status"),
        "diff": git(repo, "diff"),
        "diff --cached": git(repo, "diff", "--cached"),
        "stash list": git(repo, "stash", "list"),
        "log --all": git(repo, "log", "--all", "--format=%H %P %an %ad %s"),
        "status --ignored": git(repo, "status", "--porcelain", "--ignored", "--untracked-files=all"),
        "branches": git(repo, "branch", "-vv", "--all"),
    }


def _write(path: Path, text: str, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mode is not None:
        path.chmod(mode)


def seed_repository(base: Path) -> tuple[Path, Path]:
    """A clone of a local origin with every kind of working state; returns (repo, origin).

    Pushed history plus an unpushed local commit, an upstream commit not yet
    fetched, two stashes, staged changes (a new file and a modified one that
    is modified again on top), an unstaged change, an untracked file, ignored
    files (``.env.local`` mode 600, ``build/``), an executable and a symlink.
    """
    base.mkdir(parents=True, exist_ok=True)
    origin = base / "origin.git"
    repo = base / "repo"
    git(base, "init", "-q", "--bare", str(origin))
    git(base, "clone", "-q", str(origin), str(repo))
    _write(repo / "README.md", "# project\n")
    _write(repo / "src" / "app.py", "print('app')\n")
    _write(repo / "src" / "util.py", "def util():\n    return 1\n")
    _write(repo / "bin" / "run.sh", "#!/bin/sh\nexec python src/app.py\n", 0o755)
    (repo / "docs").mkdir()
    (repo / "docs" / "readme-link").symlink_to("../README.md")
    _write(repo / ".gitignore", ".env.local\nbuild/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    git(repo, "push", "-q", "-u", "origin", "main")
    other = base / "other"
    git(base, "clone", "-q", str(origin), str(other))
    _write(other / "CHANGELOG.md", "upstream change\n")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "upstream work")
    git(other, "push", "-q")
    _write(repo / "src" / "feature.py", "FEATURE = True\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "local work, not pushed")
    _write(repo / "src" / "util.py", "def util():\n    return 2  # stashed\n")
    git(repo, "stash", "-q")
    _write(repo / "README.md", "# project\n\nstashed notes\n")
    git(repo, "stash", "push", "-q", "-m", "readme notes")
    _write(repo / "src" / "new_module.py", "NEW = 1\n")
    _write(repo / "src" / "app.py", "print('app, staged')\n")
    git(repo, "add", "src/new_module.py", "src/app.py")
    _write(repo / "src" / "app.py", "print('app, staged and then edited')\n")
    _write(repo / "src" / "util.py", "def util():\n    return 3  # unstaged\n")
    _write(repo / "notes" / "todo.txt", "untracked notes\n")
    _write(repo / ".env.local", "API_KEY=s3cret\n", 0o600)
    _write(repo / "build" / "out.bin", "\x00compiled\x01")
    git(repo, "status")  # as a user would have looked at it
    return repo, origin
