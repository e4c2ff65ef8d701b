"""The page @playwright/mcp's browser is on, read from the server's own answers.

Every tool of @playwright/mcp that touches a page ends its answer with the page it left
the browser on (``- Page URL: http://…`` under ``### Page``): a click that follows a
link, a form that redirects, ``browser_navigate_back``, a tab switch.  After each call
of a browser server the layer remembers that URL for the session, so the next click is
read against the page the browser is really on, not the last one ``browser_navigate``
named.  An answer without the line (an error, a tool that touches no page) changes
nothing remembered.
"""

from __future__ import annotations

import re

from preimage.layer.call import ToolCall
from preimage.layer.context import Context

# The harness may hand the answer over as text or as its content blocks in JSON (where a
# line break is the two characters ``\n``): the URL ends at white space, a quote or a
# backslash, none of which a URL holds unescaped.
PAGE_URL = re.compile(r"Page URL: (https?://[^\s\"\\]+|about:blank|file://[^\s\"\\]+)")


def page_url_of(output: str) -> str | None:
    """The last ``Page URL`` an answer names (the page the call left the browser on)."""
    found = PAGE_URL.findall(output or "")
    return found[-1] if found else None


def remember_page(call: ToolCall, output: str, ctx: Context) -> str | None:
    """Remember the page a browser tool's answer says it is on; the URL, or ``None``."""
    from preimage.layer.deciding.analyze import mcp_kind

    url = page_url_of(output) if call.mcp_tool is not None else None
    if url is None or mcp_kind(call, ctx) != "browser":   # the cheap test first: every call
        return None
    from preimage.layer.deciding.browser_session import visit

    visit(ctx, url)
    return url


__all__ = ["PAGE_URL", "page_url_of", "remember_page"]
