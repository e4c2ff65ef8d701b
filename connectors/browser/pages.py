"""A profile's pages: one origin opened in a browser context, and the cookie and IndexedDB
shapes a restore writes back."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from preimage.connectors.browser.address import parse_origin
from preimage.interface.blobs import BlobStore
from preimage.snapshot_schemas.browser import (
    BrowserSnapshot,
    CookieEntry,
    IdbDatabase,
    IdbStore,
)

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page, Route


def host_matches(cookie_domain: str, host: str) -> bool:
    domain = cookie_domain.lstrip(".").lower()
    return host == domain or host.endswith("." + domain)


def session_tab(ctx: BrowserContext, origin: str) -> Page | None:
    """The first open tab whose document is at ``origin``."""
    for page in ctx.pages:
        url = page.url
        if url.startswith(("http://", "https://")) and parse_origin(url, url) == origin:
            return page
    return None


class OriginPage:
    """A tab at ``origin`` for reading and writing its storage.

    The session tab when there is one; otherwise a new tab whose document
    preimage serves itself (``keep`` keeps it open as the new session tab).
    """

    def __init__(self, ctx: BrowserContext, origin: str, *, keep: bool = False) -> None:
        self.ctx, self.origin, self.keep = ctx, origin, keep
        self.page = session_tab(ctx, origin)
        self.is_session = self.page is not None
        self.opened = False

    def __enter__(self) -> OriginPage:
        if self.page is None:
            page = self.ctx.new_page()
            # Nothing of this tab's own reaches the site while preimage works in it:
            # the document is served here and any other request is refused.
            page.route(f"{self.origin}/**", self._serve_blank)
            page.goto(self.origin + "/", wait_until="domcontentloaded")
            self.page, self.opened = page, True
            self.is_session = self.keep
        return self

    def _serve_blank(self, route: Route) -> None:
        if route.request.resource_type == "document":
            route.fulfill(status=200, content_type="text/html", body=BLANK)
        else:
            route.abort()

    def __exit__(self, *exc: object) -> None:
        if not self.opened or self.page is None:
            return
        if self.keep:  # a new session tab: from now on it is the user's, talking to the site
            self.page.unroute(f"{self.origin}/**", self._serve_blank)
        else:
            self.page.close()


def cookie_dict(item: CookieEntry) -> dict[str, Any]:
    """``item`` as Playwright's ``add_cookies`` takes it (every attribute)."""
    cookie: dict[str, Any] = {
        "name": item.name,
        "value": item.value,
        "domain": item.domain,
        "path": item.path,
        "expires": item.expires,
        "httpOnly": item.http_only,
        "secure": item.secure,
        "sameSite": item.same_site,
    }
    if item.partition_key:
        cookie["partitionKey"] = item.partition_key
    return cookie


def db_specs(snapshot: BrowserSnapshot, origin: str, blobs: BlobStore) -> dict[str, dict[str, Any]]:
    """The IndexedDB databases of ``origin`` in ``snapshot`` as the restore script writes them:
    name, version and stores (key path, generator, indexes, records from their blobs)."""
    dbs: dict[str, dict[str, Any]] = {}
    for item in snapshot.items:
        if getattr(item, "origin", None) != origin:
            continue
        if isinstance(item, IdbDatabase):
            dbs[item.name] = {"name": item.name, "version": item.version, "stores": []}
        elif isinstance(item, IdbStore):
            records = []
            if item.digest:
                raw = blobs.get_bytes(item.digest)
                records = [json.loads(line) for line in raw.decode().splitlines()]
            dbs[item.database]["stores"].append(
                {
                    "name": item.name,
                    "keyPath": item.key_path,
                    "autoIncrement": item.auto_increment,
                    "nextKey": item.next_key,
                    "indexes": [
                        {
                            "name": ix.name,
                            "keyPath": ix.key_path,
                            "unique": ix.unique,
                            "multiEntry": ix.multi_entry,
                        }
                        for ix in item.indexes
                    ],
                    "records": records,
                }
            )
    return dbs


# The document preimage serves at the origin.  The data: icon keeps Chromium from
# fetching /favicon.ico from the real site after the load — that request would
# reach the site and could set cookies over the ones a restore just wrote.
BLANK = '<!doctype html><title>preimage</title><link rel="icon" href="data:,">'
