"""Chromium driven by Playwright: one persistent context per profile, kept for the process.

Playwright's own browser download is never used: preimage launches the
system Chromium (``$PREIMAGE_CHROMIUM``, else ``/usr/bin/chromium``) with
``executable_path``, headless, with the switches in :data:`LAUNCH_ARGS` that
keep it from talking to anything but the pages it is sent to.

A profile directory can be open in one Chromium at a time.  The pool keeps
each profile's context open until the process ends (or :func:`close_profile`),
so that the capture, the restore and whatever else this process does with the
profile (an agent's own page, a test) share one browser — and so that a tab
kept open for the profile keeps its sessionStorage between capture and
restore.

A profile already open in a Chromium started with remote debugging on
(``--remote-debugging-port``; the browser then names its port in the profile's
``DevToolsActivePort``) is attached to over the DevTools protocol instead of
refused: the capture reads that browser's own state, as the process driving it
would.  Tabs this process opened there are closed when it lets go; the browser
stays as it was.  A profile open in a browser without a debugging port is
still refused with the reason.
"""

from __future__ import annotations

import atexit
import os
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from preimage.interface.errors import TerminalConnectorError, TransientConnectorError

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page, Playwright

DEFAULT_CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
TIMEOUT_MS = 30_000


def chromium_executable() -> str:
    """The Chromium binary to launch; raise if it is missing."""
    path = os.environ.get("PREIMAGE_CHROMIUM") or DEFAULT_CHROMIUM
    resolved = shutil.which(path) if not os.path.isabs(path) else path
    if not resolved or not os.access(resolved, os.X_OK):
        raise TerminalConnectorError(
            f"Chromium not found at {path!r} — install it (Debian: apt-get install chromium) "
            "or set PREIMAGE_CHROMIUM to the browser binary"
        )
    return resolved


def _debugging_endpoint(profile: Path) -> str | None:
    """The DevTools endpoint of the running Chromium that holds ``profile`` open with
    remote debugging on, else ``None`` (no such file, or one a dead browser left).  The
    endpoint names that browser's own id (the file's second line), so no other browser
    that listens on the port later is taken for it."""
    try:
        port_line, path = (profile / "DevToolsActivePort").read_text().split("\n")[:2]
        port = int(port_line)
        # Chromium's profile lock: a symlink to "HOST-PID" while a browser holds it
        pid = int(os.readlink(profile / "SingletonLock").rsplit("-", 1)[1])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # another user's live browser
        pass
    if not (0 < port < 65536 and path.startswith("/devtools/browser/")):
        return None
    return f"ws://127.0.0.1:{port}{path.strip()}"


class BrowserPool:
    """Persistent Chromium contexts by profile directory, for this process."""

    def __init__(self) -> None:
        self._playwright: Playwright | None = None
        self._contexts: dict[Path, BrowserContext] = {}
        # profiles attached to in a browser of another process: the connection, and the
        # tabs that were open before (the others are this process's, closed on release)
        self._attached: dict[Path, tuple[Browser, list[Page]]] = {}

    def _start(self) -> Playwright:
        if self._playwright is None:
            from playwright.sync_api import sync_playwright

            self._playwright = sync_playwright().start()
        return self._playwright

    def context(self, profile: Path, **options: Any) -> BrowserContext:
        """The open context of ``profile`` (launched on first use).

        ``options`` go to ``launch_persistent_context`` on first launch only
        (tests pass ``http_credentials`` to log a profile in); ``args`` are added to
        :data:`LAUNCH_ARGS`.  A profile open in another process's Chromium with remote
        debugging on is attached to (see the module's docstring); ``options`` are then
        that browser's own.
        """
        profile = profile.resolve()
        ctx = self._contexts.get(profile)
        if ctx is not None:
            return ctx
        from playwright.sync_api import Error as PlaywrightError

        endpoint = _debugging_endpoint(profile)
        if endpoint is not None:
            ctx = self._attach(profile, endpoint)
            if ctx is not None:
                return ctx
        profile.mkdir(parents=True, exist_ok=True)
        args = [*LAUNCH_ARGS, *options.pop("args", ())]
        try:
            ctx = self._start().chromium.launch_persistent_context(
                str(profile),
                executable_path=chromium_executable(),
                headless=True,
                args=args,
                timeout=TIMEOUT_MS,
                **options,
            )
        except PlaywrightError as exc:
            text = str(exc)
            if "ProcessSingleton" in text or "in use" in text or "SingletonLock" in text:
                raise TerminalConnectorError(
                    f"the browser profile {profile} is open in another Chromium — close that "
                    "browser (or capture from the process that drives it) and retry",
                    target=str(profile),
                ) from exc
            raise TransientConnectorError(
                f"Chromium failed to start on profile {profile}: {text.splitlines()[0]}",
                target=str(profile),
            ) from exc
        ctx.set_default_timeout(TIMEOUT_MS)
        self._contexts[profile] = ctx
        return ctx

    def _attach(self, profile: Path, endpoint: str) -> BrowserContext | None:
        """The context of the browser at ``endpoint`` that holds ``profile``, or ``None``
        when it does not answer there (a launch then says why the profile is busy)."""
        from playwright.sync_api import Error as PlaywrightError

        try:
            browser = self._start().chromium.connect_over_cdp(endpoint, timeout=TIMEOUT_MS)
        except PlaywrightError:
            return None
        if not browser.contexts:  # a browser of its own, not the profile's
            browser.close()
            return None
        ctx = browser.contexts[0]
        ctx.set_default_timeout(TIMEOUT_MS)
        self._attached[profile] = (browser, list(ctx.pages))
        self._contexts[profile] = ctx
        return ctx

    def close_profile(self, profile: Path) -> None:
        """Close the context of ``profile`` (its session cookies and tabs end with it);
        of an attached browser, close the tabs this process opened and let go of it."""
        profile = profile.resolve()
        ctx = self._contexts.pop(profile, None)
        attached = self._attached.pop(profile, None)
        if attached is not None:
            browser, before = attached
            for page in ctx.pages if ctx is not None else ():
                if page not in before:
                    page.close()
            browser.close()  # a browser connected to is only disconnected from
        elif ctx is not None:
            ctx.close()

    def close_all(self) -> None:
        """Close every context and stop Playwright."""
        for profile in list(self._contexts):
            try:
                self.close_profile(profile)
            except Exception:  # closing at exit: a dead browser is already closed
                pass
        if self._playwright is not None:
            try:
                self._playwright.stop()
            finally:
                self._playwright = None


POOL = BrowserPool()
atexit.register(POOL.close_all)


def browser_context(profile: Path | str, **options: Any) -> BrowserContext:
    """The process-wide Chromium context of ``profile``."""
    return POOL.context(Path(profile), **options)


def close_profile(profile: Path | str) -> None:
    """Close the process-wide context of ``profile``."""
    POOL.close_profile(Path(profile))


def open_page(
    ctx: BrowserContext, url: str, *, what: str, skip: Collection[str] = ()
) -> Page:
    """A new tab at ``url``; raise :class:`TransientConnectorError` when the origin is down.

    ``what`` names the target in the message.  Requests of the resource types
    in ``skip`` (``"stylesheet"``, ``"script"``, ``"image"``, … — Playwright's
    ``request.resource_type``) are not sent for the life of the tab.
    """
    from playwright.sync_api import Error as PlaywrightError

    page = ctx.new_page()
    if skip:
        skipped = frozenset(skip)
        page.route(
            "**/*",
            lambda route: route.abort()
            if route.request.resource_type in skipped
            else route.fallback(),
        )
    try:
        response = page.goto(url, wait_until="domcontentloaded")
    except PlaywrightError as exc:
        page.close()
        reason = str(exc).splitlines()[0]
        if "ERR_CONNECTION_REFUSED" in reason:
            reason = "connection refused"
        raise TransientConnectorError(
            f"cannot reach {url} for {what}: {reason} — is the site running?", target=what
        ) from exc
    if response is not None and response.status >= 500:
        status = response.status
        page.close()
        raise TransientConnectorError(
            f"{url} answered HTTP {status} for {what} — the site is failing; retry later",
            target=what,
        )
    return page
