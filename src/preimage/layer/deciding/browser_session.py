"""Where a session's browser has been: the page it is on, and every origin it was on.

Set from ``browser_navigate`` before the call and from each answer's ``Page URL`` after it
(:mod:`preimage.layer.deciding.mcp_playwright`); read by the browser extractors — the page
for what a click or a storage tool touches, the origins for a tool that reaches every
site's cookies.
"""

from __future__ import annotations

from preimage.layer.context import Context


def visit(ctx: Context, url: str) -> None:
    """Remember ``url`` as the page the browser is on, and its origin among those this
    session's browser visited (what a tool that reaches every site may have touched)."""
    from preimage.connectors.browser.address import origin_of

    ctx.session_set("browser_url", url)
    origin = origin_of(url)
    seen = ctx.session_get("browser_origins")
    seen = [o for o in seen if isinstance(o, str)] if isinstance(seen, list) else []
    if origin and origin not in seen:
        ctx.session_set("browser_origins", [*seen, origin])


def visited_origins(ctx: Context) -> list[str]:
    """The origins this session's browser was seen on, in order."""
    seen = ctx.session_get("browser_origins")
    return [o for o in seen if isinstance(o, str)] if isinstance(seen, list) else []


__all__ = ["visit", "visited_origins"]
