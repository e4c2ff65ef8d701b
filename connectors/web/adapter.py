"""The site-adapter API: what one web application tells preimage about its records.

A site adapter is a class with a ``name`` (``web+<name>://`` selects it) and
the methods the :class:`~preimage.connectors.web.WebAppConnector` and the backup layer call:

* :meth:`SiteAdapter.records` — list the records under the target's path,
  reading through a tab of the user's browser profile (``site.goto`` for a
  page, ``site.fetch`` for the app's own JSON API from inside that tab, so
  the profile's logins apply).  It must not change anything in the app.
  What it meets in scope but cannot read — or cannot prove it sees — it adds
  to ``site.uncaptured`` instead of leaving out silently.
* :meth:`SiteAdapter.location_of` — which target location an app page is
  about (the backup layer asks when an agent acts on that page).
* :meth:`SiteAdapter.lookup` — find one captured record in the live app
  when it is no longer under the listed path (a ticket moved off a deleted
  milestone); the default finds nothing.
* :meth:`SiteAdapter.depends_on` — the records that must exist before this
  one is re-created (a reply's parent).
* :meth:`SiteAdapter.soft` / :meth:`SiteAdapter.merge` — how an undo of one
  call treats a record both the call and someone after it changed: fields the
  app derives from others (a last-change time) and fields that merge as more
  than values (a change log, entry by entry); the defaults merge field by field.
* :meth:`SiteAdapter.create` / :meth:`update` / :meth:`delete` — write
  through the best channel the app offers.  ``create`` returns the new
  ``server`` fields (ids); ``update`` returns ``False`` when it cannot bring a
  record back in place (then the record is deleted and re-created).
  :meth:`SiteAdapter.create_many` re-creates a batch of records none of which
  depends on another; by default it calls ``create`` for each.

Each record is a :class:`~preimage.snapshot_schemas.web.WebRecord` with its
fields sorted into ``content``, ``metadata`` and ``server`` maps; the adapter
explains every ``server`` field in :attr:`SiteAdapter.server_reasons`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from preimage.interface.errors import TerminalConnectorError, TransientConnectorError
from preimage.snapshot_schemas import Uncaptured
from preimage.snapshot_schemas.web import WebRecord

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

    from preimage.restoration.merge import Merger


class SelectorMismatchError(TerminalConnectorError):
    """The page no longer has the element an adapter reads: the adapter needs updating."""

    def __init__(self, adapter: str, selector: str, url: str, detail: str = "") -> None:
        self.adapter = adapter
        self.selector = selector
        self.url = url
        more = f" ({detail})" if detail else ""
        super().__init__(
            f"site adapter {adapter!r}: selector {selector!r} matched nothing on {url}{more} — "
            "the application's page changed; update the adapter (nothing was captured)",
            target=url,
        )


class LoginRequiredError(TerminalConnectorError):
    """The page asks for a login the browser profile does not have."""

    def __init__(self, adapter: str, url: str, profile: str, how: str = "") -> None:
        self.adapter = adapter
        self.url = url
        self.profile = profile
        hint = f" ({how})" if how else ""
        super().__init__(
            f"site adapter {adapter!r}: {url} asks for a login that the browser profile "
            f"{profile} does not have — log in once in that profile{hint} and retry",
            target=url,
        )


class RecordRefusedError(TerminalConnectorError):
    """The application refused to re-create or change a record."""

    def __init__(self, adapter: str, ref: str, reason: str) -> None:
        self.adapter = adapter
        self.ref = ref
        self.reason = reason
        super().__init__(f"site adapter {adapter!r}: the application refused {ref}: {reason}")


@dataclass
class Response:
    """An HTTP answer seen from inside the page."""

    status: int
    text: str
    url: str

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.text)


@dataclass
class Site:
    """One web application as the user's browser profile sees it.

    ``base_url`` is the app's root (``http://host:port/root``), ``location``
    the path under it that a target names, ``params`` the target's query
    parameters.  ``page`` is a tab at the app, opened on first use.
    """

    adapter: str
    base_url: str
    location: str
    params: Mapping[str, str]
    profile: Path
    context: BrowserContext
    skip_resources: tuple[str, ...] = ()
    """Resource types the tab does not load (see :attr:`SiteAdapter.skip_resources`)."""
    status: int = 0
    """HTTP status of the last :meth:`goto`."""
    uncaptured: list[Uncaptured] = field(default_factory=list)
    """What :meth:`SiteAdapter.records` met in the target's scope but could not read (or
    cannot show it read): the capture records it, so the score shows it."""
    notes: list[str] = field(default_factory=list)
    """What a reader of the capture should know about its scope (a parameter that narrowed it)."""
    _page: Page | None = field(default=None, repr=False)

    def url(self, path: str) -> str:
        """Absolute URL of ``path`` under the app's root."""
        return self.base_url.rstrip("/") + "/" + path.lstrip("/")

    @property
    def page(self) -> Page:
        """The tab this site reads and writes through (opened at the app's root)."""
        if self._page is None:
            from preimage.connectors.browser.chromium import open_page

            self._page = open_page(
                self.context,
                self.url("/"),
                what=f"web+{self.adapter}://{self.base_url.partition('://')[2]}",
                skip=self.skip_resources,
            )
        return self._page

    def goto(self, path: str) -> Page:
        """Navigate the tab to ``path``; raise when the app is down or failing.

        A 4xx answer is not an error here: :attr:`status` tells it.
        """
        from playwright.sync_api import Error as PlaywrightError

        url = self.url(path)
        try:
            response = self.page.goto(url, wait_until="domcontentloaded")
        except PlaywrightError as exc:
            raise TransientConnectorError(
                f"cannot reach {url}: {str(exc).splitlines()[0]} — is the application running?",
                target=url,
            ) from exc
        self.status = response.status if response is not None else 200
        if self.status >= 500:
            raise TransientConnectorError(
                f"{url} answered HTTP {self.status} — the application is failing",
                target=url,
            )
        return self.page

    def fetch(
        self,
        path: str,
        *,
        method: str = "GET",
        body: Any = None,
        form: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        cookies: bool = True,
    ) -> Response:
        """Call the app's HTTP API from inside the tab (the profile's cookies apply).

        ``body`` is sent as JSON, ``form`` as ``application/x-www-form-urlencoded``.
        ``cookies=False`` sends none and keeps none the answer sets: for calls that
        need no login and whose cookies the user's profile should not collect.
        """
        from playwright.sync_api import Error as PlaywrightError

        url = self.url(path)
        hdrs = dict(headers or {})
        payload: str | None = None
        if body is not None:
            payload = json.dumps(body)
            hdrs.setdefault("Content-Type", "application/json")
        elif form is not None:
            from urllib.parse import urlencode

            payload = urlencode(form)
            hdrs.setdefault("Content-Type", "application/x-www-form-urlencoded")
        try:
            out = self.page.evaluate(
                """async ([url, method, body, headers, credentials]) => {
                    const r = await fetch(url, {method, body, headers, credentials,
                                                redirect: 'follow'});
                    return {status: r.status, text: await r.text(), url: r.url};
                }""",
                [url, method, payload, hdrs, "include" if cookies else "omit"],
            )
        except PlaywrightError as exc:
            raise TransientConnectorError(
                f"{method} {url} failed: {str(exc).splitlines()[0]} — is the application running?",
                target=url,
            ) from exc
        if out["status"] >= 500:
            raise TransientConnectorError(
                f"{method} {url} answered HTTP {out['status']}: {out['text'][:200]}", target=url
            )
        return Response(out["status"], out["text"], out["url"])

    def fetch_all(
        self,
        paths: Sequence[str],
        *,
        method: str = "GET",
        bodies: Sequence[Any] | None = None,
        cookies: bool = True,
        concurrency: int = 6,
    ) -> list[Response]:
        """:meth:`fetch` every path from inside the tab, up to ``concurrency`` at a time.

        ``bodies`` (one per path) are sent as JSON.  The answers come back in the
        order of ``paths``; a 5xx answer or a failed request raises.
        """
        from playwright.sync_api import Error as PlaywrightError

        urls = [self.url(p) for p in paths]
        payloads = [json.dumps(b) for b in bodies] if bodies is not None else [None] * len(urls)
        if len(payloads) != len(urls):
            raise ValueError("fetch_all: give one body per path")
        try:
            outs = self.page.evaluate(
                """async ([urls, payloads, method, credentials, width]) => {
                    const out = new Array(urls.length);
                    let next = 0;
                    const worker = async () => {
                        while (next < urls.length) {
                            const i = next++;
                            const init = {method, credentials, redirect: 'follow'};
                            if (payloads[i] !== null) {
                                init.body = payloads[i];
                                init.headers = {'Content-Type': 'application/json'};
                            }
                            const r = await fetch(urls[i], init);
                            out[i] = {status: r.status, text: await r.text(), url: r.url};
                        }
                    };
                    await Promise.all(Array.from({length: width}, worker));
                    return out;
                }""",
                [urls, payloads, method, "include" if cookies else "omit", max(1, concurrency)],
            )
        except PlaywrightError as exc:
            raise TransientConnectorError(
                f"{method} {self.base_url} failed: {str(exc).splitlines()[0]} — is the "
                "application running?",
                target=self.base_url,
            ) from exc
        for out in outs:
            if out["status"] >= 500:
                raise TransientConnectorError(
                    f"{method} {out['url']} answered HTTP {out['status']}: {out['text'][:200]}",
                    target=out["url"],
                )
        return [Response(o["status"], o["text"], o["url"]) for o in outs]

    def close(self) -> None:
        """Close the tab."""
        if self._page is not None:
            self._page.close()
            self._page = None


Refs = dict[str, dict[str, Any]]
"""``kind:name`` → the live ``server`` fields of that record (its id, …)."""


class SiteAdapter:
    """Base class of site adapters (see the module docstring for the contract)."""

    name: ClassVar[str] = ""
    channel: ClassVar[str] = ""
    """One line: how records are written back (shown in restore reports)."""
    server_reasons: ClassVar[dict[str, str]] = {}
    """``kind.field`` → why no client can set that ``server`` field."""
    skip_resources: ClassVar[tuple[str, ...]] = ()
    """Resource types (``"stylesheet"``, ``"script"``, ``"image"``, ``"font"``) the
    adapter's tab never loads: when records are read from a page's HTML and its
    inline data, skipping the app's static files makes each page several times
    faster and puts less load on the app."""

    def records(self, site: Site) -> list[WebRecord]:
        """Every record under ``site.location``; read-only."""
        raise NotImplementedError

    def location_of(self, path: str, query: Mapping[str, list[str]]) -> str | None:
        """The target location (``/path``) of the records an app page shows or acts on.

        ``path`` and ``query`` are the page's (the backup layer asks this when an
        agent clicks "delete" on that page).  ``None`` means the page names no
        record this adapter reads.  The default is the page's path: UI parameters
        such as ``?action=delete`` are not part of a record's address.
        """
        return path or "/"

    def lookup(self, site: Site, record: WebRecord) -> WebRecord | None:
        """The live version of ``record`` found outside the listing, or ``None``."""
        return None

    def depends_on(self, record: WebRecord) -> list[str]:
        """``kind:name`` refs of records to re-create before ``record``."""
        return []

    def soft(self, record: WebRecord, path: str) -> bool:
        """Whether the field at ``path`` (``metadata.changetime``) of ``record`` is
        derived by the app from other fields: an undo never conflicts on it, and the live
        value stands when both the call and a later writer moved it."""
        return False

    def comparable(self, record: WebRecord) -> WebRecord:
        """``record`` as its changes are told apart field by field: a list whose entries
        have an identity (a change log) keyed by it instead of by position."""
        return record

    def merge(self, base: WebRecord, theirs: WebRecord, live: WebRecord,
              merger: Merger) -> WebRecord | None:
        """Merge a record both an undone call and a later writer changed, recording
        conflicts and the fields taken back on ``merger``; ``None``: field by field."""
        return None

    def create(self, site: Site, record: WebRecord, refs: Refs) -> dict[str, Any]:
        """Re-create ``record``; return its new ``server`` fields.

        Raise :class:`RecordRefusedError` when the application says no.
        """
        raise NotImplementedError

    def create_many(
        self, site: Site, records: Sequence[WebRecord], refs: Refs
    ) -> list[dict[str, Any] | RecordRefusedError]:
        """Re-create ``records``, none of which depends on another of them.

        Returns, per record in order, its new ``server`` fields or the
        :class:`RecordRefusedError` the app gave.  The default calls
        :meth:`create` for each; override it to send them at once.
        """
        out: list[dict[str, Any] | RecordRefusedError] = []
        for record in records:
            try:
                out.append(self.create(site, record, refs))
            except RecordRefusedError as exc:
                out.append(exc)
        return out

    def update(self, site: Site, live: WebRecord, want: WebRecord, refs: Refs) -> bool:
        """Bring ``live`` to ``want`` in place; ``False`` when only re-creating can."""
        return False

    def delete(self, site: Site, live: WebRecord) -> None:
        """Remove ``live`` (a record the capture did not have)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the adapter opened for a capture or restore (a channel process)."""

    def selector_error(self, selector: str, url: str, detail: str = "") -> SelectorMismatchError:
        """The error for a selector that no longer matches (names this adapter)."""
        return SelectorMismatchError(self.name, selector, url, detail)
