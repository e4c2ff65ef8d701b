"""Site adapter for Trac, the issue tracker (``web+trac://host:port/PATH?env=ENV_DIR``).

``PATH`` picks the records: ``/`` — every ticket and milestone;
``/ticket/N`` — one ticket; ``/milestone/NAME`` — the milestone and the
tickets linked to it; ``/wiki/PAGE`` — one wiki page with every version
(:mod:`.trac_wiki`); ``/admin/versioncontrol/repository`` — the source
repositories Trac serves (:mod:`.trac_repos`).  A milestone is Trac's label: deleting one in Trac's UI
moves its tickets off it (each gets a "Ticket retargeted after milestone
deleted" change), which is the "label and its links to issues" case.

Reading goes through the user's browser profile (Trac asks for a login; the
profile must hold a ``trac_auth`` cookie, which survives a browser restart
when Trac's ``[trac] auth_cookie_lifetime`` is set):

* ticket ids from the query module's CSV export (``/query?format=csv``);
* each ticket from its page's own script data: ``old_values`` (every field,
  times to the second) and ``changes`` (every change: author, time in µs,
  comment text, field old → new);
* milestones from ``/roadmap`` and each milestone's edit form (raw
  description, due and completed dates in the user's format and time zone,
  both read from the page).

Writing goes through Trac's admin channel (:mod:`.trac_channel`): Trac's own
model API on the environment directory, the access ``trac-admin`` has — so
the target needs ``env=/path/to/trac/env`` (else ``$PREIMAGE_TRAC_ENV``; and
``trac_python=`` if Trac runs under another Python than ``trac-admin``'s on
``PATH``).  The channel is one process per environment, started on first
use (it imports Trac, which takes seconds) and kept until the process ends,
so a capture, a restore and an undo in one process share it.  A deleted ticket is
re-created by replaying its history, so every change comes back with its
author and time; a ticket that was changed after the capture gets those
changes removed again (Trac puts each field back to its old value).

What comes back, by field:

* content — summary, description, type, priority, component, version,
  keywords, cc, owner, status, resolution, milestone, every change's comment
  and field changes; milestone descriptions;
* metadata — reporter, created time, change authors and times, the ticket's
  last-change time; milestone due and completed dates;
* server — the ticket number: Trac numbers tickets itself, so a re-created
  ticket gets a new one (listed as an id remap; links written as ``#N`` in
  other tickets' text are not rewritten).

Not captured: attachments, comment edit history (the current text of each
comment is), custom ticket fields beyond what ``old_values`` shows.
"""

from __future__ import annotations

import atexit
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote, unquote

from preimage.connectors.web.adapter import (
    LoginRequiredError,
    RecordRefusedError,
    Refs,
    Response,
    Site,
    SiteAdapter,
)
from preimage.connectors.web.trac_repos import read_repositories, repository_location
from preimage.connectors.web.trac_wiki import kept_versions, read_page, saved_versions, wiki_name
from preimage.interface.errors import InvalidTargetError, TerminalConnectorError
from preimage.restoration.merge import Merger
from preimage.snapshot_schemas.web import WebRecord

CONTENT_FIELDS = ("summary", "description", "type", "priority", "component", "milestone",
                  "version", "keywords", "cc", "owner", "status", "resolution")
_TOKENS = (("YYYY", "%Y"), ("YY", "%y"), ("MM", "%m"), ("dd", "%d"), ("hh", "%H"),
           ("mm", "%M"), ("ss", "%S"))

# Trac hands a ticket page its data as a block of ``var NAME=JSON;`` lines
# (its "script data"): old_values (every field) and changes (the change log).
_SCRIPT_DATA_RE = re.compile(r"^\s*var ([A-Za-z_]\w*)=(.*);\s*$", re.M)
_SCRIPT_RE = re.compile(r"<script\b[^>]*>(.*?)</script>", re.S | re.I)
_MILESTONE_JS = """() => {
  const v = (sel) => { const e = document.querySelector(sel); return e ? e : null; };
  // Trac answers the edit page of a milestone that does not exist with its "new" form
  if (v('form input[name=add]') && !v('form input[name=save]')) return {absent: true};
  const d = v('textarea#description'), due = v('#due'), dd = v('#duedate');
  const c = v('#completed'), cd = v('#completeddate');
  if (!d || !due || !dd || !c || !cd) return {missing: !d ? 'textarea#description' :
      !due ? 'input#due' : !dd ? 'input#duedate' : !c ? 'input#completed' : 'input#completeddate'};
  return {description: d.value, due: due.checked ? dd.value : null,
          completed: c.checked ? cd.value : null, hint: dd.getAttribute('title') || '',
          tz: (typeof jquery_ui !== 'undefined' && jquery_ui.default_timezone) || 0};
}"""


def _iso(dt: datetime | None) -> str | None:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if dt else None


def parse_trac_date(value: str, hint: str, tz_minutes: int) -> datetime:
    """A date typed in a Trac form, in the format its ``Format: …`` hint names."""
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        fmt = hint.replace("Format:", "").strip()
        for token, code in _TOKENS:
            fmt = fmt.replace(token, code)
        if " a" in fmt or fmt.endswith("a"):
            fmt = fmt.replace("%H", "%I").replace("a", "%p")
        dt = datetime.strptime(value.strip(), fmt)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone(timedelta(minutes=tz_minutes)))
    return dt.astimezone(UTC)


class TracChannel:
    """A running :mod:`.trac_channel` process for one Trac environment."""

    def __init__(self, env_dir: str, python: str) -> None:
        script = Path(__file__).with_name("trac_channel.py")
        self.proc = subprocess.Popen(
            [python, "-I", str(script), env_dir],  # -I: the sibling trac.py must not shadow trac
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )

    def call(self, **cmd: Any) -> dict[str, Any]:
        """Run one command; raise :class:`RecordRefusedError`-ready text on failure."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise TerminalConnectorError(f"Trac admin channel died: {err.strip()[-500:]}")
        out = json.loads(line)
        if not out["ok"]:
            raise RuntimeError(out["error"])
        return dict(out["result"])

    def close(self) -> None:
        """End the process."""
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        self.proc.wait(30)


#: Admin channels by (environment, Python), kept for the process: starting one imports
#: Trac (seconds), and a capture, a restore and an undo in one process use the same one.
_CHANNELS: dict[tuple[str, str], TracChannel] = {}


def _channel(env_dir: str, python: str) -> TracChannel:
    """The process's admin channel to ``env_dir``; a new one when the last one ended."""
    key = (os.path.abspath(env_dir), python)
    channel = _CHANNELS.get(key)
    if channel is None or channel.proc.poll() is not None:
        channel = _CHANNELS[key] = TracChannel(env_dir, python)
    return channel


@atexit.register
def _close_channels() -> None:
    while _CHANNELS:
        _CHANNELS.popitem()[1].close()


def _trac_python(site: Site) -> str:
    if site.params.get("trac_python"):
        return site.params["trac_python"]
    admin = shutil.which("trac-admin") or str(Path(sys.executable).parent / "trac-admin")
    try:
        first = Path(admin).read_text(errors="replace").splitlines()[0]
        if first.startswith("#!") and os.path.exists(first[2:].strip().split()[0]):
            return first[2:].strip().split()[0]
    except (OSError, IndexError):
        pass
    return sys.executable


class TracAdapter(SiteAdapter):
    """Trac tickets (with their full change history) and milestones."""

    name: ClassVar[str] = "trac"
    channel: ClassVar[str] = "Trac admin channel: trac.ticket.model on the environment directory"
    server_reasons: ClassVar[dict[str, str]] = {
        "ticket.id": "Trac numbers tickets itself; a re-created ticket gets the next number",
    }
    # Records come from the HTML, its inline script data and form fields: Trac's
    # ~20 static files per page would triple the time of every read.
    skip_resources: ClassVar[tuple[str, ...]] = ("stylesheet", "script", "image", "font")

    def __init__(self) -> None:
        self._channel: TracChannel | None = None

    def location_of(self, path: str, query: Mapping[str, list[str]]) -> str | None:
        """A ticket's or milestone's page (``?action=delete`` included) is that record;
        the milestone admin page of one milestone is that milestone; other ticket
        pages (reports, queries, the roadmap, ticket admin) act on the whole
        tracker, ``/``.  The repository admin page is every repository Trac serves (one
        repository's form, that one).  A wiki page (``/wiki/NAME``, any action) is that page with its
        history; the wiki's start page is ``/wiki/WikiStart``.  The timeline holds no
        record this adapter reads.
        """
        loc = path.rstrip("/")
        if re.fullmatch(r"/ticket/\d+|/milestone/[^/]+|/wiki/.+", loc) or (
                repository_location(loc) is not None):
            return loc
        if loc == "/wiki":
            return "/wiki/WikiStart"
        if m := re.fullmatch(r"/admin/ticket/milestones/([^/]+)", loc):
            return f"/milestone/{m.group(1)}"
        if loc in ("", "/newticket", "/report", "/query", "/roadmap") or loc.startswith(
            ("/report/", "/admin")
        ):
            return "/"
        return None

    # ------------------------------------------------------------------ reading
    def records(self, site: Site) -> list[WebRecord]:
        """The tickets and milestones under ``site.location``.

        A ticket's natural key is its creation time and reporter; tickets that
        share both get `` #2``, `` #3`` … in the order of their numbers.
        """
        seen: dict[str, int] = {}
        out = []
        for rec in self._records(site):
            seen[rec.ref] = seen.get(rec.ref, 0) + 1
            if seen[rec.ref] > 1:
                rec = rec.model_copy(update={"name": f"{rec.name} #{seen[rec.ref]}"})
            out.append(rec)
        return out

    def _records(self, site: Site) -> list[WebRecord]:
        loc = site.location.rstrip("/")
        if (repo := repository_location(loc)) is not None:
            return read_repositories(self, site, repo)
        if (page := wiki_name(loc)) is not None:
            wiki = read_page(self, site, page)
            return [wiki] if wiki else []
        if m := re.fullmatch(r"/ticket/(\d+)", loc):
            rec = self._ticket(site, int(m.group(1)))
            return [rec] if rec else []
        if m := re.fullmatch(r"/milestone/(.+)", loc):
            name = unquote(m.group(1))
            out = []
            ms = self._milestone(site, name)
            if ms is not None:
                out.append(ms)
            ids = self._query_ids(site, f"milestone={quote(name)}")
            return out + [r for r in self._tickets(site, ids) if r]
        if loc in ("", "/"):
            names = self._milestone_names(site)
            out = [m for m in (self._milestone(site, n) for n in names) if m]
            ids = self._query_ids(site, "id=1-999999999")
            return out + [r for r in self._tickets(site, ids) if r]
        raise InvalidTargetError(
            f"web+trac://{site.base_url.partition('://')[2]}{site.location}",
            "path must be /, /ticket/N, /milestone/NAME, /wiki/PAGE or "
            "/admin/versioncontrol/repository[/NAME]",
        )

    def lookup(self, site: Site, record: WebRecord) -> WebRecord | None:
        """A captured ticket found by its number when it left the listing."""
        if record.kind != "ticket":
            return None
        live = self._ticket(site, int(record.server["id"]))
        base = record.name.split(" #", 1)[0]
        return live.model_copy(update={"name": record.name}) if (
            live is not None and live.name == base) else None

    def _login_check(self, site: Site, status: int, url: str, body: str = "") -> None:
        if status in (401, 403):
            raise LoginRequiredError(
                self.name, url, str(site.profile), "open /login in that profile and sign in"
            )

    def _query_ids(self, site: Site, constraint: str) -> list[int]:
        path = f"/query?format=csv&max=0&col=id&order=id&{constraint}"
        resp = site.fetch(path)
        self._login_check(site, resp.status, site.url(path))
        if resp.status != 200:
            raise self.selector_error("query CSV (col=id)", site.url(path), f"HTTP {resp.status}")
        rows = list(csv.reader(io.StringIO(resp.text.lstrip("\ufeff"))))
        if not rows or rows[0][:1] != ["id"]:
            raise self.selector_error("query CSV column 'id'", site.url(path), "no id column")
        return [int(r[0]) for r in rows[1:] if r]

    def _ticket(self, site: Site, tid: int) -> WebRecord | None:
        return self._tickets(site, [tid])[0]

    def _tickets(self, site: Site, ids: list[int]) -> list[WebRecord | None]:
        """Tickets by number (``None`` where there is no such ticket), read a few at a time."""
        answers = site.fetch_all([f"/ticket/{tid}" for tid in ids])
        return [self._parse_ticket(site, resp) for resp in answers]

    def _parse_ticket(self, site: Site, resp: Response) -> WebRecord | None:
        if resp.status == 404:
            return None
        self._login_check(site, resp.status, resp.url)
        data: dict[str, Any] = {}
        for script in _SCRIPT_RE.findall(resp.text):
            if "var old_values=" in script:
                for m in _SCRIPT_DATA_RE.finditer(script):
                    if m.group(1) in ("old_values", "changes"):
                        data[m.group(1)] = json.loads(m.group(2))
        if set(data) != {"old_values", "changes"}:
            raise self.selector_error("script data old_values/changes", resp.url,
                                      "the ticket page no longer embeds its change log")
        old, changes = data["old_values"], data["changes"]
        log = [
            {"comment": c.get("comment", ""),
             "fields": {k: [v.get("old", ""), v.get("new", "")]
                        for k, v in sorted(c.get("fields", {}).items())}}
            for c in changes
        ]
        meta_log = [{"author": c.get("author", ""), "date": c.get("date")} for c in changes]
        return WebRecord(
            kind="ticket",
            name=f"{old['time']} {old['reporter']}",
            content={f: old.get(f, "") for f in CONTENT_FIELDS} | {"changes": log},
            metadata={"reporter": old["reporter"], "time": old["time"],
                      "changetime": old["changetime"], "change_log": meta_log},
            server={"id": old["id"]},
        )

    def _milestone_names(self, site: Site) -> list[str]:
        page = site.goto("/roadmap?show=all")
        if page.locator("a[href$='/login']").count() and not page.locator("#content").count():
            raise LoginRequiredError(self.name, page.url, str(site.profile))
        hrefs = page.eval_on_selector_all(
            ".milestone h2 a[href*='/milestone/']", "els => els.map(e => e.getAttribute('href'))"
        )
        if not hrefs and not page.locator("#content.roadmap").count():
            raise self.selector_error(".milestone h2 a", page.url, "no roadmap on the page")
        return [unquote(h.rsplit("/milestone/", 1)[1]) for h in hrefs]

    def _milestone(self, site: Site, name: str) -> WebRecord | None:
        url = site.url(f"/milestone/{quote(name)}?action=edit")
        site.goto(f"/milestone/{quote(name)}?action=edit")
        status = site.status
        if status == 404:
            return None
        self._login_check(site, status, url)
        data = site.page.evaluate(_MILESTONE_JS)
        if data.get("absent"):
            return None
        if "missing" in data:
            raise self.selector_error(data["missing"], url, "milestone edit form changed")
        hint, tz = data["hint"], int(data["tz"])
        due = parse_trac_date(data["due"], hint, tz) if data["due"] else None
        done = parse_trac_date(data["completed"], hint, tz) if data["completed"] else None
        return WebRecord(
            kind="milestone",
            name=name,
            content={"description": data["description"].replace("\r\n", "\n")},
            metadata={"due": _iso(due), "completed": _iso(done)},
        )

    # ------------------------------------------------------------------ admin channel
    def _admin(self, site: Site) -> TracChannel:
        if self._channel is None:
            env = site.params.get("env") or os.environ.get("PREIMAGE_TRAC_ENV")
            if not env:
                raise InvalidTargetError(
                    f"web+trac://{site.base_url.partition('://')[2]}{site.location}",
                    "restoring Trac records needs its admin channel: add "
                    "?env=/path/to/trac/env (the environment directory trac-admin uses) "
                    "or set PREIMAGE_TRAC_ENV",
                )
            self._channel = _channel(env, _trac_python(site))
        return self._channel

    def _call(self, site: Site, ref: str, **cmd: Any) -> dict[str, Any]:
        try:
            return self._admin(site).call(**cmd)
        except RuntimeError as exc:
            raise RecordRefusedError(self.name, ref, str(exc)) from exc

    def depends_on(self, record: WebRecord) -> list[str]:
        """A ticket needs its milestone first."""
        ms = record.content.get("milestone") if record.kind == "ticket" else None
        return [f"milestone:{ms}"] if ms else []

    # ------------------------------------------------------------------ undo
    def soft(self, record: WebRecord, path: str) -> bool:
        """A ticket's last-change time follows its changes."""
        return record.kind == "ticket" and path == "metadata.changetime"

    def comparable(self, record: WebRecord) -> WebRecord:
        """A ticket's change log keyed by each change's time (unique per ticket)."""
        if record.kind != "ticket":
            return record
        dates = [str(m["date"]) for m in record.metadata["change_log"]]
        return record.model_copy(update={
            "content": {**record.content, "changes": dict(zip(
                dates, record.content["changes"], strict=True))},
            "metadata": {**record.metadata, "change_log": dict(zip(
                dates, record.metadata["change_log"], strict=True))},
        })

    def merge(self, base: WebRecord, theirs: WebRecord, live: WebRecord,
              merger: Merger) -> WebRecord | None:
        """A ticket's change log merges change by change (by its time, which Trac keeps
        unique per ticket): the changes an undone call added go, the ones made since
        stay; its fields merge one by one.  An update then replays the log (:meth:`update`)."""
        if live.kind != "ticket":
            return None

        def log(rec: WebRecord) -> dict[str, dict[str, Any]]:
            return {str(m["date"]): {**c, **m} for c, m in zip(
                rec.content["changes"], rec.metadata["change_log"], strict=True)}

        def rest(rec: WebRecord, part: str) -> dict[str, Any]:
            return {k: v for k, v in getattr(rec, part).items()
                    if k not in ("changes", "change_log", "changetime")}

        content = merger.value(rest(base, "content"), rest(theirs, "content"),
                               rest(live, "content"), "content", "content")
        metadata = merger.value(rest(base, "metadata"), rest(theirs, "metadata"),
                                rest(live, "metadata"), "metadata", "metadata")
        entries = merger.value(log(base), log(theirs), log(live), "content", "content.changes")
        ordered = sorted(entries.values(), key=lambda e: e["date"] or 0)
        content["changes"] = [{"comment": e["comment"], "fields": e["fields"]} for e in ordered]
        metadata["change_log"] = [{"author": e["author"], "date": e["date"]} for e in ordered]
        metadata["changetime"] = live.metadata["changetime"]
        return live.model_copy(update={"content": content, "metadata": metadata})

    # ------------------------------------------------------------------ writing
    def create(self, site: Site, record: WebRecord, refs: Refs) -> dict[str, Any]:
        """Re-create a milestone, a wiki page with every version, or a ticket with its whole
        history replayed."""
        if record.kind == "milestone":
            self._put_milestone(site, record)
            return {}
        if record.kind == "wiki":
            self._call(site, record.ref, op="put_wiki", name=record.name, keep=0,
                       versions=saved_versions(record, 0))
            return {}
        if record.kind == "repository":
            self._put_repository(site, record)
            return {}
        initial = {f: record.content[f] for f in CONTENT_FIELDS}
        for change in reversed(record.content["changes"]):
            for field, (old, _new) in change["fields"].items():
                initial[field] = old
        out = self._call(site, record.ref, op="create_ticket", initial=initial,
                         reporter=record.metadata["reporter"], time=record.metadata["time"],
                         changes=self._changes(record, 0))
        return {"id": out["id"]}

    @staticmethod
    def _changes(record: WebRecord, start: int) -> list[dict[str, Any]]:
        return [
            {"author": m["author"], "date": m["date"], "comment": c["comment"],
             "fields": c["fields"]}
            for c, m in zip(record.content["changes"][start:],
                            record.metadata["change_log"][start:], strict=True)
        ]

    def _put_repository(self, site: Site, record: WebRecord) -> None:
        self._call(site, record.ref, op="put_repository", name=record.name,
                   **record.content, **record.metadata)

    def _put_milestone(self, site: Site, record: WebRecord) -> None:
        self._call(site, record.ref, op="put_milestone", name=record.name,
                   description=record.content["description"], due=record.metadata["due"],
                   completed=record.metadata["completed"])

    def update(self, site: Site, live: WebRecord, want: WebRecord, refs: Refs) -> bool:
        """Undo changes made after the capture and replay ones removed since (a wiki page:
        versions after the last one both share are deleted, the captured ones saved again)."""
        if want.kind == "milestone":
            self._put_milestone(site, want)
            return True
        if want.kind == "repository":
            self._put_repository(site, want)
            return True
        if want.kind == "wiki":
            kept = kept_versions(live, want)
            self._call(site, want.ref, op="put_wiki", name=want.name, keep=kept,
                       versions=saved_versions(want, kept))
            return True
        want_dates = [m["date"] for m in want.metadata["change_log"]]
        live_dates = [m["date"] for m in live.metadata["change_log"]]
        common = 0
        while (common < min(len(want_dates), len(live_dates))
               and want_dates[common] == live_dates[common]):
            common += 1
        tid = live.server["id"]
        if common < len(live_dates):
            keep = want_dates[common - 1] if common else None
            changetime = keep if keep is not None else _utimestamp(want.metadata["time"])
            self._call(site, want.ref, op="delete_changes", id=tid,
                       dates=list(reversed(live_dates[common:])), changetime=changetime)
        if common < len(want_dates):
            self._call(site, want.ref, op="append_changes", id=tid,
                       changes=self._changes(want, common))
        after = self._ticket(site, tid)
        return after is not None and after.content == want.content

    def delete(self, site: Site, live: WebRecord) -> None:
        """Delete a ticket, a milestone, a wiki page or a repository (Trac forgets it; its
        directory stays) that the capture did not have."""
        if live.kind == "milestone":
            self._call(site, live.ref, op="delete_milestone", name=live.name)
        elif live.kind == "wiki":
            self._call(site, live.ref, op="delete_wiki", name=live.name)
        elif live.kind == "repository":
            self._call(site, live.ref, op="delete_repository", name=live.name)
        else:
            self._call(site, live.ref, op="delete_ticket", id=live.server["id"])

    def close(self) -> None:
        """Let go of the admin channel (the process keeps it for its next operation and
        ends it at exit)."""
        self._channel = None


def _utimestamp(iso: str) -> int:
    dt = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return int(dt.timestamp() * 1_000_000)
