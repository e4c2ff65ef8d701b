"""``WebAppConnector``: records of a web application, through a site adapter.

Target: ``web+<adapter>://host:port/path?profile=/abs/profile-dir`` with
optional ``root=/mount`` (the app's path prefix) and ``https=1``.  The
profile is the browser profile whose logins are used (default:
``$PREIMAGE_BROWSER_PROFILE``); the adapter may read more parameters.

Restore, in order:

1. read the live records (and look up captured records that left the listing);
2. with ``conflict=refuse``, stop if any record differs;
3. walk the captured records parents first, one wave of mutually independent
   records at a time: unchanged ones are left alone, changed ones are updated
   in place or, when the app cannot, deleted and re-created, missing ones are
   re-created — a wave's re-creations in one :meth:`SiteAdapter.create_many`
   call (a record whose parent could not come back fails with that reason);
4. with ``conflict=overwrite``, delete live records the capture did not
   have, children first;
5. read the records again and report, per record and field, what came back,
   what did not, and — for ``server`` fields — why no client can set them;
   every server id that changed is listed as an :class:`IdRemap`.

Limited to exact keys (:attr:`RestorePolicy.keys`, an undo of one call), steps 3
and 4 touch exactly the named records: no other record is updated, re-created or
deleted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

from preimage.connectors.web.adapter import RecordRefusedError, Refs, Site, SiteAdapter
from preimage.connectors.web.address import adapter_name
from preimage.connectors.web.registry import get_site_adapter
from preimage.connectors.web.revert import WebReverter
from preimage.interface.blobs import BlobStore
from preimage.interface.connector import Capabilities, ConnectorBase, Granularity
from preimage.interface.errors import InvalidTargetError, RestoreConflictError, TerminalConnectorError
from preimage.interface.target import Target
from preimage.restoration import (
    ConflictMode,
    IdRemap,
    Outcome,
    Relocation,
    RestorePolicy,
    RestoreReport,
)
from preimage.snapshot_schemas import Snapshot
from preimage.snapshot_schemas.web import WebRecord, WebSnapshot


def open_site(target: Target, adapter: SiteAdapter) -> Site:
    """A :class:`Site` for ``target`` in the browser profile it names."""
    from preimage.connectors.browser.chromium import browser_context

    if not target.host:
        raise InvalidTargetError(target.redacted, "no host — write web+NAME://host:port/path")
    params = {k: v[-1] for k, v in target.query.items() if v}
    profile_raw = params.get("profile") or os.environ.get("PREIMAGE_BROWSER_PROFILE")
    if not profile_raw:
        raise InvalidTargetError(
            target.redacted,
            "no browser profile — add ?profile=/path/to/profile-dir or set "
            "PREIMAGE_BROWSER_PROFILE (the profile holds the logins the adapter reads with)",
        )
    profile = Path(profile_raw).expanduser().resolve()
    if not profile.is_dir():
        raise TerminalConnectorError(
            f"browser profile {profile} does not exist — give the profile the browser uses",
            target=target.redacted,
        )
    scheme = "https" if params.get("https") in ("1", "true", "yes") else "http"
    netloc = target.host + (f":{target.port}" if target.port else "")
    root = "/" + params.get("root", "").strip("/")
    base = f"{scheme}://{netloc}{root.rstrip('/')}"
    return Site(
        adapter=adapter.name,
        base_url=base,
        location=target.path or "/",
        params=params,
        profile=profile,
        context=browser_context(profile),
        skip_resources=tuple(adapter.skip_resources),
    )


def _ordered(records: list[WebRecord], adapter: SiteAdapter) -> list[WebRecord]:
    """``records`` with every record after the records it depends on."""
    by_ref = {r.ref: r for r in records}
    out: list[WebRecord] = []
    state: dict[str, int] = {}

    def visit(rec: WebRecord) -> None:
        if state.get(rec.ref) == 2:
            return
        if state.get(rec.ref) == 1:
            raise TerminalConnectorError(f"site adapter {adapter.name!r}: cycle at {rec.ref}")
        state[rec.ref] = 1
        for dep in adapter.depends_on(rec):
            if dep in by_ref:
                visit(by_ref[dep])
        state[rec.ref] = 2
        out.append(rec)

    for rec in records:
        visit(rec)
    return out


def _waves(records: list[WebRecord], adapter: SiteAdapter) -> list[list[WebRecord]]:
    """``records`` parents first, in waves: no record depends on another of its wave,
    so an adapter may write a wave at once (:meth:`SiteAdapter.create_many`)."""
    level: dict[str, int] = {}
    waves: list[list[WebRecord]] = []
    for rec in _ordered(records, adapter):
        n = 1 + max((level[d] for d in adapter.depends_on(rec) if d in level), default=-1)
        level[rec.ref] = n
        if n == len(waves):
            waves.append([])
        waves[n].append(rec)
    return waves


def _fields(rec: WebRecord) -> dict[str, Any]:
    return {f"content.{k}": v for k, v in rec.content.items()} | {
        f"metadata.{k}": v for k, v in rec.metadata.items()
    }


class WebAppConnector(ConnectorBase):
    """Records of a web application through a site adapter (see module doc)."""

    scheme: ClassVar[str] = "web+"
    snapshot_type: ClassVar[type[Snapshot]] = WebSnapshot
    capabilities: ClassVar[Capabilities] = Capabilities(
        server_identities=True, remote=True, relocates=True, undo=Granularity(
            "record by the site adapter's natural key", "content and metadata field",
            "as the adapter declares (Trac: change log entry by entry)"))
    reverter: ClassVar[WebReverter] = WebReverter()

    def capture(self, target: Target, blobs: BlobStore) -> WebSnapshot:
        """List the records under the target's path through the adapter; change nothing."""
        adapter = get_site_adapter(adapter_name(target))
        site = open_site(target, adapter)
        try:
            records = adapter.records(site)
        finally:
            site.close()
            adapter.close()
        seen: set[str] = set()
        for rec in records:
            if rec.ref in seen:
                raise TerminalConnectorError(
                    f"site adapter {adapter.name!r} gave two records the key {rec.ref!r}"
                )
            seen.add(rec.ref)
        return WebSnapshot(
            target=target.redacted,
            adapter=adapter.name,
            base_url=site.base_url,
            location=site.location,
            server_reasons=dict(adapter.server_reasons),
            items=records,
            uncaptured=site.uncaptured,
            notes=site.notes,
        )

    def relocate(
        self, snapshot: Snapshot, destination: Target, *, other: Snapshot | None = None,
        blobs: BlobStore | None = None,
    ) -> Relocation:
        """The records in another instance of the same app (:mod:`.relocate`)."""
        from preimage.connectors.web.relocate import relocate_records

        assert isinstance(snapshot, WebSnapshot)
        return relocate_records(snapshot, destination)

    def capture_following(self, target: Target, blobs: BlobStore, previous: Snapshot
                          ) -> WebSnapshot:
        """:meth:`capture`, plus every record of ``previous`` that left the listing but still
        exists (:meth:`SiteAdapter.lookup`: a ticket moved off a deleted milestone) — so a
        capture right after a call, compared with the one before it, shows such a record
        as changed, not deleted."""
        snap = self.capture(target, blobs)
        assert isinstance(previous, WebSnapshot)
        listed = {r.ref for r in snap.items}
        gone = [r for r in previous.items if r.ref not in listed]
        if not gone:
            return snap
        adapter = get_site_adapter(adapter_name(target))
        site = open_site(target, adapter)
        try:
            found = [adapter.lookup(site, r) for r in gone]
        finally:
            site.close()
            adapter.close()
        followed = [r for r in found if r is not None and r.ref not in listed]
        return snap.model_copy(update={"items": [*snap.items, *followed]})

    def _live(self, adapter: SiteAdapter, site: Site, wanted: list[WebRecord]) -> tuple[
        dict[str, WebRecord], set[str]
    ]:
        listed = {r.ref: r for r in adapter.records(site)}
        live = dict(listed)
        for rec in wanted:
            if rec.ref not in live:
                found = adapter.lookup(site, rec)
                if found is not None:
                    live[rec.ref] = found
        return live, set(listed)

    def restore(
        self, snapshot: Snapshot, blobs: BlobStore, *, policy: RestorePolicy
    ) -> RestoreReport:
        """Bring the records back (see the module doc for the order)."""
        assert isinstance(snapshot, WebSnapshot)
        target = Target.parse(snapshot.target)
        adapter = get_site_adapter(adapter_name(target))
        report = RestoreReport(target=snapshot.target, connector="web", dry_run=policy.dry_run)
        report.notes.append(f"channel: {adapter.channel}")
        site = open_site(target, adapter)
        try:
            self._restore(adapter, site, snapshot, policy, report)
        finally:
            site.close()
            adapter.close()
        return report

    def _restore(
        self,
        adapter: SiteAdapter,
        site: Site,
        snapshot: WebSnapshot,
        policy: RestorePolicy,
        report: RestoreReport,
    ) -> None:
        exact = policy.keys
        wanted = [r for r in snapshot.items if r.natural_key() in exact] if exact is not None else [
            r for r in snapshot.items if policy.in_scope(r.name) or policy.in_scope(r.ref)]
        live, listed = self._live(adapter, site, wanted)
        want_refs = {r.ref for r in snapshot.items}
        differs = {r.ref for r in wanted if r.ref in live and _fields(live[r.ref]) != _fields(r)}
        missing = {r.ref for r in wanted if r.ref not in live}
        # A record created after the capture is deleted only when the restore's scope
        # holds it: `--only` names what to put back, and leaves the rest as it is.
        extras = [live[ref] for ref in listed if ref not in want_refs and (
            policy.in_scope(live[ref].name) or policy.in_scope(live[ref].ref)
            if exact is None else live[ref].natural_key() in exact)]
        if policy.conflict is ConflictMode.REFUSE and (differs or missing or extras):
            raise RestoreConflictError(
                snapshot.target, sorted(differs | missing | {e.ref for e in extras})
            )
        merge = policy.conflict is ConflictMode.MERGE
        refs = {ref: dict(rec.server) for ref, rec in live.items()}
        coming = {r.ref for r in wanted}
        done: dict[str, str] = {}  # ref → "created" | "updated"
        failed: dict[str, str] = {}
        for wave in _waves(wanted, adapter):
            to_create: list[WebRecord] = []
            for rec in wave:
                ref = rec.ref
                if ref not in differs and ref not in missing:
                    report.add(ref, Outcome.UNCHANGED)
                    continue
                if ref in differs and merge:
                    report.add(ref, Outcome.SKIPPED,
                               reason="merge leaves changed records as they are")
                    continue
                blocked = [d for d in adapter.depends_on(rec) if d in failed]
                if exact is not None and not blocked:
                    # Exact keys: a record another writer removed since is not brought back
                    # for a dependant — the dependant cannot come back without it.
                    gone = [d for d in adapter.depends_on(rec) if d not in refs and d not in coming]
                    if gone:
                        failed[ref] = f"it depends on {gone[0]}, which is gone"
                        report.add(ref, Outcome.FAILED, reason=failed[ref])
                        continue
                if blocked:
                    failed[ref] = f"it depends on {blocked[0]}, which could not be restored"
                    report.add(ref, Outcome.FAILED, reason=failed[ref])
                    continue
                action = "update in place" if ref in differs else "re-create"
                if policy.dry_run:
                    report.add(ref, Outcome.PLANNED, action=f"{action} ({adapter.channel})")
                    continue
                try:
                    if ref in differs and adapter.update(site, live[ref], rec, refs):
                        done[ref] = "updated in place"
                        continue
                    if ref in differs:
                        adapter.delete(site, live[ref])
                except RecordRefusedError as exc:
                    failed[ref] = exc.reason
                    report.add(ref, Outcome.FAILED, action=action, reason=f"refused: {exc.reason}")
                    continue
                to_create.append(rec)
            if to_create:
                self._create(adapter, site, to_create, refs, differs, done, failed, report)
        for extra in reversed(_ordered(extras, adapter)):
            if merge:
                report.add(extra.ref, Outcome.SKIPPED, reason="merge keeps records created later")
            elif policy.dry_run:
                report.add(extra.ref, Outcome.PLANNED, action="delete (not in the capture)")
            else:
                try:
                    adapter.delete(site, extra)
                except RecordRefusedError as exc:
                    report.add(extra.ref, Outcome.FAILED, action="delete", reason=exc.reason)
                    continue
                report.add(extra.ref, Outcome.REMOVED, action="deleted (not in the capture)")
        if done:
            self._verify(adapter, site, snapshot, wanted, done, report, refs)

    @staticmethod
    def _create(
        adapter: SiteAdapter,
        site: Site,
        records: list[WebRecord],
        refs: Refs,
        differs: set[str],
        done: dict[str, str],
        failed: dict[str, str],
        report: RestoreReport,
    ) -> None:
        """Re-create one wave of records and note new ids as remaps."""
        results = adapter.create_many(site, records, refs)
        for rec, result in zip(records, results, strict=True):
            if isinstance(result, RecordRefusedError):
                failed[rec.ref] = result.reason
                action = "update in place" if rec.ref in differs else "re-create"
                report.add(rec.ref, Outcome.FAILED, action=action,
                           reason=f"refused: {result.reason}")
                continue
            refs[rec.ref] = dict(result)
            done[rec.ref] = "re-created"
            if "id" in rec.server and "id" in result and result["id"] != rec.server["id"]:
                report.remaps.append(IdRemap(key=rec.ref, field="server.id",
                                             old=rec.server["id"], new=result["id"]))

    def _verify(
        self,
        adapter: SiteAdapter,
        site: Site,
        snapshot: WebSnapshot,
        wanted: list[WebRecord],
        done: dict[str, str],
        report: RestoreReport,
        refs: Refs,
    ) -> None:
        """Read back every written record and say, per field, what came back.

        A re-created record is looked up under the ids the app gave it (``refs``): a
        record the target names by its id (a Trac ticket re-created under a new number
        while another ticket is newer) is found there, not reported as missing."""
        renumbered = [r.model_copy(update={"server": {**r.server, **refs[r.ref]}})
                      if done.get(r.ref) == "re-created" and refs.get(r.ref) else r
                      for r in wanted]
        after, _ = self._live(adapter, site, renumbered)
        for rec in wanted:
            if rec.ref not in done:
                continue
            got = after.get(rec.ref)
            action = f"{done[rec.ref]} ({adapter.channel})"
            if got is None:
                report.add(rec.ref, Outcome.FAILED, action=action,
                           reason="written, but the application does not show it afterwards")
                continue
            want_f, got_f = _fields(rec), _fields(got)
            lost = sorted(k for k in want_f if got_f.get(k) != want_f[k])
            came = sorted(k for k in want_f if k not in lost)
            server = [
                f"{k} ({snapshot.server_reasons.get(f'{rec.kind}.{k}', 'assigned by the app')})"
                for k in sorted(rec.server)
                if got.server.get(k) != rec.server[k]
            ]
            parts = [f"came back: {', '.join(came) or 'nothing'}"]
            if lost:
                parts.append(f"did not come back: {', '.join(lost)}")
            if server:
                parts.append("server-assigned, not settable: " + "; ".join(server))
            content_lost = [k for k in lost if k.startswith("content.")]
            outcome = Outcome.FAILED if content_lost else Outcome.RESTORED
            report.add(rec.ref, outcome, action=action, reason=" | ".join(parts))

