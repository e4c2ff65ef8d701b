"""The real Claude Code binary run whole under `preimage session`, driven by the scripted model.

The model's calls are ones a reader of the command line gets wrong or cannot see:
a delete through a shell function, a write through a symlink to a file outside the
project, and the harness's own Write tool.  Each lands in its call's observed
backup (found by Claude Code's tool_use_id), and restoring them brings the sandbox
back exactly (the audit's tree oracle).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))

from harnesses import BIN, Sandbox, preimage
from layer_audit import observe
from model_server import Call, ModelServer, Script

from preimage import Store
from preimage.observe import unavailable_reason

pytestmark = [pytest.mark.harness, pytest.mark.slow,
              pytest.mark.skipif(unavailable_reason() is not None,
                                 reason=f"no supervision here: {unavailable_reason()}")]


@pytest.fixture(scope="module")
def model() -> Iterator[ModelServer]:
    """The scripted model server on loopback."""
    with ModelServer() as server:
        yield server


def test_claude_code_session_one_backup_per_call_restores_exactly(
        model: ModelServer, tmp_path: Path) -> None:
    """Under `preimage session`, every change Claude Code makes is in its call's backup."""
    root = tmp_path / "cc"
    outside = root / "elsewhere"
    outside.mkdir(parents=True)
    (outside / "shared.cfg").write_text("shared = 1\n")
    project = root / "project"
    calls = [
        Call("Bash", {"command": 'f() { rm -rf "$1"; }; f build'}),
        Call("Bash", {"command": "echo changed >> cfg-link"}),
        Call("Write", {"file_path": str(project / "notes.txt"), "content": "overwritten\n"}),
    ]
    route = model.route(Script(calls))
    store = root / "preimage"
    box = Sandbox("claude-code", root, route.url, path_dirs=[BIN],
                  permission_mode="bypassPermissions",
                  extra_env={"PREIMAGE_HOME": str(store / "store"),
                             "PREIMAGE_CONFIG_DIR": str(store / "config"),
                             "PREIMAGE_LOG": str(store / "hook.log")})
    (project / "build").mkdir()
    (project / "build" / "app.o").write_bytes(b"\x7fELF object code")
    (project / "notes.txt").write_text("hello\n")
    (project / "cfg-link").symlink_to(outside / "shared.cfg")
    env = box.env()
    preimage("install", "claude-code", env=env, cwd=project)
    watched = [project, outside]
    before = [observe.tree_state(p) for p in watched]
    ran = subprocess.run([str(Path(BIN) / "preimage"), "session", "--session", "cc1", "--",
                          *box.argv("Do the task.")], cwd=project, env=env,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert not (project / "build").exists()
    assert (outside / "shared.cfg").read_text() == "shared = 1\nchanged\n"
    assert (project / "notes.txt").read_text() == "overwritten\n"
    with Store(store / "store") as st:
        observed = [r for r in st.catalog.list_backups(None) if r.kind == "observed"]
        per_call = {(r.tool_call or {}).get("input", {}).get("command")
                    or (r.tool_call or {}).get("tool"): r for r in observed if r.tool_call}
        assert set(per_call) == {'f() { rm -rf "$1"; }; f build', "echo changed >> cfg-link",
                                 "Write"}
        assert f"file://{outside}/shared.cfg" in \
            [s.target for s in per_call["echo changed >> cfg-link"].snapshots]
        import preimage as api


        for row in sorted(observed, key=lambda r: r.id, reverse=True):   # newest first
            api.restore(row.id, store=st)
    assert [observe.changed_paths(b, observe.tree_state(p))
            for b, p in zip(before, watched, strict=True)] == [[], []]
