"""The browser tasks' steps as @playwright/mcp 0.0.79's own tools, on the run's profile.

================================  ========================================================
task step                         @playwright/mcp
================================  ========================================================
``browser_navigate url``          ``browser_navigate url``
``browser_evaluate function``     ``browser_evaluate function``
``browser_click element``         ``browser_snapshot``, then ``browser_click`` with the
                                  ``target`` ref the snapshot shows for the button or
                                  link of that name — as a model reads it
================================  ========================================================

A navigation's answer names the page and links the snapshot it wrote to a file; a
``browser_snapshot`` answers with the snapshot itself, each element with its ref
(``- button "Delete ticket" [ref=e23]``), which is what a click names.

The server runs on the system Chromium with the run's profile (``--user-data-dir``),
where the sites' logins were seeded, and with remote debugging on (``launchOptions.args``
of its ``--config`` file).  The benchmark's own browser lets go of the profile before
the harness starts (:meth:`preimage.bench.systems.web.WebSystem.yield_to_harness`);
preimage's captures — the hook's, and the runner's ground truth while the model waits —
then reach the server's open browser over the DevTools protocol (the browser names its
port in the profile), as they reach any agent's browser that runs with remote debugging.
Its snapshots and logs go to a folder beside the run, not into the project.
"""

from __future__ import annotations

import json
import re
from typing import Any

from preimage.bench.harness_tool import HarnessCall, NoHarnessToolError, answer_text
from preimage.bench.systems.base import Sandbox
from preimage.interface.errors import UsageError

_ROLES = ("button", "link")


def ref_of(text: str, name: str) -> str:
    """The ref a page snapshot gives the button or link called ``name``.

    Raises :class:`UsageError` naming what the snapshot showed when there is none.
    """
    body = answer_text(text)
    roles = "|".join(_ROLES)
    found = re.search(rf'- (?:{roles}) \\?"{re.escape(name)}\\?"[^\n]*?\[ref=([\w-]+)\]', body)
    if found is None:
        shown = re.findall(rf'- (?:{roles}) \\?"([^"\\]+)', body)
        raise UsageError(f"the page snapshot shows no button or link {name!r} to click "
                         f"(it shows: {', '.join(shown[:12]) or 'none'})")
    return found.group(1)


def playwright_mcp_calls(tool: str, arguments: dict[str, Any]) -> list[HarnessCall]:
    """The @playwright/mcp calls (tool names without the server) that carry one step."""
    if tool == "browser_navigate":
        return [HarnessCall("browser_navigate", {"url": str(arguments["url"])})]
    if tool == "browser_evaluate":
        return [HarnessCall("browser_evaluate", {"function": str(arguments["function"])})]
    if tool == "browser_click":
        element = str(arguments.get("element") or "")
        if not element:
            raise NoHarnessToolError("playwright/browser_click: the step names no element")
        return [HarnessCall("browser_snapshot"), HarnessCall(
            "browser_click", {"element": element},
            resolve=lambda text: {"element": element, "target": ref_of(text, element)})]
    raise NoHarnessToolError(f"playwright/{tool}: no @playwright/mcp tool carries it")


def playwright_mcp_args(sandbox: Sandbox) -> list[str]:
    """The server's launch arguments for the run: the system Chromium, headless, the run's
    profile, remote debugging on, its output files beside the run."""
    from preimage.connectors.browser.chromium import chromium_executable

    config = sandbox.root / "playwright-mcp.json"
    config.write_text(json.dumps({"browser": {"launchOptions": {
        "args": ["--remote-debugging-port=0"]}}}))
    return ["--headless", "--no-sandbox", "--browser", "chromium",
            "--executable-path", chromium_executable(),
            "--user-data-dir", sandbox.variables["profile"], "--config", str(config),
            "--output-dir", str(sandbox.root / "playwright-mcp")]


__all__ = ["playwright_mcp_args", "playwright_mcp_calls", "ref_of"]
