"""Site adapter for isso, the self-hosted comment server (``web+isso://host:port/THREAD``).

The target's path is the thread URI (``/post/1``); a path ending in ``*`` is
every thread whose URI starts with the rest (``/blog/*``; ``/*`` is all of
them, listed from the admin pages).  Reading uses two views
of the app from inside the browser profile:

* the public JSON API ``GET /?uri=THREAD&plain=1`` — raw comment text,
  author, website, parent, mode, created/modified times, likes, dislikes;
* the admin page ``/admin/`` (the profile must hold an isso admin session) —
  the e-mail addresses, which the public API never shows, the thread title,
  and the per-comment moderation keys used to delete and edit.

Writing uses isso's HTTP API only (never its database):

* re-create: ``POST /new?uri=THREAD`` with text, author, email, website,
  parent (mapped to the parent's new id) and the notification flag — the
  comments of one nesting level several requests at a time, without the
  profile's cookies;
* edit in place: the admin moderation endpoint ``/id/ID/edit/KEY`` (text,
  author, website);
* delete: the admin moderation endpoint ``/id/ID/delete/KEY``.

What comes back, by field:

* content — ``text``, ``parent`` (as the parent's natural key): always;
* metadata — ``author``, ``email``, ``website``, ``notification``, ``mode``
  (published): always through ``POST /new``;
* server — ``id`` and ``parent_id`` (isso numbers comments itself; the
  restore report lists old → new), ``created`` and ``modified`` (isso stamps
  the time of the request and ``POST /new`` has no field for it), ``likes``
  and ``dislikes`` (isso counts one vote per client address, so no client
  can set a count).

isso nests one level deep: a reply to a reply is stored under the top-level
comment, and that is what the API shows and what comes back.  A comment
deleted while it has replies stays as an empty placeholder (mode 4); no API
creates one, so a captured placeholder that is gone is reported as refused.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar
from urllib.parse import quote, urlsplit

from preimage.connectors.web.adapter import (
    LoginRequiredError,
    RecordRefusedError,
    Refs,
    Response,
    Site,
    SiteAdapter,
)
from preimage.snapshot_schemas.web import WebRecord

ADMIN_PAGE_SIZE = 100  # isso's admin page shows 100 comments per page
_DUPLICATE_RE = re.compile(r" #\d+$")  # the natural key of a second same-text comment
_KEY_RE = re.compile(r"send_edit\(\s*\d+\s*,\s*'([^']+)'")

_ADMIN_JS = """() => {
  const root = document.querySelector('#isso-root');
  if (!root) return null;
  return Array.from(root.querySelectorAll('.isso-comment')).map((el) => {
    const id = Number(el.id.replace('isso-', ''));
    const email = document.getElementById('isso-email-' + id);
    const send = document.getElementById('send-edit-btn-' + id);
    const text = document.getElementById('isso-text-' + id);
    const thread = el.querySelector('.isso-comment-header > div');
    const link = thread ? thread.querySelector('a') : null;
    return {id, email: email ? email.textContent : null,
            onclick: send ? send.getAttribute('onclick') : null,
            text: text ? text.textContent : '',
            thread: link ? link.getAttribute('href') : null,
            threadText: thread ? thread.textContent : null};
  });
}"""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


class IssoAdapter(SiteAdapter):
    """isso comments of one thread (see the module docstring)."""

    name: ClassVar[str] = "isso"
    channel: ClassVar[str] = "isso HTTP API: POST /new, admin moderation edit/delete"
    server_reasons: ClassVar[dict[str, str]] = {
        "comment.id": "isso numbers comments itself; the report maps old → new",
        "comment.parent_id": "follows the parent's new id; the parent itself is content",
        "comment.created": "isso stamps the time of POST /new; no API field sets it",
        "comment.modified": "isso stamps the time of the last edit",
        "comment.likes": "isso counts one vote per client address; no client can set a count",
        "comment.dislikes": "isso counts one vote per client address; no client can set a count",
    }

    def __init__(self) -> None:
        self._keys: dict[int, str] = {}

    def location_of(self, path: str, query: Mapping[str, list[str]]) -> str | None:
        """The thread a page is about.

        The admin page filtered to one thread (``/admin/?comment_search_url=URL``)
        and the API (``/?uri=THREAD``) name it in their query; any other page of
        the isso server is addressed by its path.  The unfiltered admin page
        acts on every thread (``/*``).
        """
        if path.rstrip("/") == "/admin":
            url = (query.get("comment_search_url") or [""])[0]
            return (urlsplit(url).path or "/") if url else "/*"
        if path in ("", "/") and query.get("uri"):
            return query["uri"][0]
        return path or None

    # ------------------------------------------------------------------ reading
    def records(self, site: Site) -> list[WebRecord]:
        """The thread record and every comment of ``site.location``.

        A location ending in ``*`` names every thread whose URI starts with
        what comes before it (``/*``: all of them, ``/blog/*``: the blog's).
        """
        if site.location.endswith("*"):
            prefix = site.location[:-1]
            threads = sorted(t for t in self._threads(site) if t.startswith(prefix))
            return [r for t in threads for r in self._thread_records(site, t)]
        return self._thread_records(site, site.location)

    def _threads(self, site: Site) -> set[str]:
        """Every thread with a comment in any mode, from the admin pages."""
        return {r["thread"] for r in self._every_admin_row(site) if r["thread"]}

    def _every_admin_row(self, site: Site) -> Iterator[dict[str, Any]]:
        """Every comment row of the admin pages: published, pending and deleted, page by page."""
        for mode in (1, 2, 4):
            page = 0
            while True:
                got = self._admin_page(site, f"/admin/?mode={mode}&page={page}&order_by=id&asc=1")
                yield from got
                if len(got) < ADMIN_PAGE_SIZE:
                    break
                page += 1

    def _thread_records(self, site: Site, thread: str) -> list[WebRecord]:
        public = self._public(site, thread)
        admin, title = self._admin(site, thread)
        for c in public:
            if c["id"] not in admin:
                raise self.selector_error(
                    f"#isso-{c['id']}",
                    site.url("/admin/"),
                    f"comment {c['id']} is in the public API but not on the admin page",
                )
        by_id = {c["id"]: c for c in public}
        for cid, extra in admin.items():
            if cid not in by_id:  # pending moderation: only the admin page shows it
                by_id[cid] = {"id": cid, "parent": None, "text": extra["text"], "author": None,
                              "website": None, "mode": 2, "created": None, "modified": None,
                              "likes": 0, "dislikes": 0, "notification": 0}
        names: dict[int, str] = {}
        seen: dict[str, int] = {}
        ordered = sorted(by_id.values(), key=lambda c: (c["created"] or 0, c["id"]))
        for c in ordered:
            base = f"{thread} {html.unescape(c['author'] or 'anonymous')} {_digest(c['text'])}"
            seen[base] = seen.get(base, 0) + 1
            names[c["id"]] = base if seen[base] == 1 else f"{base} #{seen[base]}"
        records = []
        if title is not None:
            records.append(WebRecord(kind="thread", name=thread, content={"title": title}))
        for c in ordered:
            parent = c.get("parent")
            records.append(
                WebRecord(
                    kind="comment",
                    name=names[c["id"]],
                    content={"text": c["text"], "parent": names.get(parent) if parent else None},
                    metadata={
                        "author": c.get("author"),
                        "email": admin[c["id"]]["email"],
                        "website": c.get("website"),
                        "notification": c.get("notification", 0),
                        "mode": c.get("mode"),
                    },
                    server={
                        "id": c["id"],
                        "parent_id": parent,
                        "created": c.get("created"),
                        "modified": c.get("modified"),
                        "likes": c.get("likes", 0),
                        "dislikes": c.get("dislikes", 0),
                    },
                )
            )
        return records

    def _public(self, site: Site, thread: str) -> list[dict[str, Any]]:
        resp = site.fetch(f"/?uri={quote(thread)}&plain=1")
        if resp.status == 404:
            return []
        if resp.status != 200:
            raise RecordRefusedError(self.name, thread, f"GET /?uri= answered {resp.status}")
        out: list[dict[str, Any]] = []

        def walk(node: dict[str, Any]) -> None:
            for child in node.get("replies") or []:
                out.append(child)
                walk(child)

        walk(resp.json())
        return out

    def _admin(self, site: Site, thread: str) -> tuple[dict[int, dict[str, Any]], str | None]:
        """E-mail, moderation key and raw text by comment id; and the thread title."""
        rows = self._admin_page(site, f"/admin/?comment_search_url={quote('http://x' + thread)}")
        if len(rows) >= ADMIN_PAGE_SIZE:  # the search shows one page only: walk every page
            rows = [r for r in self._every_admin_row(site) if r["thread"] == thread]
        out: dict[int, dict[str, Any]] = {}
        title = None
        for r in rows:
            key = _KEY_RE.search(r["onclick"] or "")
            if key is None:
                raise self.selector_error(
                    f"#send-edit-btn-{r['id']}[onclick]", site.url("/admin/"),
                    "no moderation key next to the comment",
                )
            self._keys[r["id"]] = key.group(1)
            out[r["id"]] = {"email": r["email"] or None, "text": r["text"]}
            if title is None and r["threadText"]:
                m = re.match(r"\s*Thread:\s*(.*)\s*\(\s*" + re.escape(thread) + r"\s*\)\s*$",
                             r["threadText"], re.S)
                title = m.group(1).strip() if m else None
        return out, title

    def _admin_page(self, site: Site, path: str) -> list[dict[str, Any]]:
        page = site.goto(path)
        rows = page.evaluate(_ADMIN_JS)
        if rows is None:
            if page.locator("input[type=password]").count():
                raise LoginRequiredError(
                    self.name, site.url("/admin/"), str(site.profile),
                    "open /admin/ and enter the isso admin password",
                )
            raise self.selector_error("#isso-root", page.url, "the admin page has no comment list")
        return list(rows)

    # ------------------------------------------------------------------ writing
    def depends_on(self, record: WebRecord) -> list[str]:
        """A comment needs its thread and its parent."""
        if record.kind != "comment":
            return []
        thread = record.name.split(" ", 1)[0]
        deps = [f"thread:{thread}"]
        if record.content.get("parent"):
            deps.append(f"comment:{record.content['parent']}")
        return deps

    def create(self, site: Site, record: WebRecord, refs: Refs) -> dict[str, Any]:
        """Post the comment again through ``POST /new``."""
        result = self.create_many(site, [record], refs)[0]
        if isinstance(result, RecordRefusedError):
            raise result
        return result

    def create_many(
        self, site: Site, records: Sequence[WebRecord], refs: Refs
    ) -> list[dict[str, Any] | RecordRefusedError]:
        """Post independent comments through ``POST /new``, several requests at a time.

        Comments that share author and text (natural keys ``… #2``, ``… #3``) are
        posted one by one after the rest, in their captured order, since that order
        is what tells them apart.
        """
        out: dict[int, dict[str, Any] | RecordRefusedError] = {}
        batch: list[tuple[int, str, dict[str, Any]]] = []
        later: list[tuple[int, str, dict[str, Any]]] = []
        for i, record in enumerate(records):
            if record.kind == "thread":
                # isso creates a thread with its first comment; hand the title to it.
                out[i] = {"title": record.content["title"]}
            elif record.metadata.get("mode") == 4:
                out[i] = RecordRefusedError(
                    self.name, record.ref,
                    "it was a placeholder of a deleted comment with replies; no isso API "
                    "creates one",
                )
            else:
                thread = record.name.split(" ", 1)[0]
                post = (i, thread, self._new_body(record, thread, refs))
                (later if _DUPLICATE_RE.search(record.name) else batch).append(post)
        for posts, width in ((batch, 6), *(([p], 1) for p in later)):
            if not posts:
                continue
            # isso answers each new comment with a cookie that lets its author edit it
            # for a while.  Kept, one per re-created comment would pile up in the user's
            # profile, and past Chromium's 180 cookies per host the oldest go — the admin
            # login among them.  So these requests carry and keep no cookies.
            answers = site.fetch_all([f"/new?uri={quote(t)}" for _, t, _ in posts],
                                     method="POST", bodies=[b for _, _, b in posts],
                                     cookies=False, concurrency=width)
            for (i, thread, _), resp in zip(posts, answers, strict=True):
                out[i] = self._created(site, records[i], thread, resp)
        return [out[i] for i in range(len(records))]

    @staticmethod
    def _new_body(record: WebRecord, thread: str, refs: Refs) -> dict[str, Any]:
        parent_id = None
        if record.content.get("parent"):
            parent_id = refs[f"comment:{record.content['parent']}"]["id"]
        meta = record.metadata
        return {
            "text": record.content["text"],
            # isso HTML-escapes these on the way in; send what it stored, unescaped.
            "author": html.unescape(meta["author"]) if meta.get("author") else None,
            "email": html.unescape(meta["email"]) if meta.get("email") else None,
            "website": html.unescape(meta["website"]) if meta.get("website") else None,
            "parent": parent_id,
            "notification": meta.get("notification"),
            "title": refs.get(f"thread:{thread}", {}).get("title"),
        }

    def _created(
        self, site: Site, record: WebRecord, thread: str, resp: Response
    ) -> dict[str, Any] | RecordRefusedError:
        if resp.status not in (201, 202):
            return RecordRefusedError(
                self.name, record.ref, f"HTTP {resp.status}: {resp.text.strip()[:300]}"
            )
        data = resp.json()
        if data.get("mode") == 2 and record.metadata.get("mode") == 1:
            try:
                self._moderate(site, data["id"], "activate", thread)
            except RecordRefusedError as exc:
                return exc
        return {"id": data["id"], "parent_id": data.get("parent"), "created": data.get("created")}

    def update(self, site: Site, live: WebRecord, want: WebRecord, refs: Refs) -> bool:
        """Edit text, author or website in place; anything else needs re-creating."""
        if want.kind != "comment":
            return False
        fixed = ("parent",)
        if any(live.content.get(f) != want.content.get(f) for f in fixed):
            return False
        if any(live.metadata.get(f) != want.metadata.get(f) for f in ("email", "notification", "mode")):
            return False
        meta = want.metadata
        body = {
            "text": want.content["text"],
            "author": html.unescape(meta["author"]) if meta.get("author") else None,
            "website": html.unescape(meta["website"]) if meta.get("website") else None,
        }
        self._moderate(site, live.server["id"], "edit", live.name.split(" ", 1)[0], body)
        return True

    def delete(self, site: Site, live: WebRecord) -> None:
        """Delete a comment through the admin moderation endpoint (threads stay)."""
        if live.kind != "comment":
            return
        self._moderate(site, live.server["id"], "delete", live.name.split(" ", 1)[0])

    def _moderate(
        self, site: Site, cid: int, action: str, thread: str, body: Any = None
    ) -> None:
        if cid not in self._keys:
            self._admin(site, thread)
        key = self._keys.get(cid)
        if key is None:
            raise RecordRefusedError(self.name, f"comment {cid}", "not on the admin page")
        resp = site.fetch(f"/id/{cid}/{action}/{key}", method="POST", body=body if body else {})
        if resp.status == 404 and action == "delete":
            return  # already gone: isso drops an emptied placeholder with its last reply
        if resp.status != 200:
            raise RecordRefusedError(
                self.name, f"comment {cid}", f"{action}: HTTP {resp.status} {resp.text[:200]}"
            )
