"""Carrying out a restore :class:`~.plan.Plan`, and reporting it.

Order (every step is idempotent — a restore cut off half-way is finished by
running it again, and the planner's matching keeps it from duplicating what
the first run already put back):

1. verify every blob an APPEND needs, so a missing or corrupt blob stops the
   restore before anything is written;
2. create missing folders, parents first (with their special use where the
   server has CREATE-SPECIAL-USE), then fix subscriptions;
3. move (or copy) messages found in other folders back to their own folder;
4. APPEND the messages found nowhere, with flags and INTERNALDATE
   (MULTIAPPEND batches where offered);
5. look up new UIDs the server did not report (no UIDPLUS);
6. set flags and keywords where they differ (one STORE per distinct flag set);
7. expunge messages of owned folders that arrived after the capture;
8. delete owned folders created after the capture, children first.

What cannot be restored: UIDs, UIDVALIDITY, MODSEQ and UIDNEXT (the server
assigns them — each new UID is reported as an ``IdRemap``), ``\\Recent``,
and a special use on a server without CREATE-SPECIAL-USE (reported in the
notes; such servers set special use in their own configuration).
"""

from __future__ import annotations

from collections import defaultdict

from preimage.connectors.imap.digests import DigestCache
from preimage.connectors.imap.plan import Plan, Transfer
from preimage.connectors.imap.session import ImapSession
from preimage.connectors.imap.wire import NewMessage, batches
from preimage.interface.blobs import BlobStore
from preimage.restoration import IdRemap, Outcome, RestoreReport
from preimage.snapshot_schemas.imap import ImapFolder, ImapMessage, ImapSnapshot


def _flags(m: ImapMessage) -> tuple[str, ...]:
    return tuple(m.flags) + tuple(m.keywords)


def _folder_key(name: str) -> str:
    return ImapFolder(folder=name).natural_key()


class Applier:
    """Writes one plan to the live account and fills the report."""

    def __init__(
        self,
        session: ImapSession,
        snap: ImapSnapshot,
        blobs: BlobStore,
        plan: Plan,
        report: RestoreReport,
    ) -> None:
        self.s = session
        self.snap = snap
        self.blobs = blobs
        self.plan = plan
        self.report = report
        self.sep = snap.separator or "/"
        # Messages whose new UID the server did not report: folder → (UIDNEXT before, messages).
        self._unknown: dict[str, tuple[int, list[ImapMessage]]] = {}
        self._uidnext_before: dict[str, int] = {}
        self._fix: dict[str, list[tuple[ImapMessage, int]]] = defaultdict(list)
        self._caches: dict[str, DigestCache] = {}

    # ------------------------------------------------------------ dry run
    def report_plan(self) -> None:
        """Fill the report with what :meth:`run` would do, writing nothing."""
        r, p = self.report, self.plan
        for f in p.create:
            r.add(f.natural_key(), Outcome.PLANNED, "create folder")
        for f, on in p.subscribe:
            r.add(f.natural_key(), Outcome.PLANNED, "subscribe" if on else "unsubscribe")
        for t in p.transfers:
            verb = "move back" if t.move else "copy"
            r.add(t.message.natural_key(), Outcome.PLANNED, f"{verb} from {t.source}")
        for m in p.appends:
            r.add(m.natural_key(), Outcome.PLANNED, "append")
        for m, _uid in p.flag_fixes:
            r.add(m.natural_key(), Outcome.PLANNED, "set flags")
        for folder, extra in p.expunge.items():
            for live in extra:
                r.add(_extra_key(folder, live.uid, live.message_id), Outcome.PLANNED, "expunge")
        for name in p.delete_folders:
            r.add(_folder_key(name), Outcome.PLANNED, "delete folder")
        self._report_rest()

    def _report_rest(self) -> None:
        r, p = self.report, self.plan
        for key in p.unchanged:
            r.add(key, Outcome.UNCHANGED)
        for m in p.flag_skips:
            r.add(
                m.natural_key(),
                Outcome.SKIPPED,
                reason="flags differ; the merge policy leaves existing messages alone",
            )
        for f, uses in p.special_use_gaps:
            self._special_use_note(f.folder, uses)

    def _special_use_note(self, folder: str, uses: list[str]) -> None:
        want = " ".join(uses) or "none"
        self.report.notes.append(
            f"folder {folder!r}: special use ({want}) could not be set — the server has no "
            "CREATE-SPECIAL-USE; set it in the server's configuration"
        )

    # ------------------------------------------------------------ run
    def run(self) -> None:
        """Carry out the plan (see the module docstring for the order)."""
        p = self.plan
        for m in p.appends:
            self.blobs.verify(m.digest, path=m.natural_key())
        self._folders()
        self._transfers()
        self._appends()
        self._lookup_unknown()
        for cache in self._caches.values():
            cache.flush()
        self._flags()
        self._expunge()
        self._delete_folders()
        self._report_rest()
        self.report.notes.extend(n for n in self.s.notes if n not in self.report.notes)

    def _mark(self, folder: str) -> None:
        """Remember UIDNEXT of ``folder`` before the first write (to find UIDs without UIDPLUS)."""
        if folder not in self._uidnext_before and not self.s.has("UIDPLUS"):
            self._uidnext_before[folder] = self.s.status(folder).uidnext

    def _folders(self) -> None:
        p = self.plan
        for f in sorted(p.create, key=lambda f: f.folder):
            name = f.folder if f.selectable else f.folder + self.sep
            sent_use = self.s.create(name, f.special_use)
            self.report.add(f.natural_key(), Outcome.RESTORED, "created folder")
            if f.selectable and f.uidvalidity is not None:
                new = self.s.status(f.folder).uidvalidity
                self.report.remaps.append(
                    IdRemap(key=f.natural_key(), field="uidvalidity", old=f.uidvalidity, new=new)
                )
            if f.special_use and not sent_use:
                live = {i.name: i for i in self.s.folders()}.get(f.folder)
                if live is None or live.special_use != sorted(f.special_use):
                    self._special_use_note(f.folder, f.special_use)
        for f, on in p.subscribe:
            self.s.subscribe(f.folder, on)
            if f not in p.create:
                verb = "subscribed" if on else "unsubscribed"
                self.report.add(f.natural_key(), Outcome.RESTORED, verb)

    def _transfers(self) -> None:
        groups: dict[tuple[str, str, bool], list[Transfer]] = defaultdict(list)
        for t in self.plan.transfers:
            groups[(t.source, t.message.folder, t.move)].append(t)
        for (source, dest, move), group in sorted(groups.items()):
            self._mark(dest)
            self.s.open_folder(source, write=True)
            mapping = self.s.copy([t.uid for t in group], dest, move=move)
            verb = "moved back" if move else "copied"
            for t in group:
                self.report.add(t.message.natural_key(), Outcome.RESTORED, f"{verb} from {source}")
                self._placed(dest, t.message, mapping.get(t.uid), check_flags=True)

    def _appends(self) -> None:
        per_folder: dict[str, list[ImapMessage]] = defaultdict(list)
        for m in self.plan.appends:
            per_folder[m.folder].append(m)
        for folder, messages in sorted(per_folder.items()):
            self._mark(folder)
            for batch in batches(messages, lambda m: m.size):
                new = [
                    NewMessage(self.blobs.get_bytes(m.digest), _flags(m), m.internaldate)
                    for m in batch
                ]
                uids = self.s.append(folder, new)
                for m, uid in zip(batch, uids, strict=True):
                    self.report.add(m.natural_key(), Outcome.RESTORED, "appended")
                    self._placed(folder, m, uid, check_flags=False)

    def _placed(self, folder: str, m: ImapMessage, uid: int | None, *, check_flags: bool) -> None:
        """Record where ``m`` landed: a remap, and a flag check for moved copies."""
        if uid is None:
            before = self._uidnext_before.get(folder, 1)
            self._unknown.setdefault(folder, (before, []))[1].append(m)
            return
        if uid != m.uid:
            self.report.remaps.append(IdRemap(key=m.natural_key(), field="uid", old=m.uid, new=uid))
        self._cache(folder).put(uid, m.size, m.digest)
        if check_flags:
            self._fix[folder].append((m, uid))

    def _cache(self, folder: str) -> DigestCache:
        """The digest cache of ``folder``: the next capture need not download placed messages."""
        if folder not in self._caches:
            validity = self.s.status(folder).uidvalidity
            self._caches[folder] = DigestCache(self.blobs, self.s.account, folder, validity)
        return self._caches[folder]

    def _lookup_unknown(self) -> None:
        """Find the new UIDs of placed messages by Message-ID and size (no UIDPLUS)."""
        for folder, (before, messages) in self._unknown.items():
            self.s.open_folder(folder)
            arrived = [m for m in self.s.scan(f"{before}:*") if m.uid >= before]
            pool: dict[tuple[str | None, int], list[int]] = defaultdict(list)
            for live in arrived:
                pool[(live.message_id, live.size)].append(live.uid)
            for m in messages:
                found = pool.get((m.message_id, m.size))
                if found:
                    uid = found.pop(0)
                    if uid != m.uid:
                        self.report.remaps.append(
                            IdRemap(key=m.natural_key(), field="uid", old=m.uid, new=uid)
                        )
                    self._fix[folder].append((m, uid))
                    self._cache(folder).put(uid, m.size, m.digest)
                else:
                    self.report.notes.append(
                        f"the new UID of {m.natural_key()} could not be found (server without UIDPLUS)"
                    )

    def _flags(self) -> None:
        fixes = self._fix
        for m, uid in self.plan.flag_fixes:
            fixes[m.folder].append((m, uid))
            self.report.add(m.natural_key(), Outcome.RESTORED, "set flags")
        for folder, pairs in sorted(fixes.items()):
            by_flags: dict[tuple[str, ...], list[int]] = defaultdict(list)
            for m, uid in pairs:
                by_flags[tuple(sorted(_flags(m)))].append(uid)
            self.s.open_folder(folder, write=True)
            for flags, uids in sorted(by_flags.items()):
                self.s.set_flags(uids, flags)

    def _expunge(self) -> None:
        for folder, extra in sorted(self.plan.expunge.items()):
            self.s.open_folder(folder, write=True)
            self.s.expunge([m.uid for m in extra])
            for live in extra:
                self.report.add(
                    _extra_key(folder, live.uid, live.message_id),
                    Outcome.REMOVED,
                    "expunged: not in the snapshot",
                )

    def _delete_folders(self) -> None:
        for name in self.plan.delete_folders:
            # Deleting a folder can take a \\Noselect parent with it; skip names already gone.
            if name in {f.name for f in self.s.folders()}:
                self.s.delete(name)
            self.report.add(_folder_key(name), Outcome.REMOVED, "deleted folder: not in the snapshot")


def _extra_key(folder: str, uid: int, message_id: str | None) -> str:
    return f"kind=message|folder={folder}|uid={uid}|ident={message_id or '-'}"
