"""preimage's own command line looks for no pydantic plugins (45 to 50 ms of every
command's process); the Python API, and a user who set pydantic's own switch, get
pydantic's plugin loader as it is."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

CliResult = subprocess.CompletedProcess[str]

_PLUGIN = """\
import os
from pathlib import Path

Path(os.environ["MARKER"]).write_text("loaded")


class Plugin:
    def new_schema_validator(self, *args, **kwargs):
        return None, None, None


plugin = Plugin()
"""


@pytest.fixture
def plugin_dist(tmp_path: Path) -> Path:
    """A distribution declaring a pydantic plugin, as pip would install it; loading the
    plugin leaves a marker file."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "preimage_test_pydantic_plugin.py").write_text(_PLUGIN)
    info = site / "preimage_test_pydantic_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: preimage-test-pydantic-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent("""\
        [pydantic]
        marker = preimage_test_pydantic_plugin:plugin
    """))
    return site


def _env(site: Path, marker: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "MARKER": str(marker), "PREIMAGE_SERVICE": "off", **extra}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    env.update(extra)
    return env


def test_the_command_line_loads_no_pydantic_plugin(
        tmp_path: Path, plugin_dist: Path, cli: Callable[..., CliResult]) -> None:
    """A capture and its restore run in their own process with a pydantic plugin installed:
    both work, and the plugin is never loaded."""
    marker = tmp_path / "marker"
    root = tmp_path / "t"
    root.mkdir()
    (root / "a").write_text("a\n")
    env = _env(plugin_dist, marker)
    backup = cli("capture", f"file://{root}", env=env, check=True).stdout.strip()
    (root / "a").unlink()
    cli("restore", backup, env=env, check=True)
    assert (root / "a").read_text() == "a\n"
    assert not marker.exists()


def test_pydantic_s_own_switch_and_the_python_api_keep_its_loader(
        tmp_path: Path, plugin_dist: Path, cli: Callable[..., CliResult], home: Path) -> None:
    """With PYDANTIC_DISABLE_PLUGINS set by the user (naming another plugin) the command
    line leaves plugins to pydantic, which loads this one; so does a program that imports
    preimage."""
    marker = tmp_path / "marker"
    root = tmp_path / "t"
    root.mkdir()
    (root / "a").write_text("a\n")
    cli("capture", f"file://{root}", env=_env(plugin_dist, marker,
                                              PYDANTIC_DISABLE_PLUGINS="another"), check=True)
    assert marker.read_text() == "loaded"
    marker.unlink()
    program = f"import preimage; print(preimage.capture(['file://{root}']).id)"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          env={**_env(plugin_dist, marker), "PREIMAGE_HOME": str(home)},
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "loaded"
