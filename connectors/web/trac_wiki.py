"""Trac wiki pages with every version, read through the user's browser profile.

One record per page (``wiki:NAME``), read from three of Trac's own views:

* the page (``/wiki/NAME``) — whether it exists (Trac answers a missing page
  with its "create this page" form, HTTP 200, and the history view of a
  missing page with HTTP 500, so the page's own History link tells);
* the history (``/wiki/NAME?action=history``) — each version's number, time
  (to the second, from its timeline link) and author;
* each version's raw text (``?version=N&format=txt``) and raw change comment
  (the comment editor's field, ``?action=edit_comment&version=N``).

What comes back through the admin channel (``put_wiki``: Trac's
``WikiPage`` model saving each version in order):

* content — the current text and every version's text and comment;
* metadata — every version's number, author and time.

Not captured: attachments, the read-only flag, page renames (a renamed page is
a new name).
"""

from __future__ import annotations

import html
import re
from typing import Any, NoReturn
from urllib.parse import quote, unquote

from preimage.connectors.web.adapter import LoginRequiredError, Site, SiteAdapter
from preimage.snapshot_schemas.web import WebRecord

_ROW_RE = re.compile(r"<tr\b[^>]*>(.*?)</tr>", re.S)
_VERSION_RE = re.compile(r'<td class="version">\s*<a href="[^"]*\?version=(\d+)"', re.S)
_TIME_RE = re.compile(r'<td class="date"><a class="timeline" href="[^"]*from=([0-9%A-Za-z.-]+)')
_AUTHOR_RE = re.compile(r'<td class="author">(.*?)</td>', re.S)
_COMMENT_RE = re.compile(r'name="new_comment"[^>]*\bvalue="([^"]*)"', re.S)
_TAG_RE = re.compile(r"<[^>]+>")


def wiki_name(location: str) -> str | None:
    """The page a ``/wiki/NAME`` location names, or ``None``."""
    m = re.fullmatch(r"/wiki/(.+)", location.rstrip("/"))
    return unquote(m.group(1)) if m else None


def read_page(adapter: SiteAdapter, site: Site, name: str) -> WebRecord | None:
    """The page ``name`` with every version, or ``None`` when Trac has no such page."""
    base = f"/wiki/{quote(name)}"
    page = site.fetch(base)
    if page.status in (401, 403):
        _login(adapter, site, base)
    if f"{base}?action=history" not in page.text:
        return None
    hist = site.fetch(f"{base}?action=history")
    history: list[dict[str, Any]] = []
    for row in _ROW_RE.findall(hist.text):
        version, when, who = _VERSION_RE.search(row), _TIME_RE.search(row), _AUTHOR_RE.search(row)
        if version and when and who:
            history.append({"version": int(version.group(1)), "time": unquote(when.group(1)),
                            "author": html.unescape(_TAG_RE.sub("", who.group(1))).strip()})
    if not history:
        raise adapter.selector_error("#fieldhist td.version / td.date / td.author",
                                     site.url(f"{base}?action=history"),
                                     "the history view lists no version")
    history.sort(key=lambda h: h["version"])
    numbers = [h["version"] for h in history]
    texts = site.fetch_all([f"{base}?version={n}&format=txt" for n in numbers])
    forms = site.fetch_all([f"{base}?action=edit_comment&version={n}" for n in numbers])
    versions: list[dict[str, Any]] = []
    for n, text, form in zip(numbers, texts, forms, strict=True):
        comment = _COMMENT_RE.search(form.text)
        if text.status != 200 or comment is None:
            raise adapter.selector_error("input[name=new_comment]",
                                         site.url(f"{base}?action=edit_comment&version={n}"),
                                         f"version {n} answered HTTP {text.status}/{form.status}")
        versions.append({"text": text.text, "comment": html.unescape(comment.group(1))})
    return WebRecord(
        kind="wiki", name=name,
        content={"text": versions[-1]["text"], "versions": versions},
        metadata={"history": history},
    )


def _login(adapter: SiteAdapter, site: Site, path: str) -> NoReturn:
    raise LoginRequiredError(adapter.name, site.url(path), str(site.profile),
                             "open /login in that profile and sign in")


def saved_versions(record: WebRecord, start: int) -> list[dict[str, Any]]:
    """The versions of ``record`` from index ``start`` on, as ``put_wiki`` saves them."""
    return [{"text": v["text"], "comment": v["comment"], "author": h["author"], "time": h["time"]}
            for v, h in zip(record.content["versions"][start:],
                            record.metadata["history"][start:], strict=True)]


def kept_versions(live: WebRecord, want: WebRecord) -> int:
    """How many of the live page's first versions equal the wanted ones (they stay)."""
    common = 0
    pairs = zip(live.content["versions"], live.metadata["history"],
                want.content["versions"], want.metadata["history"], strict=False)
    for lv, lh, wv, wh in pairs:
        if lv != wv or lh != wh:
            break
        common += 1
    return common
