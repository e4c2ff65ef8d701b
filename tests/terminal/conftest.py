"""Fixtures for the terminal connectors: real git repositories and real virtualenvs.

Git runs with a private global config (``GIT_CONFIG_GLOBAL``) so that the
machine's own settings cannot change what the tests see; environments are
built from local wheels (``fixtures/wheels.py``) and never touch the network.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from terminal_kit import seed_repository, wheels

# ---------------------------------------------------------------- git


@pytest.fixture(scope="session")
def git_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A private global git config for the whole session (identity, default branch)."""
    if shutil.which("git") is None:
        pytest.fail("git is not installed — run `bash fixtures/setup.sh` as root first")
    cfg = tmp_path_factory.mktemp("gitconfig") / "gitconfig"
    cfg.write_text(
        "[user]\n\tname = Ada Tester\n\temail = ada@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n"
        '[protocol "file"]\n\tallow = always\n'
        "[advice]\n\tdetachedHead = false\n"
        "[gc]\n\tauto = 0\n"
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GIT_CONFIG_GLOBAL", str(cfg))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        yield cfg


@pytest.fixture
def repo(tmp_path: Path, git_config: Path) -> Path:
    """A repository with staged, unstaged, untracked and ignored changes, stashes and a remote."""
    return seed_repository(tmp_path / "git")[0]


# ---------------------------------------------------------------- pip


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Local wheels: liba 5.9.0 and 5.10.0 (which needs libb), libb, and app (needs liba)."""
    out = tmp_path_factory.mktemp("wheelhouse")
    wheels.build_wheel(out, "liba", "5.9.0", extra_files={"config.py": "PINNED = True\n"})
    wheels.build_wheel(
        out, "liba", "5.10.0", requires=["libb"], extra_files={"config.py": "PINNED = False\n"}
    )
    wheels.build_wheel(out, "libb", "1.0", console_scripts={"libb-tool": "libb:main"})
    wheels.build_wheel(
        out,
        "app",
        "1.0",
        requires=["liba"],
        console_scripts={"app": "app:main"},
        data_script="app-data",
    )
    return out


@pytest.fixture(scope="session")
def _venvs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("venvs")


def _fresh(home: Path, name: str, build: Callable[[Path], None]) -> Path:
    """A fresh copy of an environment ``build`` makes once per session, at the same path
    each time: its console scripts name their interpreter by absolute path, so a copy
    anywhere else would not be the environment pip made.  (pip installs take seconds.)"""
    path, pristine = home / name, home / f"{name}.pristine"
    if pristine.exists():
        if path.exists():
            subprocess.run(["chmod", "-R", "u+rwX", str(path)], check=False)
            shutil.rmtree(path)
        shutil.copytree(pristine, path, symlinks=True)
    else:
        build(path)
        shutil.copytree(path, pristine, symlinks=True)
    return path


@pytest.fixture
def venv(_venvs: Path, wheelhouse: Path) -> Path:
    """A virtualenv without pip holding app 1.0 and liba 5.9.0 (installed by preimage's pip)."""
    def build(path: Path) -> None:
        python = wheels.make_venv(path, with_pip=False)
        wheels.pip_install(python, wheelhouse, "app", "liba==5.9.0")

    return _fresh(_venvs, "venv", build)


def ensurepip_wheel() -> Path:
    """The pip wheel bundled with this interpreter's ensurepip."""
    import ensurepip

    bundled = Path(ensurepip.__file__).parent / "_bundled"
    found = sorted(bundled.glob("pip-*.whl"))
    if not found:
        pytest.fail(f"no pip wheel in {bundled} — install the python3-venv package")
    return found[-1]


@pytest.fixture
def venv_with_pip(_venvs: Path, wheelhouse: Path) -> Path:
    """A virtualenv with its own pip (from the bundled wheel), app 1.0 and liba 5.9.0."""
    def build(path: Path) -> None:
        python = wheels.make_venv(path, with_pip=False)
        wheels.pip_install(python, ensurepip_wheel().parent, str(ensurepip_wheel()))
        wheels.pip_install(python, wheelhouse, "app", "liba==5.9.0")

    return _fresh(_venvs, "venv-with-pip", build)
