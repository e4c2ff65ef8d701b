"""Qwen Code (a Gemini CLI fork with Claude Code's hook events), its real binary driven by the
scripted model, with preimage put there by ``preimage install --user`` as a user would.

Qwen Code ignores ``updatedInput`` from ``PreToolUse``, so its ``rm`` is not rewritten into
a trash move: the tree is copied before the call, and the backup ID reaches the model from
``PostToolUse``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from harnesses import BIN, Sandbox, backups, preimage
from model_server import Call, ModelServer, Script

pytestmark = [pytest.mark.harness, pytest.mark.slow]


def test_qwen_rm_rf_is_backed_up_restored_and_told(model: ModelServer, tmp_path: Path) -> None:
    """Qwen Code's `rm -rf build` is backed up before it runs, the model hears the backup ID,
    `preimage restore` brings the tree back byte for byte, and uninstall removes only the hook."""
    calls = [Call("run_shell_command", {"command": "ls -la"}),
             Call("run_shell_command", {"command": "rm -rf build"})]
    route = model.route(Script(calls))
    store = tmp_path / "preimage"
    box = Sandbox("qwen", tmp_path, route.url, path_dirs=[BIN], extra_env={
        "PREIMAGE_HOME": str(store / "store"), "PREIMAGE_CONFIG_DIR": str(store / "config"),
        "PREIMAGE_LOG": str(store / "hook.log")})
    build = box.project / "build"
    (build / "obj").mkdir(parents=True)
    (build / "obj" / "app.o").write_bytes(b"\x7fELF object code\x00\xff")
    (build / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(build / "run.sh", 0o750)
    env = box.env()
    settings = box.home / ".qwen" / "settings.json"
    before = json.loads(settings.read_text())
    preimage("install", "qwen", "--user", env=env, cwd=box.project)

    run = box.run(label="qwen-work")

    assert run.returncode == 0, run.stderr[-3000:]
    assert "build" in route.tool_results[0]                 # the harness ran the `ls`
    assert not build.exists()                               # and the `rm`
    taken = [b for b in backups(env) if b.get("tool_call") and b["kind"] != "post-call"]
    (backup,) = taken                                       # the `ls` took none
    call = backup["tool_call"]
    assert call["harness"] == "qwen" and call["tool"] == "Bash"
    assert call["input"]["command"] == "rm -rf build"       # run as the model wrote it
    assert backup["id"] in route.seen_after_tools()         # the model was told
    preimage("restore", backup["id"], env=env)
    assert (build / "obj" / "app.o").read_bytes() == b"\x7fELF object code\x00\xff"
    assert (build / "run.sh").read_text() == "#!/bin/sh\necho run\n"
    assert (build / "run.sh").stat().st_mode & 0o777 == 0o750

    preimage("uninstall", "qwen", "--user", env=env, cwd=box.project)
    # Qwen Code rewrites its settings on start (it adds `$version`), so the file is not
    # byte-for-byte the one before install: only preimage's hooks are gone, the rest stays.
    after = json.loads(settings.read_text())
    assert "preimage" not in json.dumps(after)
    assert after["security"] == before["security"] and after["model"] == before["model"]
