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
"""

from __future__ import annotations

import atexit
import os
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from preimage._errors import TerminalConnectorError, TransientConnectorError

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page, Playwright

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


class BrowserPool:
    """Persistent Chromium contexts by profile directory, for this process."""

    def __init__(self) -> None:
        self._playwright: Playwright | None = None
        self._contexts: dict[Path, BrowserContext] = {}

    def _start(self) -> Playwright:
        if self._playwright is None:
            from playwright.sync_api import sync_playwright

            self._playwright = sync_playwright().start()
        return self._playwright

    def context(self, profile: Path, **options: Any) -> BrowserContext:
        """The open context of ``profile`` (launched on first use).

        ``options`` go to ``launch_persistent_context`` on first launch only
        (tests pass ``http_credentials`` to log a profile in).
        """
        profile = profile.resolve()
        ctx = self._contexts.get(profile)
        if ctx is not None:
            return ctx
        from playwright.sync_api import Error as PlaywrightError

        profile.mkdir(parents=True, exist_ok=True)
        try:
            ctx = self._start().chromium.launch_persistent_context(
                str(profile),
                executable_path=chromium_executable(),
                headless=True,
                args=LAUNCH_ARGS,
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

    def close_profile(self, profile: Path) -> None:
        """Close the context of ``profile`` (its session cookies and tabs end with it)."""
        ctx = self._contexts.pop(profile.resolve(), None)
        if ctx is not None:
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
