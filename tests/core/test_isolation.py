"""The suite never reaches a user's own store: the guard in tests/conftest.py, run on itself.

An inner pytest session runs with the shared conftest and an environment whose "real"
defaults are temporary directories standing in for the user's own.  A test that drops its
private store and opens the default one fails at teardown; a process started with an
environment built by hand that opens the real default fails the whole run under CI,
naming it;
an ordinary test passes and leaves the stand-in defaults untouched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

INNER_TESTS = '''
import os
import subprocess
import sys

import preimage


def test_ordinary(cli, home):
    assert cli("list").returncode == 0
    assert os.environ["PREIMAGE_HOME"] == str(home)


def test_drops_its_store(monkeypatch):
    monkeypatch.delenv("PREIMAGE_HOME")
    preimage.Store().close()


def test_hand_built_environment():
    env = {"PATH": os.environ["PATH"], "XDG_DATA_HOME": os.environ["STAND_IN_DATA"]}
    subprocess.run([sys.executable, "-c", "import preimage; preimage.Store().close()"],
                   env=env, check=True)
'''


def test_no_test_reaches_the_default_store(tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    shutil.copy(Path(__file__).parents[1] / "conftest.py", inner / "conftest.py")
    (inner / "test_inner.py").write_text(INNER_TESTS)
    stand_in = {var: tmp_path / "user" / var.lower()
                for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME")}
    env = {**os.environ, **{var: str(p) for var, p in stand_in.items()},
           "STAND_IN_DATA": str(stand_in["XDG_DATA_HOME"]), "CI": "true",
           # the conftest's helpers (fixtures/), found from the copy as from the original
           "PYTHONPATH": os.pathsep.join(filter(None, [
               str(Path(__file__).parents[2] / "fixtures"), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-p", "no:randomly", "-W", "ignore::pytest.PytestAssertRewriteWarning", str(inner)],
        cwd=inner, env=env, capture_output=True, text=True, timeout=300,
    )
    out = proc.stdout
    assert proc.returncode == 1, out
    assert "3 passed, 1 error" in out, out  # the error is a teardown
    assert "ERROR at teardown of test_drops_its_store" in out
    assert "used the default store" in out
    assert "default home touched" in out
    assert str(stand_in["XDG_DATA_HOME"] / "preimage") in out
    # the stand-in config and log were never touched, so the run names only the store
    assert str(stand_in["XDG_STATE_HOME"]) not in out.split("default home touched", 1)[1]
