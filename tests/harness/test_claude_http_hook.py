"""What Claude Code does with an ``http`` hook that cannot reach its server, and with a
``SessionStart`` hook that fails — the facts a hook without a process start would rest on.

preimage installs command hooks.  An ``http`` hook (Claude Code posts the payload to a
URL: no process per call) is the lever left for the cost goal, but only if a service
that is down refuses the call rather than lets it run.  These runs of the pinned binary
record the answer: an unreachable ``http`` hook lets the call run (fail-open) unless it
says ``"onFailure": "block"``, and no ``SessionStart`` hook can stop a session, so it
cannot be what guarantees the service.  See docs/harnesses.md ("Cost per tool call").
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from harnesses import BIN, Sandbox
from model_server import Call, ModelServer, Script

pytestmark = [pytest.mark.harness, pytest.mark.slow]


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(model: ModelServer, tmp_path: Path, hooks: dict[str, Any]) -> tuple[bool, list[str]]:
    """One Claude Code run whose model runs `touch marker` once, with ``hooks`` in the user's
    settings: whether the command ran, and the tool results the model saw."""
    marker = tmp_path / "project" / "marker"
    route = model.route(Script([Call("Bash", {"command": f"touch {marker}"})]))
    box = Sandbox("claude-code", tmp_path, route.url, path_dirs=[BIN],
                  permission_mode="bypassPermissions")
    settings = box.home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"hooks": hooks}))
    run = box.run(label="claude-http-hook")
    assert run.returncode == 0, run.stderr[-3000:]
    return marker.exists(), [str(r) for r in route.tool_results]


def _http(url: str, **more: Any) -> dict[str, Any]:
    return {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "http", "url": url,
                                                          "timeout": 5, **more}]}]}


def test_an_unreachable_http_hook_lets_the_call_run(model: ModelServer, tmp_path: Path) -> None:
    """Fail-open: a PreToolUse http hook whose server is down does not stop the call."""
    ran, _ = _run(model, tmp_path, _http(f"http://127.0.0.1:{_closed_port()}/hook"))
    assert ran


def test_an_unreachable_http_hook_with_on_failure_block_refuses_the_call(
        model: ModelServer, tmp_path: Path) -> None:
    """With `"onFailure": "block"` the same hook refuses the call, and the model is told
    that the hook failed and why."""
    port = _closed_port()
    ran, results = _run(model, tmp_path, _http(f"http://127.0.0.1:{port}/hook",
                                                onFailure="block"))
    assert not ran
    assert "blocking because onFailure" in results[0] and "ECONNREFUSED" in results[0]


def test_a_failing_session_start_hook_does_not_stop_the_session(
        model: ModelServer, tmp_path: Path) -> None:
    """A SessionStart hook that exits 2 (or answers `continue: false`) cannot keep a
    session from running tools: it cannot guarantee a service."""
    failing = {"SessionStart": [{"hooks": [
        {"type": "command", "command": "echo no service >&2; exit 2"},
        {"type": "command", "command": 'echo \'{"continue": false, "stopReason": "no"}\''}]}]}
    ran, _ = _run(model, tmp_path, failing)
    assert ran
