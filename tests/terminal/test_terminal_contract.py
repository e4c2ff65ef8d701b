"""The conformance kit, run against the git and pip connectors."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from terminal_kit import seed_repository, sh

from preimage.testing import ConnectorContract


class TestGitConnectorContract(ConnectorContract):
    """git:// against a seeded repository; the damage is reset --hard plus clean -fdx."""

    connector = "git"

    @pytest.fixture
    def observe(self) -> Callable[[str], dict[str, dict[str, Any]]]:
        """git's own plumbing and a stat walk: HEAD, every ref (the stash included), the
        index, and every work-tree file (mode, bytes, link target) by its path; a sub-scope
        URI: the files under it."""

        def read(uri: str) -> dict[str, dict[str, Any]]:
            path = Path(uri[len("git://") :])
            root = path
            while not (root / ".git").exists() and root != root.parent:
                root = root.parent
            if not (root / ".git").exists():
                return {}
            items: dict[str, dict[str, Any]] = {}
            if path == root:
                def git(*args: str) -> str:
                    return subprocess.run(["git", *args], cwd=root, capture_output=True,
                                          text=True, check=False).stdout

                items["HEAD"] = {"symbolic": git("symbolic-ref", "-q", "HEAD").strip(),
                                 "commit": git("rev-parse", "-q", "--verify", "HEAD").strip()}
                for line in git("for-each-ref", "--format=%(refname) %(objectname)").splitlines():
                    ref, sha = line.split()
                    items[f"ref {ref}"] = {"commit": sha}
                items["index"] = {"entries": git("ls-files", "--stage").splitlines()}
            for folder, dirs, files in os.walk(path):
                dirs[:] = [d for d in dirs if not (Path(folder) == root and d == ".git")]
                for name in files:
                    full = Path(folder) / name
                    st = os.lstat(full)
                    entry: dict[str, Any] = {"mode": stat.S_IMODE(st.st_mode)}
                    if stat.S_ISLNK(st.st_mode):
                        entry["target"] = os.readlink(full)
                    else:
                        entry["sha256"] = hashlib.sha256(full.read_bytes()).hexdigest()
                    items[f"file {full.relative_to(root)}"] = entry
            return items

        return read

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
    def elsewhere_uri(self, tmp_path: Path) -> str:
        """Another path for the repository, not there yet."""
        return f"git://{tmp_path}/elsewhere/repo"

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

    @pytest.fixture
    def observe(self) -> Callable[[str], dict[str, dict[str, Any]]]:
        """The environment's own interpreter (importlib.metadata, not the connector): every
        distribution's version, the paths its RECORD lists and the sha256 of each of those
        files (not of compiled .pyc files, nor of RECORD itself, whose .pyc lines carry
        hashes or not as the installer chose); a sub-scope URI: that distribution only."""
        script = (
            "import hashlib, importlib.metadata as m, json, pathlib\n"
            "out = {}\n"
            "for d in m.distributions():\n"
            "    files = {}\n"
            "    for f in d.files or []:\n"
            "        p = pathlib.Path(d.locate_file(f))\n"
            "        if p.is_file() and p.suffix != '.pyc' and p.name != 'RECORD':\n"
            "            files[str(f)] = hashlib.sha256(p.read_bytes()).hexdigest()\n"
            "    out[d.metadata['Name'].lower()] = {'version': d.version, 'files': files,\n"
            "        'listed': sorted(str(f) for f in d.files or [])}\n"
            "print(json.dumps(out))\n")

        def read(uri: str) -> dict[str, dict[str, Any]]:
            venv, dist = Path(uri[len("pip://") :]), None
            if not (venv / "bin" / "python").exists():
                venv, dist = venv.parent, venv.name.lower()
            python = venv / "bin" / "python"
            if not python.exists():
                return {}
            got = json.loads(subprocess.run([str(python), "-c", script], capture_output=True,
                                            text=True, check=True).stdout)
            return {f"dist {name}": fields for name, fields in got.items()
                    if dist is None or name == dist}

        return read

    @pytest.fixture
    def target_uri(self, venv: Path) -> str:
        return f"pip://{venv}"

    @pytest.fixture
    def elsewhere_uri(self, tmp_path: Path) -> str:
        """Another, empty environment on the same Python (an environment is never absent:
        the destination is made with ``python -m venv`` first, as a user would)."""
        dest = tmp_path / "elsewhere" / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
        return f"pip://{dest}"

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
