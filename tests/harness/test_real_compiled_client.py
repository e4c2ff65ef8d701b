"""The compiled hook client inside the real harnesses: ``install --user`` builds it and
writes the hook line that runs it, and each harness's real binary then runs it — the
read-only call answered by the service through it, the protected call backed up, the
read-only call's post event answered by the client alone — with no call handed to the
Python client.  Kilo Code CLI loads OpenCode's plugin unchanged, so OpenCode stands for
both."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from harnesses import BIN, Sandbox, backups, preimage
from model_server import Call, ModelServer, Script
from services import stop_services, wait_for_service

pytestmark = [pytest.mark.harness, pytest.mark.slow]

SHELL = {"claude-code": ("Bash", "command"), "codex": ("exec_command", "cmd"),
         "gemini": ("run_shell_command", "command"), "qwen": ("run_shell_command", "command"),
         "opencode": ("bash", "command")}
#: Harnesses whose post event names the call, so the client answers it alone.
NAMED = ("claude-code", "codex", "qwen")


def shell(harness: str, command: str) -> Call:
    name, key = SHELL[harness]
    args = {key: command, **({"description": "scripted"} if harness == "opencode" else {})}
    return Call(name, args)


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Path]:
    """A runtime directory of the test's own; its service is stopped afterwards."""
    folder = tmp_path / "rt"
    folder.mkdir(mode=0o700)
    yield folder
    stop_services(folder)


@pytest.mark.parametrize("harness", sorted(SHELL))
def test_the_real_harness_runs_the_compiled_client(harness: str, model: ModelServer,
                                                   tmp_path: Path, runtime: Path) -> None:
    """Installed with --user, the hook line runs the compiled client in the real harness:
    the protected call is backed up and no call falls back to the Python client."""
    route = model.route(Script([shell(harness, "ls -la"),
                                shell(harness, "echo changed > notes.txt")]))
    store = tmp_path / "preimage"
    box = Sandbox(harness, tmp_path / "box", route.url, path_dirs=[BIN], extra_env={
        "PREIMAGE_HOME": str(store / "store"), "PREIMAGE_CONFIG_DIR": str(store / "config"),
        "PREIMAGE_LOG": str(store / "hook.log"), "PREIMAGE_RUNTIME_DIR": str(runtime),
        "PREIMAGE_SERVICE": "on"},
        permission_mode="bypassPermissions" if harness == "claude-code" else None)
    (box.project / "notes.txt").write_text("hello\n")
    env = box.env()
    preimage("install", harness, "--user", env=env, cwd=box.project)
    listing = preimage("install", "--list", env=env, cwd=box.project).stdout
    assert any(harness in row and "user" in row and "compiled client" in row
               for row in listing.splitlines()), listing
    server = subprocess.Popen([str(Path(BIN) / "preimage"), "serve"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_service(runtime)
        run = box.run(label="compiled-client")
        assert run.returncode == 0, run.stderr[-2000:]
    finally:
        stop_services(runtime)
        server.wait(timeout=60)
    assert (box.project / "notes.txt").read_text() == "changed\n"
    assert [b for b in backups(env) if any("notes.txt" in t for t in b.get("targets", []))], \
        backups(env)
    events = [json.loads(line) for line in (store / "hook.log").read_text().splitlines()]
    assert not [e for e in events if e.get("path") in ("compiled client handed over",
                                                       "in-process")], events
    if harness in NAMED:   # the read-only call's post event: the client alone answered it
        assert [e for e in events if e.get("client") == "compiled"], events
    served = [json.loads(line) for line in (runtime / "serve.log").read_text().splitlines()
              if '"event": "hook"' in line]
    assert len(served) >= 2   # both pre events went to the service
