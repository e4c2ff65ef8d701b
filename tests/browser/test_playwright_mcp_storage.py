"""@playwright/mcp 0.0.79's cookie and web-storage tools (`--caps storage`) on the system
Chromium, with a profile of its own on disk (`--user-data-dir`), in front of the fixtures'
Trac: each tool that sets, deletes or clears is backed up — the profile's cookies and
storage for the page's origin — and the restore puts them back into the browser the server
is still running (it was started with remote debugging on, so preimage reaches the open
profile through it), where the server's own getters read them again."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp_clients import PREIMAGE, ClaudeHook, Hook, backup_id, context_of, note_of, run_session
from mcp_packages import executable

from fixtures.trac import TracServer
from preimage.connectors.browser.chromium import DEFAULT_CHROMIUM

pytestmark = [pytest.mark.browser, pytest.mark.webapp, pytest.mark.slow]

CHANGES = [("browser_localstorage_set", {"key": "draft", "value": "keep me"}),
           ("browser_cookie_set", {"name": "prefs", "value": "compact"}),
           ("browser_sessionstorage_set", {"key": "tab", "value": "2"}),
           ("browser_localstorage_clear", {}),
           ("browser_cookie_clear", {})]


def _server(profile: Path, config: Path) -> list[str]:
    """The server on a profile of its own on disk, its storage tools on, Chromium started
    with remote debugging (``launchOptions.args`` of its config file)."""
    config.write_text(json.dumps({"browser": {"launchOptions": {
        "args": ["--remote-debugging-port=0"]}}}))
    return [str(executable("playwright")), "--headless", "--no-sandbox", "--browser",
            "chromium", "--executable-path", DEFAULT_CHROMIUM, "--user-data-dir", str(profile),
            "--caps", "storage", "--config", str(config)]


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if hasattr(c, "text"))


def _through(path: str, tmp_path: Path) -> tuple[dict[str, str], Path, list[str],
                                                ClaudeHook | None]:
    """The environment, project, server command and hook of a run through the proxy or
    through the Claude Code hook with the server in the project's `.mcp.json`."""
    env = {**os.environ, "PREIMAGE_HOME": str(tmp_path / "store"), "HOME": str(tmp_path)}
    project = tmp_path / "project"
    project.mkdir()
    server = _server(tmp_path / "agent-profile", tmp_path / "playwright.json")
    if path == "proxy":
        return env, project, [PREIMAGE, "mcp-proxy", "--name", "browser", "--", *server], None
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"browser": {
        "command": server[0], "args": server[1:]}}}))
    return env, project, server, ClaudeHook("browser", project, env)


def _caller(s: Any, hook: Hook | None) -> Callable[[str, dict[str, Any]],
                                                  Awaitable[tuple[str, str]]]:
    """A tool call as the harness makes it: the text of its answer and what preimage told
    the model (the hook's context, or the proxy's note)."""
    async def call(tool: str, args: dict[str, Any]) -> tuple[str, str]:
        before = hook(tool, args) if hook else None
        result = await s.call_tool(tool, args)
        if isinstance(hook, ClaudeHook):
            hook.after(tool, args, result)
        return _text(result), context_of(before) if hook else note_of(result)

    return call


@pytest.mark.parametrize("path", ["proxy", "claude-hook"])
def test_playwright_mcp_storage_tools_restore(trac_server: TracServer, tmp_path: Path,
                                              path: str) -> None:
    """On Trac's origin: localStorage and cookies set, then both cleared, each backed up
    before it runs; restoring the backups of the two clears (newest first) brings the
    localStorage item and the cookie back, as the server's own getters read them; reading
    tools take no backup."""
    env, project, server, hook = _through(path, tmp_path)

    async def calls(s: Any, hook: Hook | None) -> list[Any]:
        call = _caller(s, hook)

        _, nav = await call("browser_navigate", {"url": f"{trac_server.url}/"})
        told = [await call(tool, args) for tool, args in CHANGES]
        _, listed = await call("browser_cookie_list", {})
        gone = [(await call(t, a))[0] for t, a in (("browser_localstorage_get", {"key": "draft"}),
                                                   ("browser_cookie_get", {"name": "prefs"}))]
        import subprocess

        for _, note in (told[4], told[3]):   # the clears, newest first
            done = subprocess.run([PREIMAGE, "restore", backup_id(note)], env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr + done.stdout
        back = [(await call(t, a))[0] for t, a in (("browser_localstorage_get", {"key": "draft"}),
                                                   ("browser_cookie_get", {"name": "prefs"}))]
        return [nav, told, listed, gone, back]

    nav, told, listed, gone, back = run_session(server, env, project, calls, hook)
    assert "preimage backup" not in nav and "preimage backup" not in listed
    for (_, note), (tool, _) in zip(told, CHANGES, strict=True):
        assert "preimage backup" in note, f"{tool}: {note}"
    assert "not found" in gone[0] and "not found" in gone[1], gone
    assert "\ndraft=keep me\n" in back[0], back
    assert "\nprefs=compact " in back[1], back


def test_playwright_mcp_storage_without_remote_debugging_is_refused(
        trac_server: TracServer, tmp_path: Path) -> None:
    """Started as its documentation shows (a profile on disk, no remote debugging), the
    server's Chromium holds the profile alone: the backup cannot read it, so the proxy
    refuses the cookie change without forwarding it and says why."""
    env = {**os.environ, "PREIMAGE_HOME": str(tmp_path / "store"), "HOME": str(tmp_path)}
    server = [str(executable("playwright")), "--headless", "--no-sandbox", "--browser",
              "chromium", "--executable-path", DEFAULT_CHROMIUM, "--user-data-dir",
              str(tmp_path / "agent-profile"), "--caps", "storage"]
    (_, _), (refused, _), (listed, _) = run_session(
        [PREIMAGE, "mcp-proxy", "--name", "browser", "--", *server], env, tmp_path,
        [("browser_navigate", {"url": f"{trac_server.url}/"}),
         ("browser_cookie_clear", {}), ("browser_cookie_list", {})])
    assert refused.isError and "NOT backed up" in _text(refused), _text(refused)
    assert "open in another Chromium" in _text(refused), _text(refused)
    assert "trac_session" in _text(listed) or "trac_form_token" in _text(listed), _text(listed)


@pytest.mark.parametrize("path", ["proxy", "claude-hook"])
def test_playwright_mcp_delete_and_storage_state_tools_restore(
        trac_server: TracServer, tmp_path: Path, path: str) -> None:
    """`browser_set_storage_state` (it clears every cookie and localStorage item first),
    `browser_cookie_delete` and the sessionStorage delete and clear are each backed up
    before they run, and restoring each backup right after its call brings back what it
    removed, as the server's own getters read it."""
    env, project, server, hook = _through(path, tmp_path)
    (project / "empty-state.json").write_text(json.dumps({"cookies": [], "origins": []}))
    getters = [("browser_cookie_get", {"name": "prefs"}),
               ("browser_localstorage_get", {"key": "draft"}),
               ("browser_sessionstorage_get", {"key": "tab"}),
               ("browser_sessionstorage_get", {"key": "pane"})]
    removals = [("browser_set_storage_state", {"filename": str(project / "empty-state.json")}),
                ("browser_cookie_delete", {"name": "prefs"}),
                ("browser_sessionstorage_delete", {"key": "tab"}),
                ("browser_sessionstorage_clear", {})]

    async def calls(s: Any, hook: Hook | None) -> list[Any]:
        import subprocess

        call = _caller(s, hook)

        await call("browser_navigate", {"url": f"{trac_server.url}/"})
        for tool, args in [("browser_cookie_set", {"name": "prefs", "value": "compact"}),
                           ("browser_localstorage_set", {"key": "draft", "value": "keep me"}),
                           ("browser_sessionstorage_set", {"key": "tab", "value": "2"}),
                           ("browser_sessionstorage_set", {"key": "pane", "value": "left"})]:
            await call(tool, args)
        rounds = []
        for tool, args in removals:
            _, note = await call(tool, args)
            gone = [(await call(t, a))[0] for t, a in getters]
            done = subprocess.run([PREIMAGE, "restore", backup_id(note)], env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"{tool}: {done.stderr}{done.stdout}"
            back = [(await call(t, a))[0] for t, a in getters]
            rounds.append((tool, note, gone, back))
        return rounds

    rounds = run_session(server, env, project, calls, hook)
    values = ["\nprefs=compact ", "\ndraft=keep me\n", "\ntab=2\n", "\npane=left\n"]
    for tool, note, gone, back in rounds:
        assert "preimage backup" in note, f"{tool}: {note}"
        removed = {"browser_set_storage_state": [0, 1], "browser_cookie_delete": [0],
                   "browser_sessionstorage_delete": [2], "browser_sessionstorage_clear": [2, 3]}[tool]
        for i in removed:
            assert values[i] not in gone[i], f"{tool} did not remove it: {gone[i]}"
        for i, value in enumerate(values):
            assert value in back[i], f"after restoring {tool}: {back}"
