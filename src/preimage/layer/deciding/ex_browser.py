"""Tier 2 for the browser: Playwright MCP tools.

The layer remembers, per session, the page the agent's browser is on (from
``browser_navigate``).  A click whose element text reads as a destructive
or saving action captures that page's records through the site adapter
configured for its origin (``web+<adapter>://…``); scripts that clear
cookies or storage capture the profile's client-side state
(``browser://…``).  Without an adapter for the origin only the profile is
captured, and the decision says that the server-side record is not.
"""

from __future__ import annotations

import os
import re

from preimage.connectors.browser.address import browser_uri, origin_of
from preimage.connectors.web.address import page_location, web_uri
from preimage.layer.call import ToolCall
from preimage.layer.config import discover_mcp
from preimage.layer.context import Context
from preimage.layer.deciding.extract import finding, tool_extractor, unknown
from preimage.layer.deciding.rules import Rule
from preimage.layer.decision import Finding, Impact, PlannedTarget, Tier

DESTRUCTIVE = re.compile(r"\b(delete|remove|trash|destroy|purge|erase|wipe|discard|drop|revoke|"
                         r"ban|spam|spammer|unsubscribe|uninstall|deactivate|disable|clear|reset|"
                         r"close issue|archive|empty)\b", re.I)
MUTATING = re.compile(r"\b(save|submit|post|publish|update|confirm|apply|merge|approve|send|reply|"
                      r"comment|create|add|edit|rename|move|assign|vote|like|upvote|downvote|"
                      r"accept|ok|yes|resolve|reopen|lock|unlock|pin|label|tag)\b", re.I)
STORAGE_JS = re.compile(r"localStorage\.(clear|removeItem|setItem)|sessionStorage\.(clear|removeItem"
                        r"|setItem)|indexedDB\.deleteDatabase|document\.cookie\s*=|clearCookies|"
                        r"cookieStore\.delete|caches\.delete|\.clear\(\)", re.I)
REQUEST_JS = re.compile(r"method\s*:\s*['\"](DELETE|POST|PUT|PATCH)|\.click\(\)|\.submit\(\)", re.I)


def profile_dir(call: ToolCall, ctx: Context) -> str | None:
    """The browser profile of a Playwright MCP server."""
    mcp = call.mcp_tool
    conf = ctx.config.mcp.get(mcp.server) if mcp else None
    if conf and conf.profile:
        return conf.profile
    if ctx.config.browser_profile:
        return ctx.config.browser_profile
    spec = discover_mcp(ctx.workspace, ctx.home, harness=ctx.call.harness,
                        env=ctx.env or None).get(mcp.server if mcp else "", {})
    args = [str(a) for a in spec.get("args", [])]
    for i, a in enumerate(args):
        if a.startswith("--user-data-dir="):
            return a.split("=", 1)[1]
        if a == "--user-data-dir" and i + 1 < len(args):
            return args[i + 1]
    default = os.path.join(ctx.home, ".cache", "ms-playwright", "mcp-chrome-profile")
    return default if os.path.isdir(default) else None


def _page_targets(call: ToolCall, ctx: Context, why: str, *,
                  storage: bool) -> Finding | list[PlannedTarget]:
    url = ctx.session_get("browser_url")
    profile = profile_dir(call, ctx)
    origin = origin_of(url) if isinstance(url, str) else None
    targets: list[PlannedTarget] = []
    notes: list[str] = []
    if not storage and origin:
        site = ctx.config.site(origin)
        if site is None:
            notes.append(f"no site adapter is configured for {origin}: the record on the server "
                         f"is NOT captured (add `sites: {{{origin!r}: <adapter>}}` to the config)")
        else:
            known, location = page_location(site.adapter, str(url))
            if known and location is None:
                notes.append(f"the {site.adapter} site adapter reads no record on {url}: the "
                             "record on the server is NOT captured")
            else:
                # The profile that lends its logins: the site's own setting, else the one
                # preimage is told to use (a signed-in copy, since the agent's browser holds
                # its profile open), else the agent's.
                params = dict(site.params)
                params.setdefault("profile", ctx.env.get("PREIMAGE_BROWSER_PROFILE") or profile or "")
                uri = web_uri(site.adapter, str(url), location, params.items())
                targets.append(PlannedTarget(uri, why, external=True))
    if profile and (storage or not targets):
        targets.append(PlannedTarget(browser_uri(profile, origin), why, external=True))
    if not targets:
        return unknown(call, None, "the browser's page or profile is unknown; " + " ".join(notes))
    return [*targets, *[PlannedTarget("note:" + n) for n in notes]]


def _with_notes(call: ToolCall, rule: Rule, got: Finding | list[PlannedTarget],
                **kw: object) -> Finding:
    if isinstance(got, Finding):
        return got
    f = finding(call, rule, outside_workspace=True, **kw)
    f.targets = [t for t in got if not t.uri.startswith("note:")]
    f.notes = [t.uri[5:] for t in got if t.uri.startswith("note:")]
    return f


@tool_extractor("browser_navigate")
def browser_navigate(call: ToolCall, rule: Rule, ctx: Context) -> Finding:
    """Remember where the browser goes; navigation itself changes nothing."""
    from preimage.layer.deciding.browser_session import visit

    url = call.input.get("url")
    if isinstance(url, str):
        visit(ctx, url)
    return finding(call, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)


@tool_extractor("browser_click")
def browser_click(call: ToolCall, rule: Rule, ctx: Context) -> Finding:
    """A click: destructive or saving words capture the page's records; others only navigate."""
    text = " ".join(str(call.input.get(k, "")) for k in ("element", "text", "selector", "name",
                                                         "target"))
    if DESTRUCTIVE.search(text):
        impact = Impact.HIGH
    elif MUTATING.search(text) or call.tool.endswith(("handle_dialog", "file_upload")):
        impact = Impact.NORMAL
        if call.tool.endswith("handle_dialog") and call.input.get("accept") is False:
            return finding(call, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    elif (
        (call.tool.endswith("press_key") and str(call.input.get("key", "")).lower() != "enter")
        or (call.tool.endswith("type") and not call.input.get("submit"))
        or (text.strip() and not call.tool.endswith(("press_key", "type")))
    ):
        return finding(call, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    else:
        impact = Impact.NORMAL
    got = _page_targets(call, ctx, f"the click on '{text.strip()[:60]}' may change it", storage=False)
    return _with_notes(call, rule, got, impact=impact)


@tool_extractor("browser_storage")
def browser_storage(call: ToolCall, rule: Rule, ctx: Context) -> Finding:
    """Cookie and web-storage tools: the profile's storage for the page's origin.  A server
    started ``--isolated`` keeps its profile in memory, gone when it stops: nothing lasting
    changes (its storage-state file, if any, is only read)."""
    from preimage.layer.deciding.mcp_launch import server_spec

    if "--isolated" in [str(a) for a in server_spec(call, ctx).get("args") or []]:
        return finding(call, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    clears = call.tool.endswith(("_clear", "_delete", "set_storage_state"))
    got = _page_targets(call, ctx, "the tool changes cookies or storage", storage=True)
    if call.tool.endswith(EVERY_SITE) and not isinstance(got, Finding):
        got = _every_site(call, ctx, got)
    return _with_notes(call, rule, got, impact=Impact.HIGH if clears else Impact.NORMAL)


# Tools that reach the cookies (or the whole storage) of every site in the browser context,
# not only the page's: clearing all cookies, deleting cookies by name wherever they are set,
# replacing the context's storage state.
EVERY_SITE = ("browser_cookie_clear", "browser_cookie_delete", "browser_set_storage_state")


def _every_site(call: ToolCall, ctx: Context, got: list[PlannedTarget]) -> list[PlannedTarget]:
    """The profile's storage for every origin this session's browser visited, not only the
    page's, and a note that other sites' cookies in the profile are not captured."""
    from preimage.interface.uri import query, quote_path
    from preimage.layer.deciding.browser_session import visited_origins

    profile = profile_dir(call, ctx)
    page = ctx.session_get("browser_url")
    here = origin_of(page) if isinstance(page, str) else None
    origins = list(dict.fromkeys([*([here] if here else []), *visited_origins(ctx)]))
    if not profile or not origins:
        return got
    uri = "browser://" + quote_path(profile) + query([("origin", o) for o in origins])
    kept = [t for t in got if not t.uri.startswith("browser:")]
    return [*kept, PlannedTarget(uri, "the tool reaches every site's cookies", external=True),
            PlannedTarget(f"note:{call.tool.removeprefix('mcp__')} reaches the cookies of "
                          f"every site in the browser: those of the sites this session "
                          f"visited ({', '.join(origins)}) are captured, any other site's "
                          "are NOT")]


@tool_extractor("browser_script")
def browser_script(call: ToolCall, rule: Rule, ctx: Context) -> Finding:
    """``browser_evaluate``/``browser_run_code``: storage clearing or mutating requests."""
    code = " ".join(str(call.input.get(k, "")) for k in ("function", "code", "script", "expression"))
    if STORAGE_JS.search(code):
        got = _page_targets(call, ctx, "the script changes cookies or storage", storage=True)
        return _with_notes(call, rule, got, impact=Impact.HIGH)
    if REQUEST_JS.search(code):
        got = _page_targets(call, ctx, "the script sends a changing request", storage=False)
        return _with_notes(call, rule, got, impact=Impact.NORMAL)
    return finding(call, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
