"""Fixtures every test area shares: a private store and the CLI in a real process.

An area's own ``conftest.py`` overrides ``home`` when it needs more private
settings (the backup layer's config dir) and wraps ``cli`` when its commands
need other defaults (mail tests check the exit code by default).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from preimage import Store

CliResult = subprocess.CompletedProcess[str]

#: The fixture that starts each real server, and the marker every test using it carries.
SERVER_MARKERS = {
    "pg_server": "postgres", "mariadb_server": "mariadb", "dovecot": "imap",
    "dovecot_minimal": "imap", "control_plane": "kubernetes", "chromium": "browser",
    "isso_server": "webapp", "trac_server": "webapp",
}


#: Areas whose tests share session servers: under pytest-xdist (``-n auto --dist
#: loadgroup``) each runs on one worker, so each server starts once; a benchmark module
#: (one bench run shared by its tests) is a group of its own.
GROUPED_AREAS = ("browser", "email", "k8s", "sql")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that starts (or shares) a real server carries that server's marker, even when
    its module forgot it, so ``-m "not kubernetes"`` and friends select exactly; and it
    joins its area's xdist group (see :data:`GROUPED_AREAS`)."""
    root = Path(__file__).parent
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for fixture, marker in SERVER_MARKERS.items():
            if fixture in used and item.get_closest_marker(marker) is None:
                item.add_marker(getattr(pytest.mark, marker))
        try:
            parts = item.path.relative_to(root).parts
        except ValueError:
            continue
        if parts[0] in GROUPED_AREAS:
            item.add_marker(pytest.mark.xdist_group(parts[0]))
        elif parts[0] == "bench" and len(parts) > 1:
            item.add_marker(pytest.mark.xdist_group(f"bench-{parts[1]}"))


@pytest.fixture(scope="session", autouse=True)
def _hook_decides_in_process() -> Iterator[None]:
    """Hook processes decide in-process unless a test starts a decision service itself
    (a service per test's store would outlive the test)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREIMAGE_SERVICE", "off")
        yield


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private PREIMAGE_HOME for the test (outside the trees it protects)."""
    h = tmp_path / "home"
    monkeypatch.setenv("PREIMAGE_HOME", str(h))
    return h


@pytest.fixture
def store(home: Path) -> Iterator[Store]:
    """The store at the test's PREIMAGE_HOME."""
    st = Store(home)
    yield st
    st.close()


@pytest.fixture
def cli(home: Path) -> Callable[..., CliResult]:
    """Run ``preimage ARGS`` in a real process with the test's store.

    ``check=True`` raises with the command's stderr when it exits non-zero;
    ``input``, ``cwd`` and other keywords go to :func:`subprocess.run`.
    """

    def run(*args: str, check: bool = False, env: dict[str, str] | None = None,
            input: str | None = None, cwd: Path | None = None, **kw: Any) -> CliResult:
        full_env = {**os.environ, "PREIMAGE_HOME": str(home), **(env or {})}
        proc = subprocess.run(
            [sys.executable, "-m", "preimage", *args],
            capture_output=True, text=True, env=full_env, input=input, cwd=cwd,
            timeout=600, **kw,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"preimage {' '.join(args)} failed ({proc.returncode}): {proc.stderr}"
            )
        return proc

    return run


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that refuses every connection for the whole test: bound
    but never listening, so no other process can start listening on it meanwhile."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield int(sock.getsockname()[1])
    finally:
        sock.close()
