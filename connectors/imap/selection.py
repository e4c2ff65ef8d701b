"""What an ``imap://`` target URI selects: read by :meth:`Selection.from_target`,
built by :func:`imap_uri`.

::

    imap://alice@host:143/                      the whole account
    imap://alice@host:143/INBOX                 one folder
    imap://alice@host:143/Archive?recursive=1   a folder and every folder below it
    imap://alice@host:143/INBOX?uids=4,7,10:12  messages by UID
    imap://alice@host:143/INBOX?search=BEFORE%2015-Feb-2026%20UNFLAGGED
                                                messages an IMAP SEARCH finds
    imaps://alice@host:993/INBOX?cafile=/etc/ssl/my-ca.pem

Folder names are written with ``/`` between levels whatever the server's
separator is, and may use any Unicode character (the connector encodes them
in modified UTF-7).  UIDs and searches are resolved at capture time and the
snapshot keeps the selection as ``id=`` parameters (Message-IDs, or
``sha256:`` digests for messages without one), because a restore gives the
messages new UIDs and a search may match other messages afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote, urlencode, urlsplit

from preimage.interface.errors import InvalidTargetError
from preimage.interface.target import Target
from preimage.interface.uri import query

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_UID_SET = re.compile(r"^(\d+(:(\d+|\*))?)(,(\d+(:(\d+|\*))?))*$")
# Connection options travel with every form of the target.
CONNECTION_PARAMS = ("starttls", "cafile", "insecure", "timeout")
SELECTION_PARAMS = ("recursive", "uids", "search", "id")


def flag(target: Target, name: str) -> bool:
    """A boolean query parameter; raise :class:`InvalidTargetError` on other values."""
    value = target.param(name)
    if value is None:
        return False
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise InvalidTargetError(target.redacted, f"?{name}= takes 1 or 0, not {value!r}")


@dataclass(frozen=True)
class Selection:
    """The part of an account a target names."""

    folder: str | None        # None: the whole account; "/"-separated otherwise
    recursive: bool = False
    uids: str | None = None
    search: str | None = None
    idents: tuple[str, ...] = ()
    by_id: bool = False       # ``?id=`` given, even with no value: a (maybe empty) message set

    @property
    def scope(self) -> str:
        """``account``, ``folder`` or ``messages``."""
        if self.folder is None:
            return "account"
        if self.uids is not None or self.search is not None or self.by_id:
            return "messages"
        return "folder"

    @classmethod
    def from_target(cls, target: Target) -> Selection:
        """Read the selection from ``target``; raise :class:`InvalidTargetError` when unclear."""
        if target.scheme not in ("imap", "imaps"):
            raise InvalidTargetError(target.redacted, "not an imap:// or imaps:// URI")
        if not target.username:
            raise InvalidTargetError(
                target.redacted, "no user name — write imap://USER@host:port/FOLDER"
            )
        if not target.host:
            raise InvalidTargetError(target.redacted, "no host — write imap://USER@host:port/")
        unknown = sorted(set(target.query) - set(CONNECTION_PARAMS) - set(SELECTION_PARAMS))
        if unknown:
            known = ", ".join(CONNECTION_PARAMS + SELECTION_PARAMS)
            raise InvalidTargetError(
                target.redacted, f"unknown parameter(s) {', '.join(unknown)} (known: {known})"
            )
        folder = target.path.strip("/") or None
        recursive = flag(target, "recursive")
        uids = target.param("uids")
        search = target.param("search")
        by_id = "id" in target.query
        idents = tuple(v for v in target.query.get("id", []) if v)
        given = [n for n, v in (("uids", uids), ("search", search), ("id", by_id)) if v]
        if len(given) > 1:
            raise InvalidTargetError(
                target.redacted, f"give one of ?uids=, ?search= or ?id=, not {' and '.join(given)}"
            )
        if given and folder is None:
            raise InvalidTargetError(
                target.redacted, f"?{given[0]}= selects messages of one folder — name the folder"
            )
        if given and recursive:
            raise InvalidTargetError(target.redacted, "?recursive= applies to folders, not messages")
        if uids is not None:
            uids = uids.replace(" ", "")
            if not _UID_SET.match(uids):
                raise InvalidTargetError(
                    target.redacted, f"?uids={uids!r} is not a UID set like 4,7,10:12"
                )
        if search is not None and not search.strip():
            raise InvalidTargetError(target.redacted, "?search= is empty")
        if recursive and folder is None:
            recursive = False  # the account is every folder already
        return cls(
            folder=folder, recursive=recursive, uids=uids, search=search, idents=idents,
            by_id=by_id,
        )


def stored_target(target: Target, folder: str | None, idents: list[str] | None = None) -> str:
    """The URI a snapshot records: connection options kept, the selection made stable.

    A message selection is written as ``id=`` parameters so that scoring and
    undo captures find the same messages after their UIDs changed.
    """
    netloc = target.redacted.split("://", 1)[1].split("/", 1)[0]
    path = "/" + quote(folder, safe="/") if folder else "/"
    params: list[tuple[str, str]] = [
        (name, value) for name in CONNECTION_PARAMS for value in target.query.get(name, [])
    ]
    if idents is not None:
        params += [("id", ident) for ident in idents] or [("id", "")]
    elif flag(target, "recursive") and folder:
        params.append(("recursive", "1"))
    query = "?" + urlencode(params, quote_via=quote) if params else ""
    return f"{target.scheme}://{netloc}{path}{query}"


def imap_uri(
    base: str, folder: str | None = None, *, uids: Iterable[int | str] = (),
    recursive: bool = False, message_ids: Iterable[str] = (),
) -> str:
    """``imap://user@host:port/FOLDER[?uids=…|?recursive=1|?id=…]`` on the account of
    ``base`` (an account or folder URI)."""
    parts = urlsplit(base)
    path = "/" + quote(folder, safe="/&+,") if folder else "/"
    params = [("uids", ",".join(str(u) for u in uids)), ("recursive", "1" if recursive else ""),
              *[("id", m) for m in message_ids]]
    return f"{parts.scheme}://{parts.netloc}{path}{query(params)}"
