"""@playwright/mcp (0.0.79, from the npm registry) on the system Chromium, in front of a
real Trac, through both paths: `preimage mcp-proxy` in the server's place, and the
Claude Code hook fed the payloads Claude Code sends, with the server in `.mcp.json`.

The agent's browser is the server's own (isolated, signed in to Trac from a storage
state); preimage captures through a signed-in profile of its own
(PREIMAGE_BROWSER_PROFILE) and the Trac site adapter.  The agent opens a ticket's
delete page and presses "Delete ticket": the ticket is backed up before the click and
the restore brings it back with its history."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from harnesses import backups
from mcp_clients import PREIMAGE, ClaudeHook, Hook, backup_id, restore, run_session
from mcp_packages import PINNED, executable

from fixtures.trac import TracServer
from preimage.connectors.browser.chromium import DEFAULT_CHROMIUM, browser_context

pytestmark = [pytest.mark.browser, pytest.mark.webapp, pytest.mark.slow]

assert PINNED["playwright"][2] == "0.0.79"


def _ticket(trac: TracServer, milestone: str) -> int:
    first, = trac.seed({
        "milestones": [{"name": milestone, "description": "Found by the agent."}],
        "tickets": [{"time": "2024-06-01T08:00:00Z",
                     "fields": {"summary": f"Crash in {milestone}", "reporter": "erin",
                                "milestone": milestone, "status": "new",
                                "description": "Stack trace attached."},
                     "changes": [{"author": "bob", "time": "2024-06-01T09:00:00Z",
                                  "comment": "Confirmed."}]}]})
    return first


def _summaries(trac: TracServer, milestone: str) -> list[str]:
    import sqlite3

    con = sqlite3.connect(f"file:{trac.env / 'db' / 'trac.db'}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT summary FROM ticket WHERE milestone = ?", (milestone,))
        return sorted(r[0] for r in rows)
    finally:
        con.close()


def _server(state: Path) -> list[str]:
    """The Playwright MCP server's launch line: the system Chromium, headless, isolated,
    signed in from ``state``."""
    return [str(executable("playwright")), "--headless", "--isolated", "--no-sandbox",
            "--browser", "chromium", "--executable-path", DEFAULT_CHROMIUM,
            "--storage-state", str(state)]


def _drive(command: list[str], env: dict[str, str], cwd: Path, url: str,
           hook: Hook | None) -> list[Any]:
    """navigate to ``url``, then click the "Delete ticket" button the snapshot shows:
    ``[(hook's answer, result)]`` of both calls."""

    async def calls(s: Any, hook: Hook | None) -> list[Any]:
        out = []
        nav = {"url": url}
        out.append((hook("browser_navigate", nav) if hook else None,
                    await s.call_tool("browser_navigate", nav)))
        text = "\n".join(c.text for c in out[-1][1].content if hasattr(c, "text"))
        saved = re.search(r"\[Snapshot\]\(([^)]+)\)", text)   # written beside the server
        if saved:
            text = (cwd / saved.group(1)).read_text()
        ref = re.search(r'button "Delete ticket" \[ref=(\w+)\]', text)
        assert ref, text[-3000:]
        # 0.0.79 names the element `target` (a snapshot ref or a selector)
        click = {"element": "Delete ticket button", "target": ref.group(1)}
        out.append((hook("browser_click", click) if hook else None,
                    await s.call_tool("browser_click", click)))
        return out

    return run_session(command, env, cwd, calls, hook)


def _setup(trac: TracServer, profile: Path, cli_profile: Path, tmp_path: Path,
           home: Path) -> tuple[Path, dict[str, str]]:
    state = tmp_path / "state.json"
    browser_context(profile).storage_state(path=str(state))   # the agent's Trac login
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.yaml").write_text(json.dumps(
        {"sites": {trac.url: {"adapter": "trac", "params": {"env": str(trac.env)}}}}))
    env = {**os.environ, "PREIMAGE_HOME": str(home), "PREIMAGE_CONFIG_DIR": str(config),
           "PREIMAGE_BROWSER_PROFILE": str(cli_profile), "HOME": str(tmp_path)}
    return state, env


def test_playwright_mcp_through_proxy(trac_server: TracServer, profile: Path,
                                     cli_profile: Path, tmp_path: Path) -> None:
    """Behind the proxy: the navigation takes no backup, the click on "Delete ticket" backs
    the ticket up through the Trac adapter, and the restore brings it back."""
    number = _ticket(trac_server, "mcp-proxy")
    state, env = _setup(trac_server, profile, cli_profile, tmp_path, tmp_path / "store")
    proxy = [PREIMAGE, "mcp-proxy", "--name", "browser", "--",
             *_server(state)]
    (_, nav), (_, click) = _drive(proxy, env, tmp_path,
                                  f"{trac_server.url}/ticket/{number}?action=delete", None)
    notes = [c.text for c in click.content if hasattr(c, "text")]
    assert "preimage backup" not in " ".join(c.text for c in nav.content if hasattr(c, "text"))
    assert _summaries(trac_server, "mcp-proxy") == [], notes
    restore(env, backup_id(notes[-1]))
    assert _summaries(trac_server, "mcp-proxy") == ["Crash in mcp-proxy"]


def test_playwright_mcp_through_claude_hook(trac_server: TracServer, profile: Path,
                                           cli_profile: Path, tmp_path: Path) -> None:
    """Defined in .mcp.json: the hook remembers the page the navigation opened, backs the
    ticket up before the click, and the restore brings it back."""
    number = _ticket(trac_server, "mcp-hook")
    state, env = _setup(trac_server, profile, cli_profile, tmp_path, tmp_path / "store")
    project = tmp_path / "project"
    project.mkdir()
    server = _server(state)
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"browser": {
        "command": server[0], "args": server[1:]}}}))
    hook = ClaudeHook("browser", project, env)

    (nav, _), (click, _) = _drive(server, env, project,
                                  f"{trac_server.url}/ticket/{number}?action=delete", hook)
    assert nav == {}
    context = click["hookSpecificOutput"]["additionalContext"]
    assert _summaries(trac_server, "mcp-hook") == []
    restore(env, backup_id(context))
    assert _summaries(trac_server, "mcp-hook") == ["Crash in mcp-hook"]


def _go_back_and_delete(command: list[str], env: dict[str, str], cwd: Path, first: str,
                        second: str, hook: ClaudeHook | None) -> list[Any]:
    """Open ``first``, then ``second``, go back (to ``first``: no ``browser_navigate`` says
    so, only the answer's "Page URL"), and click "Delete ticket" there."""

    async def calls(s: Any, _: Any) -> list[Any]:
        out = []
        for tool, args in (("browser_navigate", {"url": first}),
                           ("browser_navigate", {"url": second}),
                           ("browser_navigate_back", {})):
            before = hook(tool, args) if hook else None
            result = await s.call_tool(tool, args)
            if hook:
                hook.after(tool, args, result)
            out.append((before, result))
        text = "\n".join(c.text for c in out[-1][1].content if hasattr(c, "text"))
        saved = re.search(r"\[Snapshot\]\(([^)]+)\)", text)
        if saved:
            text = (cwd / saved.group(1)).read_text()
        ref = re.search(r'button "Delete ticket" \[ref=(\w+)\]', text)
        assert ref, text[-3000:]
        click = {"element": "Delete ticket button", "target": ref.group(1)}
        out.append((hook("browser_click", click) if hook else None,
                    await s.call_tool("browser_click", click)))
        return out

    return run_session(command, env, cwd, calls, None)


@pytest.mark.parametrize("path", ["proxy", "claude-hook"])
def test_playwright_mcp_page_is_read_from_the_answers(path: str, trac_server: TracServer,
                                                      profile: Path, cli_profile: Path,
                                                      tmp_path: Path) -> None:
    """After going back (no browser_navigate names the page), the click on "Delete ticket"
    backs up the ticket the browser is on, not the last one navigated to: its restore
    brings that ticket back."""
    milestone = f"back-{path}"
    # the other ticket first: Trac re-creates a deleted ticket under the next free number,
    # which is its own only when it was the newest
    second = _ticket(trac_server, f"{milestone}-other")
    first = _ticket(trac_server, milestone)
    state, env = _setup(trac_server, profile, cli_profile, tmp_path, tmp_path / "store")
    urls = [f"{trac_server.url}/ticket/{n}?action=delete" for n in (first, second)]
    server = _server(state)
    if path == "proxy":
        command, cwd, hook = [PREIMAGE, "mcp-proxy", "--name", "browser", "--", *server], \
            tmp_path, None
    else:
        cwd = tmp_path / "project"
        cwd.mkdir()
        (cwd / ".mcp.json").write_text(json.dumps({"mcpServers": {"browser": {
            "command": server[0], "args": server[1:]}}}))
        command, hook = server, ClaudeHook("browser", cwd, env)
    *_, (before, click) = _go_back_and_delete(command, env, cwd, *urls, hook)
    told = (before["hookSpecificOutput"]["additionalContext"] if hook
            else [c.text for c in click.content if hasattr(c, "text")][-1])
    assert _summaries(trac_server, milestone) == [], told
    restore(env, backup_id(told))
    assert _summaries(trac_server, milestone) == [f"Crash in {milestone}"]
    assert _summaries(trac_server, f"{milestone}-other") == [f"Crash in {milestone}-other"]


@pytest.mark.harness
def test_playwright_mcp_in_claude_code(trac_server: TracServer, profile: Path,
                                      cli_profile: Path, tmp_path: Path) -> None:
    """The real Claude Code, @playwright/mcp in .mcp.json on the system Chromium: the model
    opens a ticket's delete page and clicks "Delete ticket"; the hook follows the page from
    the server's answers, backs the ticket up through the Trac adapter before the click,
    the model is told the ID, and `preimage restore` brings the ticket back."""
    from mcp_claude_code import claude_code_run

    number = _ticket(trac_server, "mcp-claude")
    state, env = _setup(trac_server, profile, cli_profile, tmp_path, tmp_path / "unused")
    server = _server(state)
    ran = claude_code_run(tmp_path / "run", "browser",
                          {"command": server[0], "args": server[1:]},
                          [("browser_navigate",
                            {"url": f"{trac_server.url}/ticket/{number}?action=delete"}),
                           ("browser_click", {"element": "Delete ticket button",
                                              "target": "input[value='Delete ticket']"})],
                          extra_env={k: env[k] for k in ("PREIMAGE_CONFIG_DIR",
                                                         "PREIMAGE_BROWSER_PROFILE")})
    assert _summaries(trac_server, "mcp-claude") == [], ran.route.tool_results
    backup = ran.backup_of("browser_click")
    assert ran.told(backup)
    assert not any(b.get("tool_call", {}).get("tool", "").endswith("browser_navigate")
                   for b in backups(ran.env))
    ran.restore(backup["id"])
    assert _summaries(trac_server, "mcp-claude") == ["Crash in mcp-claude"]
