"""Trac's source repositories (its version-control admin), read through the user's profile.

One record per repository Trac serves (``repository:NAME``), from the admin
pages an administrator uses (``TRAC_ADMIN``):

* the list (``/admin/versioncontrol/repository``) — every repository's name;
* each repository's edit form (``…/repository/NAME``) — type, directory, URL,
  description, and the "hidden" and "sync on every request" flags.

Location ``/admin/versioncontrol/repository`` is every repository,
``…/repository/NAME`` one.  What comes back through the admin channel
(``put_repository``: Trac's ``DbRepositoryProvider``, as ``trac-admin
repository add`` and ``set`` do): all of it — type, directory and
description as content, URL and the two flags as metadata.  The repository's
own history (commits, branches) lives in its directory, which Trac only
reads: removing a repository from Trac leaves it there, and a branch deleted
with git is the ``git://`` connector's to capture and restore.  Aliases are
not read.
"""

from __future__ import annotations

import html
import re
from urllib.parse import quote, unquote

from preimage.connectors.web.adapter import LoginRequiredError, Site, SiteAdapter
from preimage.snapshot_schemas.web import WebRecord

ADMIN = "/admin/versioncontrol/repository"
_SEL_RE = re.compile(r'name="sel" value="([^"]*)"')
_INPUT_RE = r'<input[^>]*\bname="{}"[^>]*>'
_VALUE_RE = re.compile(r'\bvalue="([^"]*)"')
_SELECTED_RE = re.compile(r'<select[^>]*name="type"[^>]*>(.*?)</select>', re.S)
_OPTION_RE = re.compile(r'<option\b[^>]*\bselected\b[^>]*>')
_DESC_RE = re.compile(r'<textarea[^>]*name="description"[^>]*>(.*?)</textarea>', re.S)


def repository_location(location: str) -> str | None:
    """``""`` for every repository, the name for one, ``None`` for another location."""
    loc = location.rstrip("/")
    if loc == ADMIN:
        return ""
    if loc.startswith(ADMIN + "/"):
        return unquote(loc[len(ADMIN) + 1:])
    return None


def read_repositories(adapter: SiteAdapter, site: Site, only: str) -> list[WebRecord]:
    """The repositories Trac serves (``only``: that one, if it is there)."""
    listing = site.fetch(ADMIN)
    if listing.status in (401, 403):
        raise LoginRequiredError(adapter.name, site.url(ADMIN), str(site.profile),
                                 "sign in as a Trac administrator (TRAC_ADMIN)")
    if "trac-repository_table" not in listing.text and "trac-addrepos" not in listing.text:
        raise adapter.selector_error("form#trac-addrepos", site.url(ADMIN),
                                     "the repository admin page changed")
    names = [html.unescape(n) for n in _SEL_RE.findall(listing.text)]
    if only:
        names = [n for n in names if n == only]
    forms = site.fetch_all([f"{ADMIN}/{quote(n)}" for n in names])
    return [_record(adapter, site, n, f.text) for n, f in zip(names, forms, strict=True)]


def _field(page: str, name: str) -> tuple[str, bool]:
    """An input's value and whether it is a checked box."""
    m = re.search(_INPUT_RE.format(name), page)
    if m is None:
        return "", False
    return _value(m.group(0)), "checked" in m.group(0)


def _value(tag: str) -> str:
    m = _VALUE_RE.search(tag)
    return html.unescape(m.group(1)) if m else ""


def _record(adapter: SiteAdapter, site: Site, name: str, page: str) -> WebRecord:
    kind = _SELECTED_RE.search(page)
    desc = _DESC_RE.search(page)
    if kind is None or desc is None or 'name="dir"' not in page:
        raise adapter.selector_error("select[name=type] / input[name=dir] / "
                                     "textarea[name=description]",
                                     site.url(f"{ADMIN}/{quote(name)}"),
                                     "the repository form changed")
    chosen = _OPTION_RE.search(kind.group(1))
    return WebRecord(
        kind="repository", name=name,
        content={"type": _value(chosen.group(0)) if chosen else "",
                 "dir": _field(page, "dir")[0],
                 "description": html.unescape(desc.group(1)).replace("\r\n", "\n").strip("\n")},
        metadata={"url": _field(page, "url")[0], "hidden": _field(page, "hidden")[1],
                  "sync_per_request": _field(page, "sync_per_request")[1]},
    )
