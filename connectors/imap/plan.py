"""Planning a restore: which folders to create, which messages to move, append or fix.

The live account is compared with the snapshot; nothing is written here.
Messages are matched, never duplicated:

1. **in place** — a live message of the same folder with the snapshot's UID
   under the same UIDVALIDITY (its bytes cannot have changed), else one with
   the same Message-ID, size and sha256 of its bytes;
2. **elsewhere** — a live message with the same Message-ID, size and digest
   in another folder.  Under ``overwrite`` it is *moved* back when it is
   spare: an unclaimed message in a folder the restore owns, or one that
   arrived in its folder after the capture (UID at or above the folder's
   UIDNEXT then — the snapshot's watermarks); a message that was already
   there before the capture is *copied*, never taken away.  Under ``merge``
   it is always copied;
3. otherwise the message is **appended** from the blob store with its flags
   and INTERNALDATE.

Live messages of folders the restore owns (the account, a folder, a folder
tree — not a message selection) that match nothing are expunged under
``overwrite``; owned folders the snapshot does not have are deleted.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field

from preimage.connectors.imap.capture import in_tree, server_name
from preimage.connectors.imap.digests import DigestCache
from preimage.connectors.imap.session import ImapSession
from preimage.connectors.imap.wire import FolderInfo, FolderStatus, LiveMessage
from preimage.interface.blobs import BlobStore
from preimage.restoration import ConflictMode, RestorePolicy
from preimage.snapshot_schemas.imap import ImapFolder, ImapMessage, ImapSnapshot


@dataclass
class Transfer:
    """A live message to move or copy back to the folder its snapshot entry names."""

    message: ImapMessage
    source: str
    uid: int
    move: bool


@dataclass
class Plan:
    """Everything a restore will do, in the order it does it."""

    create: list[ImapFolder] = field(default_factory=list)
    subscribe: list[tuple[ImapFolder, bool]] = field(default_factory=list)
    special_use_gaps: list[tuple[ImapFolder, list[str]]] = field(default_factory=list)
    transfers: list[Transfer] = field(default_factory=list)
    appends: list[ImapMessage] = field(default_factory=list)
    flag_fixes: list[tuple[ImapMessage, int]] = field(default_factory=list)
    flag_skips: list[ImapMessage] = field(default_factory=list)
    expunge: dict[str, list[LiveMessage]] = field(default_factory=dict)
    delete_folders: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def changed_keys(self) -> list[str]:
        """Keys of every item the plan writes or removes (for ``refuse``)."""
        keys = [f.natural_key() for f in self.create]
        keys += [f.natural_key() for f, _ in self.subscribe]
        keys += [t.message.natural_key() for t in self.transfers]
        keys += [m.natural_key() for m in self.appends]
        keys += [m.natural_key() for m, _ in self.flag_fixes]
        keys += [m.natural_key() for m in self.flag_skips]
        keys += [f"{folder}: {len(extra)} message(s) added" for folder, extra in self.expunge.items()]
        keys += [f"folder {name} added" for name in self.delete_folders]
        return keys


@dataclass
class LiveFolder:
    """A live folder as far as the planner has read it."""

    info: FolderInfo
    status: FolderStatus | None = None
    messages: list[LiveMessage] | None = None
    claimed: set[int] = field(default_factory=set)
    digests: dict[int, str] = field(default_factory=dict)


def _flag_list(m: ImapMessage) -> tuple[str, ...]:
    return tuple(sorted(m.flags)) + tuple(sorted(m.keywords))


def _live_flags(m: LiveMessage) -> tuple[str, ...]:
    return tuple(sorted(m.flags)) + tuple(sorted(m.keywords))


def _same(m: ImapMessage, live: LiveMessage, digests: dict[int, str]) -> bool:
    """Whether ``live`` is the message ``m`` captured: same bytes and same INTERNALDATE.

    INTERNALDATE cannot be changed on an existing message, so a copy with
    another date is not a match (it would leave the date wrong).
    """
    return digests.get(live.uid) == m.digest and live.internaldate == m.internaldate


class Planner:
    """Compares one snapshot with the live account."""

    def __init__(
        self, session: ImapSession, snap: ImapSnapshot, blobs: BlobStore, policy: RestorePolicy
    ) -> None:
        self.s = session
        self.snap = snap
        self.blobs = blobs
        self.policy = policy
        self.overwrite = policy.conflict is not ConflictMode.MERGE
        self.sep = snap.separator
        self.only = [server_name(o.strip("/"), self.sep) for o in policy.only if o.strip("/")]
        self.live: dict[str, LiveFolder] = {}
        self.known_digests = {m.digest for m in snap.messages}
        # Exact keys (an undo): the messages and folders to write, and — the named keys
        # the snapshot lacks — (folder, ident) → how many copies to take away.
        self.keys = policy.keys
        self.removals: dict[tuple[str, str], int] = {}
        if self.keys is not None:
            present = {i.natural_key() for i in snap.items}
            for k in self.keys - present:
                parts = dict(p.split("=", 1) for p in k.split("|") if "=" in p)
                if parts.get("kind") == "message":
                    ident = (parts.get("folder", ""), parts.get("ident", ""))
                    self.removals[ident] = self.removals.get(ident, 0) + 1

    # ------------------------------------------------------------ scope
    def in_scope(self, folder: str) -> bool:
        """Whether ``folder`` is inside the ``--only`` filters."""
        return not self.only or any(in_tree(folder, o, self.sep, True) for o in self.only)

    def owns(self, folder: str) -> bool:
        """Whether the restore may remove messages from ``folder`` or delete it."""
        if not self.in_scope(folder) or self.snap.scope == "messages":
            return False
        if self.snap.scope == "account":
            return True
        assert self.snap.folder is not None
        return in_tree(folder, self.snap.folder, self.sep, self.snap.recursive)

    # ------------------------------------------------------------ reading
    def _folder(self, name: str) -> LiveFolder | None:
        lf = self.live.get(name)
        if lf is None or not lf.info.selectable:
            return None
        if lf.messages is None:
            lf.status = self.s.status(name)
            if lf.status.messages:
                self.s.open_folder(name)
                lf.messages = self.s.scan()
            else:
                lf.messages = []
        return lf

    def _digests(self, lf: LiveFolder, wanted: list[LiveMessage]) -> None:
        """Fill ``lf.digests`` for ``wanted`` (store cache first, then BODY.PEEK[])."""
        assert lf.status is not None
        cache = DigestCache(self.blobs, self.s.account, lf.info.name, lf.status.uidvalidity)
        fetch: list[tuple[int, int]] = []
        for m in wanted:
            if m.uid in lf.digests:
                continue
            known = cache.get(m.uid, m.size)
            if known is not None:
                lf.digests[m.uid] = known
            else:
                fetch.append((m.uid, m.size))
        if fetch:
            sizes = dict(fetch)
            self.s.open_folder(lf.info.name)
            for uid, raw in self.s.bodies(fetch):
                digest = hashlib.sha256(raw).hexdigest()
                lf.digests[uid] = digest
                if digest in self.known_digests:  # its blob is in the store: remember it
                    cache.put(uid, sizes[uid], digest)
            cache.flush()

    # ------------------------------------------------------------ planning
    def plan(self) -> Plan:
        """Read the live account and decide every action."""
        plan = Plan()
        infos = self.s.folders()
        self.live = {f.name: LiveFolder(f) for f in infos}
        subscribed = self.s.subscribed()
        snap_folders = {f.folder: f for f in self.snap.folders if self.in_scope(f.folder)}
        exact = self.keys
        self._plan_folders(plan, snap_folders if exact is None else {
            n: f for n, f in snap_folders.items() if f.natural_key() in exact}, subscribed)
        wanted: dict[str, list[ImapMessage]] = defaultdict(list)
        for m in self.snap.messages:
            if m.folder in snap_folders and (exact is None or m.natural_key() in exact):
                wanted[m.folder].append(m)
        unmatched: list[ImapMessage] = []
        for name in sorted(wanted):
            unmatched += self._match_in_place(plan, name, wanted[name])
        if unmatched:
            self._match_elsewhere(plan, unmatched)
        if exact is not None:
            self._plan_removals(plan)
        elif self.overwrite:
            self._plan_extras(plan, snap_folders)
        return plan

    def _plan_removals(self, plan: Plan) -> None:
        """Exact keys: expunge the named copies the snapshot lacks (messages the call put
        there), newest first — never one a transfer already took away."""
        moved_out = {(t.source, t.uid) for t in plan.transfers if t.move}
        for (folder, ident), count in sorted(self.removals.items()):
            lf = self._folder(folder)
            if lf is None:
                continue
            taken = sum(1 for t in plan.transfers if t.move and t.source == folder
                        and t.message.ident == ident)
            count -= taken
            if count <= 0:
                continue
            candidates = [m for m in lf.messages or [] if m.uid not in lf.claimed
                          and (folder, m.uid) not in moved_out]
            if ident.startswith("sha256:"):
                self._digests(lf, candidates)
                hits = [m for m in candidates if f"sha256:{lf.digests.get(m.uid)}" == ident]
            else:
                hits = [m for m in candidates if m.message_id == ident]
            chosen = sorted(hits, key=lambda m: -m.uid)[:count]
            for m in chosen:
                lf.claimed.add(m.uid)
            if chosen:
                plan.expunge.setdefault(folder, []).extend(chosen)

    def _plan_folders(
        self, plan: Plan, snap_folders: dict[str, ImapFolder], subscribed: set[str]
    ) -> None:
        selectable_below = {
            parent
            for name, f in snap_folders.items()
            if f.selectable
            for parent in snap_folders
            if self.sep and name.startswith(parent + self.sep)
        }
        for name in sorted(snap_folders):
            f = snap_folders[name]
            live = self.live.get(name)
            changed = False
            if live is not None and f.selectable and not live.info.selectable:
                live = None   # only a name above a folder that lives on: create it again
            if live is None:
                if f.selectable or name not in selectable_below:
                    plan.create.append(f)
                    changed = True
                live_subscribed = False
                live_use: list[str] = []
            else:
                live_subscribed = name in subscribed
                live_use = live.info.special_use
            if f.subscribed != live_subscribed and (self.overwrite or f.subscribed):
                plan.subscribe.append((f, f.subscribed))
                changed = True
            if live is not None and sorted(f.special_use) != sorted(live_use):
                plan.special_use_gaps.append((f, f.special_use))
            if not changed:
                plan.unchanged.append(f.natural_key())

    def _match_in_place(self, plan: Plan, name: str, wanted: list[ImapMessage]) -> list[ImapMessage]:
        lf = self._folder(name)
        if lf is None:
            return list(wanted)
        assert lf.status is not None and lf.messages is not None
        snap_folder = next((f for f in self.snap.folders if f.folder == name), None)
        by_uid = {m.uid: m for m in lf.messages}
        same_validity = snap_folder is not None and snap_folder.uidvalidity == lf.status.uidvalidity
        rest: list[ImapMessage] = []
        for m in wanted:
            live = by_uid.get(m.uid) if same_validity else None
            if (
                live is not None
                and live.uid not in lf.claimed
                and live.size == m.size
                and live.message_id == m.message_id
            ):
                lf.claimed.add(live.uid)
                lf.digests[live.uid] = m.digest
                self._compare_flags(plan, m, live)
            else:
                rest.append(m)
        if not rest:
            return []
        candidates = self._candidates(lf, rest)
        self._digests(lf, [c for group in candidates.values() for c in group])
        unmatched = []
        for m in rest:
            hit = next(
                (
                    c
                    for c in candidates.get((m.message_id, m.size), [])
                    if c.uid not in lf.claimed and _same(m, c, lf.digests)
                ),
                None,
            )
            if hit is None:
                unmatched.append(m)
            else:
                lf.claimed.add(hit.uid)
                self._compare_flags(plan, m, hit)
        return unmatched

    def _candidates(
        self, lf: LiveFolder, wanted: list[ImapMessage]
    ) -> dict[tuple[str | None, int], list[LiveMessage]]:
        keys = {(m.message_id, m.size) for m in wanted}
        out: dict[tuple[str | None, int], list[LiveMessage]] = defaultdict(list)
        for live in lf.messages or []:
            k = (live.message_id, live.size)
            if k in keys and live.uid not in lf.claimed:
                out[k].append(live)
        return out

    def _compare_flags(self, plan: Plan, m: ImapMessage, live: LiveMessage) -> None:
        if _flag_list(m) == _live_flags(live):
            plan.unchanged.append(m.natural_key())
        elif self.overwrite:
            plan.flag_fixes.append((m, live.uid))
        else:
            plan.flag_skips.append(m)

    def _match_elsewhere(self, plan: Plan, unmatched: list[ImapMessage]) -> None:
        """Find copies of ``unmatched`` in other folders; append the ones found nowhere."""
        pending = list(unmatched)
        # Spare copies first (they can be taken away), then copies that predate the capture.
        for name in sorted(self.live, key=lambda n: (not self.owns(n), n)):
            if not pending:
                break
            lf = self._folder(name)
            if lf is None:
                continue
            others = [m for m in pending if m.folder != name]
            candidates = self._candidates(lf, others)
            if not candidates:
                continue
            self._digests(lf, [c for group in candidates.values() for c in group])
            still = []
            for m in pending:
                if m.folder == name:
                    still.append(m)
                    continue
                hits = [
                    c
                    for c in candidates.get((m.message_id, m.size), [])
                    if c.uid not in lf.claimed and _same(m, c, lf.digests)
                ]
                spare = [c for c in hits if self._spare(name, c)]
                if not hits:
                    still.append(m)
                    continue
                hit = (spare or hits)[0]
                lf.claimed.add(hit.uid)
                move = self.overwrite and hit in spare
                plan.transfers.append(Transfer(m, name, hit.uid, move))
            pending = still
        plan.appends.extend(pending)

    def _spare(self, folder: str, m: LiveMessage) -> bool:
        """Whether live message ``m`` may be taken out of ``folder``."""
        if self.keys is not None:  # an undo moves only a copy it is to take away anyway
            return self.removals.get((folder, m.message_id or ""), 0) > 0
        if self.owns(folder):
            return True  # unclaimed in an owned folder: an extra the restore removes anyway
        if self.policy.elsewhere:
            return False  # another account or prefix: what lies outside it is not ours to take
        mark = self.snap.watermarks.get(folder)
        lf = self.live[folder]
        if mark is None or lf.status is None or lf.status.uidvalidity != mark[0]:
            return True  # the folder was created (or re-created) after the capture
        return m.uid >= mark[1]

    def _plan_extras(self, plan: Plan, snap_folders: dict[str, ImapFolder]) -> None:
        moved_out = {(t.source, t.uid) for t in plan.transfers if t.move}
        for name in sorted(self.live):
            if not self.owns(name):
                continue
            if name not in snap_folders and name.upper() != "INBOX":
                plan.delete_folders.append(name)  # its messages go with it
                continue
            lf = self._folder(name)
            if lf is None:
                continue
            extra = [
                m
                for m in lf.messages or []
                if m.uid not in lf.claimed and (name, m.uid) not in moved_out
            ]
            if extra:
                plan.expunge[name] = extra
        # Children before parents.
        plan.delete_folders.sort(key=lambda n: (-n.count(self.sep or "/"), n))
