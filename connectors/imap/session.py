"""One authenticated IMAP connection and the commands the connector needs.

Every command goes through :meth:`ImapSession._guard`, which turns client and
socket errors into preimage's errors:

* a refused, timed-out or dropped connection → :class:`TransientConnectorError`
  (run the same command again; restores are idempotent);
* a failed login, an untrusted certificate, a command the server refuses →
  :class:`TerminalConnectorError`.

Reads never change the mailbox: folders are opened with EXAMINE (read-only)
and bodies fetched with ``BODY.PEEK[]``, so ``\\Seen`` is never set.  Where
the server lacks an extension the session degrades and records a note:
no MULTIAPPEND → one APPEND per message; no MOVE → COPY, then delete the
source; no UIDPLUS → no new UIDs in responses (the caller looks them up) and
an expunge that protects other messages marked ``\\Deleted`` (see
:meth:`ImapSession.expunge`).
"""

from __future__ import annotations

import contextlib
import functools
import imaplib
import os
import ssl
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

import imapclient
from imapclient import exceptions as imap_errors
from imapclient.datetime_util import datetime_to_INTERNALDATE
from imapclient.response_parser import parse_fetch_response

from preimage.connectors.imap.selection import flag
from preimage.connectors.imap.wire import (
    HEADER_ITEM,
    FolderInfo,
    FolderStatus,
    LiveMessage,
    NewMessage,
    batches,
    compact_uids,
    parse_message_id,
    parse_scan,
    parse_uid_set,
    split_flags,
    text,
    utc_iso,
)
from preimage.interface.errors import (
    InvalidTargetError,
    TerminalConnectorError,
    TransientConnectorError,
)
from preimage.interface.target import Target

P = ParamSpec("P")
R = TypeVar("R")
DEFAULT_TIMEOUT = 60.0


def _guarded(what: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Run a session method inside :meth:`ImapSession._guard` with ``what`` as its description."""

    def deco(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            session = args[0]
            assert isinstance(session, ImapSession)
            with session._guard(what):
                return fn(*args, **kwargs)

        return wrapper

    return deco


class ImapSession:
    """A logged-in connection to the account a target names."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.where = f"{target.host}:{target.port or (993 if target.scheme == 'imaps' else 143)}"
        self.account = f"{target.username}@{self.where}"
        self.notes: list[str] = []
        self._client: Any = None
        self._selected: tuple[str, bool] | None = None
        self._caps: set[str] = set()

    # ------------------------------------------------------------ errors
    @contextlib.contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        try:
            yield
        except (TerminalConnectorError, TransientConnectorError, InvalidTargetError):
            raise
        except imap_errors.LoginError as exc:
            raise TerminalConnectorError(
                f"IMAP login as {self.target.username!r} at {self.where} failed: "
                f"{text(exc)} — check the password in PREIMAGE_IMAP_PASSWORD, IMAP_PASSWORD "
                "or ~/.netrc",
                target=self.target.redacted,
            ) from exc
        except ssl.SSLCertVerificationError as exc:
            raise TerminalConnectorError(
                f"the TLS certificate of {self.where} is not trusted ({exc.verify_message}) — "
                "add ?cafile=/path/to/ca.pem to the target, or ?insecure=1 for a test server",
                target=self.target.redacted,
            ) from exc
        except (imaplib.IMAP4.abort, OSError, EOFError) as exc:
            verb = "cannot reach" if self._client is None else "lost the connection to"
            raise TransientConnectorError(
                f"{verb} IMAP server {self.where} while {what}: {exc or type(exc).__name__} — "
                "is the server running? Run the same command again (a restore picks up where "
                "it stopped without duplicating messages)",
                target=self.target.redacted,
            ) from exc
        except imaplib.IMAP4.error as exc:  # IMAPClientError, CapabilityError, …: a refusal
            raise TerminalConnectorError(
                f"IMAP server {self.where} refused {what}: {text(exc)}",
                target=self.target.redacted,
            ) from exc

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> ImapSession:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Connect and log in; raise on a missing password, refused login or unreachable host."""
        password = self.target.resolve_password()
        if password is None and self.target.scheme == "imaps":
            # One variable serves both schemes (resolve_password looks for PREIMAGE_IMAPS_…).
            password = os.environ.get("PREIMAGE_IMAP_PASSWORD") or None
        if password is None:
            raise TerminalConnectorError(
                f"no password for {self.account} — set PREIMAGE_IMAP_PASSWORD (or IMAP_PASSWORD) "
                f"or add 'machine {self.target.host} login {self.target.username} password …' "
                "to ~/.netrc; passwords are never stored with a backup",
                target=self.target.redacted,
            )
        try:
            timeout = float(self.target.param("timeout") or DEFAULT_TIMEOUT)
        except ValueError as exc:
            raise InvalidTargetError(self.target.redacted, "?timeout= takes seconds") from exc
        tls = self.target.scheme == "imaps" or flag(self.target, "starttls")
        context = self._ssl_context() if tls else None
        with self._guard("connecting"):
            self._client = imapclient.IMAPClient(
                self.target.host,
                port=self.target.port or (993 if self.target.scheme == "imaps" else 143),
                ssl=self.target.scheme == "imaps",
                ssl_context=context,
                timeout=timeout,
            )
        try:
            with self._guard("logging in"):
                self._client.normalise_times = False
                if flag(self.target, "starttls"):
                    self._client.starttls(context)
                self._client.login(self.target.username, password)
                self._caps = {text(c).upper() for c in self._client.capabilities()}
        except BaseException:
            self.close()
            raise

    def _ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.target.param("cafile"))
        if flag(self.target, "insecure"):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    def close(self) -> None:
        """Log out (quietly: the work is done or already failed)."""
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.logout()
            with contextlib.suppress(Exception):
                self._client.shutdown()
            self._client = None
            self._selected = None

    def has(self, capability: str) -> bool:
        """Whether the server advertised ``capability``."""
        return capability.upper() in self._caps

    @property
    def capabilities(self) -> list[str]:
        """Everything the server advertised after login, sorted."""
        return sorted(self._caps)

    def note_once(self, text: str) -> None:
        """Record a degradation note (once)."""
        if text not in self.notes:
            self.notes.append(text)

    # ------------------------------------------------------------ folders
    @_guarded("listing folders")
    def folders(self) -> list[FolderInfo]:
        """Every folder of the account (LIST "" "*").

        A parent deleted while a folder below it lives on is listed by Dovecot (Maildir++)
        with ``\\HasChildren`` and without ``\\Noselect``, yet cannot be opened (STATUS:
        "Mailbox doesn't exist"): such a name is marked ``\\NonExistent`` here, as RFC 5258
        has servers mark it, so nothing tries to read its messages and a restore creates it.
        """
        out = []
        for attrs, sep, name in self._client.list_folders():
            info = FolderInfo(
                name=text(name),
                separator=text(sep) if sep else None,
                attributes=frozenset(text(a) for a in attrs),
            )
            if (info.selectable and "\\haschildren" in {a.lower() for a in info.attributes}
                    and self._placeholder(info.name)):
                info = FolderInfo(info.name, info.separator, info.attributes | {"\\NonExistent"})
            out.append(info)
        return out

    def _placeholder(self, folder: str) -> bool:
        """Whether the server refuses STATUS of a listed ``folder`` because it does not exist."""
        try:
            self._client.folder_status(folder, [b"MESSAGES"])
        except imaplib.IMAP4.error as exc:
            words = text(exc).lower()
            if any(w in words for w in ("nonexistent", "doesn't exist", "does not exist")):
                return True
            raise
        return False

    @_guarded("listing subscriptions")
    def subscribed(self) -> set[str]:
        """Names of the subscribed folders (LSUB)."""
        return {text(name) for _attrs, _sep, name in self._client.list_sub_folders()}

    @_guarded("reading folder status")
    def status(self, folder: str) -> FolderStatus:
        """MESSAGES, UIDVALIDITY, UIDNEXT (and HIGHESTMODSEQ with CONDSTORE) of ``folder``."""
        what = [b"MESSAGES", b"UIDVALIDITY", b"UIDNEXT"]
        if self.has("CONDSTORE"):
            what.append(b"HIGHESTMODSEQ")
        got = self._client.folder_status(folder, what)
        modseq = got.get(b"HIGHESTMODSEQ")
        return FolderStatus(
            messages=int(got[b"MESSAGES"]),
            uidvalidity=int(got[b"UIDVALIDITY"]),
            uidnext=int(got[b"UIDNEXT"]),
            highestmodseq=int(modseq) if modseq is not None else None,
        )

    @_guarded("opening a folder")
    def open_folder(self, folder: str, *, write: bool = False) -> None:
        """EXAMINE ``folder`` (SELECT when ``write``); reuse the open one when it fits."""
        if self._selected == (folder, write):
            return
        self._client.select_folder(folder, readonly=not write)
        self._selected = (folder, write)

    @_guarded("creating a folder")
    def create(self, folder: str, special_use: Sequence[str] = ()) -> bool:
        """CREATE ``folder``; with CREATE-SPECIAL-USE also its special use.

        Returns whether the special use was sent with it.
        """
        if special_use and self.has("CREATE-SPECIAL-USE"):
            use = b"(USE (" + " ".join(special_use).encode() + b"))"
            name = self._client._normalise_folder(folder)
            typ, data = self._client._raw_command(
                b"CREATE", [name if isinstance(name, bytes) else name.encode(), use], uid=False
            )
            if typ != "OK":
                raise imaplib.IMAP4.error(f"CREATE {folder}: {text(data[0])}")
            return True
        self._client.create_folder(folder)
        return False

    @_guarded("deleting a folder")
    def delete(self, folder: str) -> None:
        """DELETE ``folder`` (closing it first when it is open)."""
        if self._selected and self._selected[0] == folder:
            self._client.unselect_folder() if self.has("UNSELECT") else self._client.close_folder()
            self._selected = None
        self._client.delete_folder(folder)

    @_guarded("changing a subscription")
    def subscribe(self, folder: str, on: bool) -> None:
        """SUBSCRIBE or UNSUBSCRIBE ``folder``."""
        if on:
            self._client.subscribe_folder(folder)
        else:
            self._client.unsubscribe_folder(folder)

    # ------------------------------------------------------------ messages
    @_guarded("reading messages")
    def scan(self, uids: str | Sequence[int] = "1:*") -> list[LiveMessage]:
        """UID, flags, INTERNALDATE, size and Message-ID of messages in the open folder."""
        items = [b"UID", b"FLAGS", b"INTERNALDATE", b"RFC822.SIZE", HEADER_ITEM]
        if self.has("CONDSTORE"):
            items.append(b"MODSEQ")
        uidset = uids if isinstance(uids, str) else compact_uids(uids)
        if not uidset:
            return []
        raw = self._fetch_raw(uidset, items)
        fast = parse_scan(raw)
        if fast is not None:
            out = fast
        else:  # an answer shape the fast reader does not know: use the general parser
            out = []
            for uid, data in parse_fetch_response(raw, False, True).items():
                if b"RFC822.SIZE" not in data:
                    continue  # an unsolicited flag update, not an answer
                header = next((v for k, v in data.items() if k.startswith(b"BODY[HEADER")), None)
                system, keywords = split_flags(data[b"FLAGS"])
                modseq = data.get(b"MODSEQ")
                out.append(
                    LiveMessage(
                        uid=int(uid),
                        flags=system,
                        keywords=keywords,
                        internaldate=utc_iso(data[b"INTERNALDATE"]),
                        size=int(data[b"RFC822.SIZE"]),
                        message_id=parse_message_id(header),
                        modseq=int(modseq[0]) if modseq else None,
                    )
                )
        out.sort(key=lambda m: m.uid)
        return out

    @_guarded("searching")
    def search(self, criteria: str) -> list[int]:
        """UIDs of the open folder that ``criteria`` (raw IMAP SEARCH syntax) matches."""
        return sorted(int(u) for u in self._client.search(criteria, charset="UTF-8"))

    def bodies(self, messages: Sequence[tuple[int, int]]) -> Iterator[tuple[int, bytes]]:
        """``(uid, raw bytes)`` for ``(uid, size)`` pairs of the open folder, with BODY.PEEK[].

        Batches are bounded by :data:`BATCH_MESSAGES` and :data:`BATCH_BYTES`.
        """
        for batch in batches(messages, lambda m: m[1]):
            uids = [uid for uid, _ in batch]
            with self._guard("fetching message bodies"):
                got = self._fetch(compact_uids(uids), [b"BODY.PEEK[]"])
            for uid in uids:
                data = got.get(uid)
                if data is None or b"BODY[]" not in data:
                    raise TerminalConnectorError(
                        f"message UID {uid} vanished from {self._selected} during the read — "
                        "something else is changing the mailbox; capture again",
                        target=self.target.redacted,
                    )
                yield uid, bytes(data[b"BODY[]"])

    @_guarded("appending messages")
    def append(self, folder: str, messages: Sequence[NewMessage]) -> list[int | None]:
        """APPEND ``messages`` to ``folder`` with flags and INTERNALDATE; their new UIDs.

        One MULTIAPPEND command (atomic: all or none) when the server offers
        it, else one APPEND per message.  The bytes are sent as they are (no
        line-ending rewriting).  New UIDs come from APPENDUID; without UIDPLUS
        they are ``None``.
        """
        if len(messages) > 1 and not self.has("MULTIAPPEND"):
            self.note_once("server lacks MULTIAPPEND: messages were appended one at a time")
            return [uid for m in messages for uid in self.append(folder, [m])]
        args: list[Any] = [self._client._normalise_folder(folder)]
        for m in messages:
            when = datetime.fromisoformat(m.internaldate)
            args.append("(" + " ".join(m.flags) + ")")
            args.append('"' + datetime_to_INTERNALDATE(when) + '"')
            args.append(imapclient.imapclient._literal(m.raw))
        self._take_code("APPENDUID")
        typ, data = self._client._raw_command(
            b"APPEND", [a if isinstance(a, bytes) else a.encode() for a in args], uid=False
        )
        if typ != "OK":
            raise imaplib.IMAP4.error(f"APPEND to {folder}: {text(data[0])}")
        return self._uids_from_code("APPENDUID", len(messages), 1)

    @_guarded("copying messages")
    def copy(self, uids: Sequence[int], dest: str, *, move: bool) -> dict[int, int]:
        """COPY (or MOVE) ``uids`` of the open folder to ``dest``; old UID → new UID.

        A move without the MOVE extension is COPY, then ``\\Deleted`` and an
        expunge of exactly those messages (see :meth:`expunge`).  The map is
        empty without UIDPLUS.
        """
        if not uids:
            return {}
        self._take_code("COPYUID")
        if move and self.has("MOVE"):
            self._client.move(list(uids), dest)
        else:
            self._client.copy(list(uids), dest)
        mapping: dict[int, int] = {}
        for code in self._take_code("COPYUID"):
            parts = text(code).split()
            if len(parts) >= 3:
                mapping.update(
                    zip(parse_uid_set(parts[1]), parse_uid_set(parts[2]), strict=False)
                )
        if not self.has("UIDPLUS"):
            self.note_once("server lacks UIDPLUS: new UIDs were looked up by Message-ID and size")
        if move and not self.has("MOVE"):
            self.note_once("server lacks MOVE: messages were moved by COPY, then expunge")
            self.expunge(uids)
        return mapping

    @_guarded("setting flags")
    def set_flags(self, uids: Sequence[int], flags: Sequence[str]) -> None:
        """Replace the flags and keywords of ``uids`` in the open folder (STORE FLAGS.SILENT)."""
        if uids:
            self._client.set_flags(list(uids), list(flags), silent=True)

    @_guarded("expunging messages")
    def expunge(self, uids: Sequence[int]) -> None:
        """Mark ``uids`` ``\\Deleted`` and expunge exactly them from the open folder.

        With UIDPLUS this is UID EXPUNGE.  Without it a plain EXPUNGE would
        also take every other message marked ``\\Deleted``, so those lose the
        flag for the moment of the EXPUNGE and get it back right after.
        """
        if not uids:
            return
        self._client.add_flags(list(uids), [b"\\Deleted"], silent=True)
        if self.has("UIDPLUS"):
            self._client.uid_expunge(list(uids))
            return
        wanted = set(uids)
        others = [u for u in self._client.search([b"DELETED"]) if int(u) not in wanted]
        if others:
            self._client.remove_flags(others, [b"\\Deleted"], silent=True)
        try:
            self._client.expunge()
        finally:
            if others:
                self._client.add_flags(others, [b"\\Deleted"], silent=True)
        self.note_once(
            "server lacks UIDPLUS: messages were expunged with a plain EXPUNGE after taking "
            "\\Deleted off other messages for that moment"
        )

    def _fetch_raw(self, uidset: str, items: Sequence[bytes]) -> list[Any]:
        """UID FETCH ``uidset`` (any UID set, ``*`` included): the untagged FETCH data."""
        imap = self._client._imap
        tag = imap._command("UID", "FETCH", uidset, "(" + " ".join(i.decode() for i in items) + ")")
        typ, data = imap._command_complete("FETCH", tag)
        if typ != "OK":
            raise imaplib.IMAP4.error(f"FETCH failed: {text(data[0])}")
        typ, data = imap._untagged_response(typ, data, "FETCH")
        return [d for d in data if d is not None]

    def _fetch(self, uidset: str, items: Sequence[bytes]) -> dict[int, dict[bytes, Any]]:
        """UID FETCH ``uidset`` → UID → data items (the general parser)."""
        return dict(parse_fetch_response(self._fetch_raw(uidset, items), False, True))

    # ------------------------------------------------------------ response codes
    def _take_code(self, name: str) -> list[Any]:
        """Pop the response code ``name`` (APPENDUID, COPYUID) imaplib collected."""
        return list(self._client._imap.untagged_responses.pop(name, []) or [])

    def _uids_from_code(self, name: str, count: int, uid_field: int) -> list[int | None]:
        codes = self._take_code(name)
        if not codes:
            if not self.has("UIDPLUS"):
                self.note_once(
                    "server lacks UIDPLUS: new UIDs were looked up by Message-ID and size"
                )
            return [None] * count
        parts = text(codes[-1]).split()
        uids = parse_uid_set(parts[uid_field]) if len(parts) > uid_field else []
        if len(uids) != count:
            return [None] * count
        return list(uids)


__all__ = [
    "FolderInfo",
    "FolderStatus",
    "ImapSession",
    "LiveMessage",
    "NewMessage",
]
