"""Reading an account, a folder tree or a set of messages into an :class:`ImapSnapshot`.

The capture never changes the mailbox: folders are opened with EXAMINE,
bodies fetched with ``BODY.PEEK[]`` (no ``\\Seen``), nothing is stored,
created, subscribed or expunged.  Per folder it reads STATUS, then one
header-only FETCH of every message (UID, FLAGS, INTERNALDATE, RFC822.SIZE,
Message-ID, MODSEQ), then the bodies it does not already have in the store
(see :mod:`.digests`), in batches.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from imapclient.imap_utf7 import decode as utf7_decode
from imapclient.response_parser import parse_response

from preimage.connectors.imap.digests import DigestCache
from preimage.connectors.imap.selection import Selection, stored_target
from preimage.connectors.imap.session import ImapSession
from preimage.connectors.imap.wire import FolderInfo, FolderStatus, LiveMessage
from preimage.interface.blobs import BlobStore
from preimage.interface.target import Target
from preimage.snapshot_schemas.imap import ImapFolder, ImapMessage, ImapSnapshot


def server_name(folder: str, separator: str | None) -> str:
    """A ``/``-separated folder name from a URI, written with the server's separator."""
    if separator and separator != "/":
        return folder.replace("/", separator)
    return folder


def account_separator(infos: Iterable[FolderInfo]) -> str | None:
    """The hierarchy separator the account's folders use (INBOX's when they differ)."""
    seps = {f.name.upper(): f.separator for f in infos if f.separator}
    if "INBOX" in seps:
        return seps["INBOX"]
    return next(iter(seps.values()), None)


def in_tree(name: str, root: str, separator: str | None, recursive: bool) -> bool:
    """Whether folder ``name`` is ``root`` or, when ``recursive``, below it."""
    if name == root or (root.upper() == "INBOX" and name.upper() == "INBOX"):
        return True
    return bool(recursive and separator and name.startswith(root + separator))


def watermarks(session: ImapSession, infos: list[FolderInfo]) -> dict[str, FolderStatus]:
    """STATUS of every selectable folder: one LIST-STATUS round trip where offered."""
    selectable = [f.name for f in infos if f.selectable]
    if session.has("LIST-STATUS"):
        got = _list_status(session)
        if got is not None and set(selectable) <= set(got):
            return {name: got[name] for name in selectable}
    return {name: session.status(name) for name in selectable}


def _list_status(session: ImapSession) -> dict[str, FolderStatus] | None:
    modseq = b" HIGHESTMODSEQ" if session.has("CONDSTORE") else b""
    items = b"(MESSAGES UIDVALIDITY UIDNEXT" + modseq + b")"
    client = session._client
    with session._guard("listing folder status"):
        client._imap.untagged_responses.pop("STATUS", None)
        typ, _data = client._raw_command(
            b"LIST", [b'""', b'"*"', b"RETURN", b"(STATUS " + items + b")"], uid=False
        )
        raw = client._imap.untagged_responses.pop("STATUS", [])
        client._imap.untagged_responses.pop("LIST", None)
    if typ != "OK":
        return None
    out: dict[str, FolderStatus] = {}
    try:
        for entry in raw:
            parts = parse_response([entry] if isinstance(entry, bytes) else list(entry))
            name_raw, values = parts[0], parts[1]
            name = utf7_decode(name_raw) if isinstance(name_raw, bytes) else str(name_raw)
            kv = {
                (k.decode() if isinstance(k, bytes) else str(k)).upper(): int(v)
                for k, v in zip(values[::2], values[1::2], strict=False)
            }
            out[name] = FolderStatus(
                messages=kv["MESSAGES"],
                uidvalidity=kv["UIDVALIDITY"],
                uidnext=kv["UIDNEXT"],
                highestmodseq=kv.get("HIGHESTMODSEQ"),
            )
    except (KeyError, ValueError, IndexError, TypeError):
        return None  # an answer we cannot read: fall back to one STATUS per folder
    return out


class MailboxCapture:
    """Captures what one target selects."""

    def __init__(self, session: ImapSession, target: Target, blobs: BlobStore) -> None:
        self.session = session
        self.target = target
        self.selection = Selection.from_target(target)
        self.blobs = blobs
        self.notes: list[str] = []

    def run(self) -> ImapSnapshot:
        """Read the selected folders and messages; bodies go to the blob store."""
        s = self.session
        infos = s.folders()
        sep = account_separator(infos)
        subscribed = s.subscribed()
        statuses = watermarks(s, infos)
        sel = self.selection
        root = server_name(sel.folder, sep) if sel.folder is not None else None
        chosen = [
            f for f in infos if root is None or in_tree(f.name, root, f.separator or sep, sel.recursive)
        ]
        if root is not None and not chosen:
            self.notes.append(f"folder {sel.folder!r} did not exist at capture time")
        items: list[ImapFolder | ImapMessage] = []
        idents: list[str] = []
        for info in sorted(chosen, key=lambda f: f.name):
            messages: list[ImapMessage] = []
            status = statuses.get(info.name)
            if info.selectable and status is not None:
                messages = self._messages(info.name, status)
                idents.extend(m.ident for m in messages)
            items.append(
                ImapFolder(
                    folder=info.name,
                    selectable=info.selectable,
                    messages=len(messages),
                    separator=info.separator,
                    special_use=info.special_use,
                    subscribed=info.name in subscribed,
                    uidvalidity=status.uidvalidity if status else None,
                    uidnext=status.uidnext if status else None,
                    highestmodseq=status.highestmodseq if status else None,
                )
            )
            items.extend(messages)
        if sel.scope == "messages" and not idents:
            self.notes.append("the selection matched no message")
        return ImapSnapshot(
            connector=self.target.scheme,
            target=stored_target(
                self.target,
                sel.folder,
                sorted(set(idents)) if sel.scope == "messages" else None,
            ),
            account=s.account,
            scope=sel.scope,  # type: ignore[arg-type]
            folder=root,
            recursive=sel.recursive,
            selection=sorted(set(idents)) if sel.scope == "messages" else [],
            separator=sep,
            capabilities=s.capabilities,
            watermarks={name: (st.uidvalidity, st.uidnext) for name, st in statuses.items()},
            items=items,
            notes=self.notes + s.notes,
        )

    # ------------------------------------------------------------ one folder
    def _messages(self, folder: str, status: FolderStatus) -> list[ImapMessage]:
        s = self.session
        sel = self.selection
        s.open_folder(folder)
        if status.messages == 0:
            return []
        if sel.uids is not None:
            live = s.scan(sel.uids)
        elif sel.search is not None:
            live = s.scan(s.search(sel.search))
        else:
            live = s.scan()
        cache = DigestCache(self.blobs, s.account, folder, status.uidvalidity)
        digests = self._digests(live, cache)
        if sel.by_id:
            wanted = set(sel.idents)
            live = [m for m in live if _ident(m, digests[m.uid]) in wanted]
        return numbered(folder, live, digests)

    def _digests(self, live: list[LiveMessage], cache: DigestCache) -> dict[int, str]:
        """Digest of every message in ``live``, fetching only the bodies the store lacks."""
        out: dict[int, str] = {}
        missing: list[tuple[int, int]] = []
        wanted = set(self.selection.idents) if self.selection.by_id else None
        for m in live:
            if wanted is not None and m.message_id is not None and m.message_id not in wanted:
                continue  # not selected: its bytes are not needed
            digest = cache.get(m.uid, m.size)
            if digest is None:
                missing.append((m.uid, m.size))
            else:
                out[m.uid] = digest
        sizes = dict(missing)
        for uid, raw in self.session.bodies(missing):
            digest = self.blobs.put_bytes(raw)
            cache.put(uid, sizes[uid], digest)
            out[uid] = digest
        cache.flush()
        for m in live:
            out.setdefault(m.uid, "")
        return out


def _ident(m: LiveMessage, digest: str) -> str:
    return m.message_id if m.message_id is not None else f"sha256:{digest}"


def numbered(folder: str, live: list[LiveMessage], digests: dict[int, str]) -> list[ImapMessage]:
    """Snapshot items for ``live``, numbering messages that share folder and identity."""
    groups: dict[str, list[LiveMessage]] = defaultdict(list)
    for m in live:
        groups[_ident(m, digests[m.uid])].append(m)
    out: list[ImapMessage] = []
    for ident, group in groups.items():
        group.sort(key=lambda m: (digests[m.uid], m.internaldate, m.uid))
        for copy_no, m in enumerate(group):
            out.append(
                ImapMessage(
                    folder=folder,
                    ident=ident,
                    copy_no=copy_no,
                    digest=digests[m.uid],
                    size=m.size,
                    flags=list(m.flags),
                    keywords=list(m.keywords),
                    internaldate=m.internaldate,
                    uid=m.uid,
                    modseq=m.modseq,
                )
            )
    out.sort(key=lambda m: m.uid)
    return out
