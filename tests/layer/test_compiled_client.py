"""The compiled hook client: the same answers as the Python client, without an interpreter,
and every path it cannot take handed to the Python client — never a call let through.

Both clients run as the harness runs them (a process per event, the payload on stdin)
against the real decision service; the service's failures are played by a socket the
test listens on at the service's own address.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from services import stop_services

from preimage.layer.harnesses.install import hook_command, split_hook_command
from preimage.services import wire
from preimage.services.compiled_client import ensure_client

PREIMAGE = str(Path(sys.executable).parent / "preimage")


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The compiled client, built into a private cache as ``install`` builds it."""
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREIMAGE_CACHE_DIR", str(cache))
        path, why = ensure_client()
    assert path is not None, why
    return str(path)


class Hooks:
    """One user's settings for hook processes, a runtime directory of its own."""

    def __init__(self, tmp: Path) -> None:
        self.runtime = tmp / "rt"
        self.runtime.mkdir(mode=0o700)
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("PREIMAGE_SERVICE", "PREIMAGE_SUPERVISOR")}
        self.env.update(PREIMAGE_RUNTIME_DIR=str(self.runtime), PREIMAGE_SERVE_IDLE="300")
        self.proc: subprocess.Popen[bytes] | None = None

    def home(self, root: Path) -> dict[str, str]:
        """The environment of hooks whose store, config and log live under ``root``."""
        return {**self.env, "PREIMAGE_HOME": str(root / "store"),
                "PREIMAGE_CONFIG_DIR": str(root / "config"),
                "PREIMAGE_LOG": str(root / "log" / "hook.log")}

    def run(self, command: list[str], payload: bytes, env: dict[str, str],
            cwd: Path | None = None) -> tuple[str, str, int]:
        proc = subprocess.run(command, input=payload, capture_output=True, env=env, cwd=cwd,
                              timeout=300, check=False)
        return proc.stdout.decode(), proc.stderr.decode(), proc.returncode

    def start_service(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "preimage", "serve"], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        from services import wait_for_service

        wait_for_service(self.runtime)


@pytest.fixture
def hooks(tmp_path: Path) -> Iterator[Hooks]:
    """Hook settings for one test; any service started is stopped afterwards."""
    h = Hooks(tmp_path)
    yield h
    stop_services(h.runtime)
    if h.proc is not None:
        h.proc.wait(timeout=60)


def _claude(event: str, command: str, call: str, cwd: Path, **extra: Any) -> dict[str, Any]:
    return {"hook_event_name": event, "tool_name": "Bash", "tool_input": {"command": command},
            "cwd": str(cwd), "session_id": "s-1", "tool_use_id": call, **extra}


def calls(work: Path) -> list[tuple[str, bytes]]:
    """A session's worth of hook events, in order (posts after their pres)."""
    def js(doc: dict[str, Any]) -> bytes:
        return json.dumps(doc).encode()

    return [
        ("claude-code", js(_claude("PreToolUse", "ls -la", "t1", work))),
        ("claude-code", js(_claude("PostToolUse", "ls -la", "t1", work,
                                   tool_response={"stdout": "x"}))),
        ("claude-code", js(_claude("PreToolUse", "echo changed > notes.txt", "t2", work))),
        ("claude-code", js(_claude("PostToolUse", "echo changed > notes.txt", "t2", work,
                                   tool_response={"stdout": ""}))),
        ("claude-code", js(_claude("PreToolUse", "rm -r build", "t3", work))),
        ("claude-code", js(_claude("PostToolUseFailure", "ls é\u2603 \"q\"", "t\u00e94",
                                   work))),
        ("claude-code", js({**_claude("PostToolUse", "", "t5", work),
                            "tool_name": "mcp__pg__query", "tool_input": {"sql": "select 1"}})),
        ("claude-code", b'{"hook_event_name": "PreTo'),
        ("claude-code", b""),
        ("claude-code", js(_claude("PreToolUse", "ls", "t6", work)) + b"\n\n  "),
        ("nosuch", js(_claude("PreToolUse", "ls", "t7", work))),
        ("codex", js({**_claude("PreToolUse", "truncate -s 0 notes.txt", "c1", work),
                      "turn_id": "u1"})),
        ("codex", js({**_claude("PostToolUse", "truncate -s 0 notes.txt", "c1", work),
                      "turn_id": "u1", "tool_response": ""})),
        ("qwen", js({**_claude("PostToolUse", "ls", "q\\1", work),
                     "tool_name": "run_shell_command"})),
        ("gemini", js({"hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
                       "tool_input": {"command": "echo x > g.txt"}, "cwd": str(work),
                       "session_id": "g1"})),
        ("opencode", js({"hook_event_name": "tool.execute.before", "tool": "bash",
                         "session_id": "o1", "tool_use_id": "o1c",
                         "tool_input": {"command": "ls"}, "cwd": str(work)})),
    ]


def _workspace(root: Path) -> Path:
    work = root / "w"
    (work / "build").mkdir(parents=True)
    (work / "build" / "out.o").write_bytes(b"\x7fELF")
    (work / "notes.txt").write_text("hello\n")
    return work


_ID = re.compile(r"(?:backup|restore|undo) ([0-9a-z]{10,})\b")


def _same(text: str, root: Path) -> str:
    """An answer with what differs between two homes by design (their folders, the new
    backups' IDs) replaced by names."""
    text = text.replace(str(root), "<root>")
    for found in set(_ID.findall(text)):
        text = text.replace(found, "<id>")
    return text


def test_both_clients_give_the_same_answers(client: str, hooks: Hooks, tmp_path: Path) -> None:
    """The same events through the Python and the compiled client, each in a home of its
    own, get the same answers, exit codes and messages from the one service."""
    hooks.start_service()
    got: dict[str, list[tuple[str, str, int]]] = {}
    for name, command in (("python", [PREIMAGE, "hook"]),
                          ("compiled", [client, PREIMAGE, "hook"])):
        root = tmp_path / name
        work = _workspace(root)
        env = hooks.home(root)
        got[name] = [tuple(_same(x, root) if isinstance(x, str) else x  # type: ignore[misc]
                           for x in hooks.run([*command, harness], payload, env, cwd=work))
                     for harness, payload in calls(work)]
        if name == "compiled":   # every answer came from the C client or the service
            log = (root / "log" / "hook.log").read_text()
            assert "compiled client handed over" not in log, log
            assert '"client": "compiled"' in log   # the nothing-after answers were its own
    for i, (py, c) in enumerate(zip(got["python"], got["compiled"], strict=True)):
        assert py == c, f"event {i}: {py!r} != {c!r}"
    assert "preimage backup " in got["compiled"][2][0]   # the protected call was backed up


def test_no_service_decides_in_python_and_starts_one(client: str, hooks: Hooks,
                                                     tmp_path: Path) -> None:
    """With no service the compiled client hands the call to the Python client, which
    decides it in-process (the backup is taken) and starts the service — asked once."""
    work = _workspace(tmp_path)
    env = hooks.home(tmp_path)
    out, err, code = hooks.run([client, PREIMAGE, "hook", "claude-code"],
                               json.dumps(_claude("PreToolUse", "echo x > notes.txt", "n1",
                                                  work)).encode(), env, cwd=work)
    assert code == 0 and "preimage backup " in out, err
    assert "decided in-process" in err
    events = [json.loads(line) for line in (tmp_path / "log" / "hook.log").read_text().splitlines()]
    handed = [e for e in events if e.get("path") == "compiled client handed over"]
    assert [e["said"] for e in handed] == ["unavailable"]
    assert sum(e.get("path") == "in-process" for e in events) == 1


class FakeService:
    """Listens at the service's address and plays one failure: ``behave(conn)``."""

    def __init__(self, env: dict[str, str], behave: Callable[[socket.socket], None]) -> None:
        self.path = wire.Address.from_env(env).socket
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(4)
        self.requests: list[dict[str, Any]] = []
        self.behave = behave
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            data = b""
            while b"\n" not in data:
                data += conn.recv(65536)
            line, _, body = data.partition(b"\n")
            head = json.loads(line)
            while len(body) < head["body"]:   # the whole request, as the service reads it
                body += conn.recv(65536)
            self.requests.append(head)
            self.behave(conn)

    def close(self) -> None:
        self.thread.join(timeout=60)
        self.sock.close()
        os.unlink(self.path)


def _accept_then_die(conn: socket.socket) -> None:
    conn.sendall(b'{"v": 1, "event": "accepted", "deadline": 5}\n')


def _refuse(conn: socket.socket) -> None:
    conn.sendall(b'{"v": 1, "event": "error", "error": "refused: another sandbox"}\n')


@pytest.mark.parametrize(("behave", "said", "message"), [
    (_accept_then_die, "lost", "NOT backed up"),
    (_refuse, "unavailable", "decided in-process"),
])
def test_a_failing_service_is_handed_to_the_python_client(
        client: str, hooks: Hooks, tmp_path: Path, behave: Callable[[socket.socket], None],
        said: str, message: str) -> None:
    """A service that dies holding the call gets the NOT-backed-up answer with the
    configured --on-failure (the call is never sent twice); one that refuses it gets the
    call decided in-process — both by the Python client, as if it had met them itself."""
    work = _workspace(tmp_path)
    env = hooks.home(tmp_path)
    fake = FakeService(env, behave)
    try:
        out, err, code = hooks.run(
            [client, PREIMAGE, "hook", "claude-code", "--on-failure", "deny"],
            json.dumps(_claude("PreToolUse", "echo x > notes.txt", "f1", work)).encode(),
            env, cwd=work)
    finally:
        fake.close()
    assert len(fake.requests) == 1 and fake.requests[0]["op"] == "hook"
    assert fake.requests[0]["env"]["PREIMAGE_HOME"] == env["PREIMAGE_HOME"]
    assert message in out + err
    if said == "lost":
        assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    events = [json.loads(line) for line in (tmp_path / "log" / "hook.log").read_text().splitlines()]
    assert [e["said"] for e in events if e.get("path") == "compiled client handed over"] == [said]
    assert code == 0


def test_no_python_client_refuses_the_call(client: str, hooks: Hooks, tmp_path: Path) -> None:
    """When the Python client it hands a call to cannot be run, the call is refused
    (exit 2, which the harnesses treat as a block), with a line saying what to do."""
    env = hooks.home(tmp_path)
    out, err, code = hooks.run([client, str(tmp_path / "gone" / "preimage"), "hook",
                                "claude-code"],
                               json.dumps(_claude("PreToolUse", "ls", "g1", tmp_path)).encode(),
                               env)
    assert code == 2 and out == ""
    assert "the call is refused" in err and "install" in err and "Traceback" not in err


def test_the_hook_line_runs_python_when_the_client_is_gone(client: str, hooks: Hooks,
                                                          tmp_path: Path) -> None:
    """The installed command line runs the compiled client when it is there and the
    Python client when it was deleted from the cache: the call is decided either way."""
    gone = tmp_path / "client-copy"
    shutil.copy(client, gone)
    line = hook_command("claude-code", "user", ["--on-failure", "deny"], str(gone))
    assert split_hook_command(line) == (str(gone), hook_command(
        "claude-code", "user", ["--on-failure", "deny"]))
    env = {**hooks.home(tmp_path), "PREIMAGE_SERVICE": "off"}
    payload = json.dumps(_claude("PreToolUse", "ls", "h1", tmp_path)).encode()
    for present in (True, False):
        if not present:
            gone.unlink()
        out, err, code = hooks.run(["sh", "-c", line], payload, env)
        assert code == 0 and json.loads(out) == {}, err
    events = [json.loads(line) for line in (tmp_path / "log" / "hook.log").read_text().splitlines()]
    assert [e.get("why") for e in events if e.get("path") == "compiled client handed over"] \
        == ["PREIMAGE_SERVICE is off"]   # the first run went through the client, the second not


def test_install_writes_the_client_line_and_list_names_the_client(tmp_path: Path) -> None:
    """`install --user` builds the client and writes the line that runs it (a dry run shows
    the same line); `install --list` says the compiled client runs, and that the Python
    client runs once the client is deleted; uninstall leaves no hook behind."""
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PREIMAGE_CACHE_DIR": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(home / ".config")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PREIMAGE, *args], capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=300, check=True)

    dry = cli("install", "claude-code", "--user", "--dry-run").stdout
    cli("install", "claude-code", "--user")
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    commands = {h["command"] for groups in settings["hooks"].values() for g in groups
                for h in g["hooks"]}
    assert len(commands) == 1
    client, python = split_hook_command(commands.pop())
    assert client is not None and os.access(client, os.X_OK)
    assert python == f"{PREIMAGE} hook claude-code" and client in dry

    def row() -> str:
        listing = cli("install", "--list").stdout.splitlines()
        return next(r for r in listing if r.startswith("claude-code") and " user " in r)

    assert "compiled client" in row()
    os.unlink(client)
    assert "Python client (the compiled client" in row() and "run install again" in row()
    cli("uninstall", "claude-code", "--user")
    assert not (home / ".claude" / "settings.json").exists()


def test_a_stale_client_does_not_make_every_call_in_process(hooks: Hooks,
                                                           tmp_path: Path) -> None:
    """A compiled client that looked for the service in another place (built for another
    installation) is not believed: the Python client asks the service itself, and the
    hook log says to run install again."""
    hooks.start_service()
    env = {**hooks.home(tmp_path), "PREIMAGE_HOOK_FALLBACK": "unavailable no service there",
           "PREIMAGE_HOOK_SOCKET": str(tmp_path / "elsewhere.sock")}
    out, err, code = hooks.run([PREIMAGE, "hook", "claude-code"],
                               json.dumps(_claude("PreToolUse", "ls", "s1", tmp_path)).encode(),
                               env)
    assert code == 0 and json.loads(out) == {} and "in-process" not in err
    log = (tmp_path / "log" / "hook.log").read_text()
    assert "compiled client stale" in log and "install --user" in log


_DRIVE = """
const plugin = await import(process.argv[2])
const hooks = await plugin.Preimage({ directory: process.cwd(), worktree: process.cwd() })
const output = { args: { command: "echo x > notes.txt" } }
try {
  await hooks["tool.execute.before"]({ tool: "bash", sessionID: "s1", callID: "c1" }, output)
  console.log(JSON.stringify({ ran: true }))
} catch (e) {
  console.log(JSON.stringify({ blocked: e.message }))
}
"""


@pytest.mark.parametrize(("behave", "said"), [(_accept_then_die, "lost"),
                                               (_refuse, "unavailable")])
def test_the_plugin_talking_to_the_service_fails_as_the_client_does(
        client: str, hooks: Hooks, tmp_path: Path, behave: Callable[[socket.socket], None],
        said: str) -> None:
    """The OpenCode plugin sends a call to the service itself. A service that took the call
    and died gets it answered NOT backed up by the Python client, told so (with --on-failure
    deny: blocked), and the call is never sent twice; one that refuses it has the call go
    the client's way (decided in-process, backed up)."""
    from preimage.layer.harnesses.opencode import plugin_source

    work = _workspace(tmp_path)
    env = hooks.home(tmp_path)
    plugin = tmp_path / "preimage.mjs"
    plugin.write_text(plugin_source(PREIMAGE, ["--on-failure", "deny"], "deny", client=client))
    (tmp_path / "drive.mjs").write_text(_DRIVE)
    fake = FakeService(env, behave)
    try:
        ran = subprocess.run(["node", str(tmp_path / "drive.mjs"), plugin.as_uri()], env=env,
                             cwd=work, capture_output=True, text=True, timeout=300)
    finally:
        fake.close()
    assert ran.returncode == 0, ran.stderr
    assert len(fake.requests) == 1 and fake.requests[0]["harness"] == "opencode"
    assert fake.requests[0]["env"]["PREIMAGE_HOME"] == env["PREIMAGE_HOME"]
    answer = json.loads(ran.stdout.strip().splitlines()[-1])
    events = [json.loads(line) for line in (tmp_path / "log" / "hook.log").read_text().splitlines()]
    handed = [e["said"] for e in events if e.get("path") == "compiled client handed over"]
    if said == "lost":
        assert "NOT backed up" in answer["blocked"] and handed == ["lost"]
    else:
        assert answer == {"ran": True}
        assert any(e.get("event") == "decision" and e.get("backup_id") for e in events)
