"""``BrowserConnector``: cookies, Web Storage and IndexedDB of origins in a Chromium profile.

Target: ``browser:///abs/profile-dir?origin=http://127.0.0.1:8080`` (``origin``
may repeat; a relative ``browser://profile-dir?...`` is taken from the
current directory).

How the state is reached without changing it:

* cookies through the browser context (``httpOnly`` ones included), every
  cookie whose domain matches the origin's host;
* localStorage and IndexedDB from a tab at the origin whose document preimage
  serves itself (the request never reaches the site and no site script runs,
  so the capture cannot set a cookie or bump a counter — and it works while
  the site is down);
* sessionStorage exists per tab.  It is read from, and written back to, the
  profile's *session tab*: the first open tab at the origin in the Chromium
  this process drives for the profile.  Without such a tab there is no
  sessionStorage to read; the snapshot says so (``session_tab = False``) and
  a restore of it leaves sessionStorage alone.  A restore that has
  sessionStorage to write and finds no tab opens one and keeps it open: later
  navigations in that tab see the restored sessionStorage; a new tab never
  does (that is the web's rule, not a limit of preimage).

Restore order: cookies (cleared for the origin's host, then set with every
attribute), then localStorage and sessionStorage (cleared, then set), then
IndexedDB (databases the capture did not have are deleted; each captured
database is deleted and re-created at its version with its stores, key paths,
auto-increment flags and indexes, its records put back with their keys, and
each key generator advanced to where it stood).  A restore limited to exact
keys (an undo) writes item by item instead: see :mod:`.exact`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from preimage.connectors.browser.address import parse_target
from preimage.connectors.browser.chromium import browser_context
from preimage.connectors.browser.pages import OriginPage, cookie_dict, db_specs, host_matches
from preimage.connectors.browser.revert import BrowserReverter
from preimage.connectors.browser.scripts import CAPTURE_JS, RESTORE_JS
from preimage.interface.blobs import BlobStore
from preimage.interface.connector import Capabilities, ConnectorBase, Granularity
from preimage.interface.errors import RestoreConflictError, TerminalConnectorError
from preimage.interface.target import Target
from preimage.restoration import ConflictMode, Outcome, Relocation, RestorePolicy, RestoreReport
from preimage.similarity import StateDiff, diff_snapshots
from preimage.snapshot_schemas import Snapshot
from preimage.snapshot_schemas.browser import (
    BrowserSnapshot,
    CookieEntry,
    IdbDatabase,
    IdbStore,
    IndexSpec,
    StorageEntry,
)

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext


class BrowserConnector(ConnectorBase):
    """Client-side state of origins in a persistent Chromium profile (see module doc)."""

    scheme: ClassVar[str] = "browser"
    snapshot_type: ClassVar[type[Snapshot]] = BrowserSnapshot
    # A target names an existing profile (the browser created it); there is no absent one.
    capabilities: ClassVar[Capabilities] = Capabilities(
        absent_targets=False, relocates=True, undo=Granularity(
        "cookie by name, domain and path; storage entry by key; IndexedDB record by key; "
        "IndexedDB database and store whole", "cookie attribute"))
    reverter: ClassVar[BrowserReverter] = BrowserReverter()

    def relocate(
        self, snapshot: Snapshot, destination: Target, *, other: Snapshot | None = None,
        blobs: BlobStore | None = None,
    ) -> Relocation:
        """The origins' state in another profile (:mod:`.relocate`)."""
        from preimage.connectors.browser.relocate import relocate_profile

        assert isinstance(snapshot, BrowserSnapshot)
        return relocate_profile(snapshot, destination)

    # ------------------------------------------------------------------ capture
    def capture(self, target: Target, blobs: BlobStore) -> BrowserSnapshot:
        """Read cookies, Web Storage and IndexedDB of each origin; change nothing."""
        profile, origins = parse_target(target)
        if not profile.is_dir():
            raise TerminalConnectorError(
                f"browser profile {profile} does not exist — give the directory the browser "
                "was started with (--user-data-dir)",
                target=target.redacted,
            )
        ctx = browser_context(profile)
        items: list[Any] = []
        notes: list[str] = []
        had_tab = False
        all_cookies = ctx.cookies()
        for origin in origins:
            host = urlsplit(origin).hostname or ""
            for c in all_cookies:
                if host_matches(c.get("domain", ""), host):
                    items.append(
                        CookieEntry(
                            name=c["name"],
                            domain=c["domain"],
                            path=c.get("path", "/"),
                            partition_key=c.get("partitionKey") or None,
                            value=c["value"],
                            expires=float(c.get("expires", -1)),
                            http_only=bool(c.get("httpOnly", False)),
                            secure=bool(c.get("secure", False)),
                            same_site=c.get("sameSite", "Lax"),
                        )
                    )
            with OriginPage(ctx, origin) as tab:
                assert tab.page is not None
                state = tab.page.evaluate(CAPTURE_JS, {"withSession": tab.is_session})
                had_tab = had_tab or tab.is_session
            if not tab.is_session:
                notes.append(
                    f"no open tab at {origin}: sessionStorage (which lives per tab) not captured"
                )
            items += self._storage_items(origin, state, blobs)
        uri = f"browser://{profile}?" + "&".join(f"origin={o}" for o in origins)
        return BrowserSnapshot(
            target=uri,
            profile=str(profile),
            origin=origins[0] if len(origins) == 1 else ",".join(origins),
            session_tab=had_tab,
            items=items,
            notes=notes,
        )

    @staticmethod
    def _storage_items(origin: str, state: dict[str, Any], blobs: BlobStore) -> list[Any]:
        items: list[Any] = [
            StorageEntry(kind="localStorage", origin=origin, name=k, value=v)
            for k, v in sorted(state["local"].items())
        ]
        if state["session"] is not None:
            items += [
                StorageEntry(kind="sessionStorage", origin=origin, name=k, value=v)
                for k, v in sorted(state["session"].items())
            ]
        for db in state["idb"]:
            items.append(IdbDatabase(origin=origin, name=db["name"], version=db["version"]))
            for store in db["stores"]:
                lines = (
                    json.dumps(rec, sort_keys=True, separators=(",", ":")) for rec in store["records"]
                )
                digest = blobs.put_chunks((line + "\n").encode() for line in lines)
                items.append(
                    IdbStore(
                        origin=origin,
                        database=db["name"],
                        name=store["name"],
                        key_path=store["keyPath"],
                        auto_increment=store["autoIncrement"],
                        next_key=store["nextKey"],
                        indexes=[
                            IndexSpec(
                                name=ix["name"],
                                key_path=ix["keyPath"],
                                unique=ix["unique"],
                                multi_entry=ix["multiEntry"],
                            )
                            for ix in store["indexes"]
                        ],
                        records=len(store["records"]),
                        digest=digest,
                    )
                )
        return items

    # ------------------------------------------------------------------ restore
    def restore(
        self, snapshot: Snapshot, blobs: BlobStore, *, policy: RestorePolicy
    ) -> RestoreReport:
        """Write the captured state back into the same profile (see module doc)."""
        assert isinstance(snapshot, BrowserSnapshot)
        if policy.exact:
            from preimage.connectors.browser.exact import restore_keys

            return restore_keys(self, snapshot, blobs, policy)
        report = RestoreReport(
            target=snapshot.target, connector=self.scheme, dry_run=policy.dry_run
        )
        target = Target.parse(snapshot.target)
        profile, origins = parse_target(target)
        live = self.capture(target, blobs)
        changes = diff_snapshots(snapshot, live, blobs)
        changed = {c.key: c.change for c in changes.changes}
        if policy.conflict is ConflictMode.REFUSE and changes.changes:
            raise RestoreConflictError(snapshot.target, sorted(changed))
        merge = policy.conflict is ConflictMode.MERGE
        for item in snapshot.items:
            k = item.natural_key()
            if not policy.in_scope(item.kind):
                report.add(k, Outcome.SKIPPED, reason="outside --only scope")
            elif k not in changed and not self._records_changed(item, changes):
                report.add(k, Outcome.UNCHANGED)
            elif policy.dry_run:
                report.add(k, Outcome.PLANNED, action="write back")
            else:
                report.add(k, Outcome.RESTORED, action="written back")
        for c in changes.changes:
            if c.change == "added" and not c.key.startswith("kind=idb-record"):
                if merge:
                    report.add(c.key, Outcome.SKIPPED, reason="merge keeps state created later")
                else:
                    report.add(
                        c.key,
                        Outcome.PLANNED if policy.dry_run else Outcome.REMOVED,
                        action="remove (not in the capture)",
                    )
        if not snapshot.session_tab:
            report.notes.append("sessionStorage was not captured (no open tab); left as it is")
        if policy.dry_run or not changes.changes:
            return report
        ctx = browser_context(profile)
        self._restore_cookies(ctx, snapshot, origins, merge=merge, policy=policy)
        for origin in origins:
            self._restore_storage(ctx, snapshot, origin, blobs, merge=merge, policy=policy)
        return report

    @staticmethod
    def _records_changed(item: Any, changes: StateDiff) -> bool:
        if not isinstance(item, IdbStore):
            return False
        prefix = f"kind=idb-record|origin={item.origin}|database={item.database}|store={item.name}|"
        return any(c.key.startswith(prefix) for c in changes.changes)

    @staticmethod
    def _restore_cookies(
        ctx: BrowserContext,
        snapshot: BrowserSnapshot,
        origins: list[str],
        *,
        merge: bool,
        policy: RestorePolicy,
    ) -> None:
        if not policy.in_scope("cookie"):
            return
        hosts = [urlsplit(o).hostname or "" for o in origins]
        live = ctx.cookies()
        if not merge:
            ours = {c["domain"] for c in live if any(host_matches(c["domain"], h) for h in hosts)}
            for domain in ours:
                ctx.clear_cookies(domain=domain)
        have = {(c["name"], c["domain"], c.get("path", "/")) for c in ctx.cookies()}
        wanted: list[Any] = []
        for item in snapshot.items:
            if not isinstance(item, CookieEntry):
                continue
            if merge and (item.name, item.domain, item.path) in have:
                continue
            wanted.append(cookie_dict(item))
        if wanted:
            ctx.add_cookies(wanted)

    @staticmethod
    def _restore_storage(
        ctx: BrowserContext,
        snapshot: BrowserSnapshot,
        origin: str,
        blobs: BlobStore,
        *,
        merge: bool,
        policy: RestorePolicy,
    ) -> None:
        local: dict[str, str] = {}
        session: dict[str, str] = {}
        for item in snapshot.items:
            if isinstance(item, StorageEntry) and item.origin == origin:
                (local if item.kind == "localStorage" else session)[item.name] = item.value
        dbs = db_specs(snapshot, origin, blobs)
        write_session = snapshot.session_tab and policy.in_scope("sessionStorage")
        with OriginPage(ctx, origin, keep=write_session) as tab:
            assert tab.page is not None
            tab.page.evaluate(
                RESTORE_JS,
                {
                    "local": local if policy.in_scope("localStorage") else None,
                    "session": session if write_session else None,
                    "idb": list(dbs.values()) if policy.in_scope("idb") else None,
                    "merge": merge,
                },
            )


