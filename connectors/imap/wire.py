"""What the IMAP wire says: the records the connector reads, and fast parsers for them.

:func:`parse_scan` reads the answer to the connector's header-only FETCH
(UID, FLAGS, INTERNALDATE, RFC822.SIZE, Message-ID, MODSEQ) with regular
expressions — an order of magnitude faster than a general IMAP response
parser on folders of tens of thousands of messages.  It returns ``None`` for
any answer whose shape it does not know, and the caller falls back to the
general parser.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

# RFC 6154 special-use attributes (case as the RFC writes them).
SPECIAL_USE = ("\\All", "\\Archive", "\\Drafts", "\\Flagged", "\\Junk", "\\Sent", "\\Trash")
_SPECIAL = {s.lower(): s for s in SPECIAL_USE}
SYSTEM_FLAGS = ("\\Answered", "\\Deleted", "\\Draft", "\\Flagged", "\\Seen")
_SYSTEM = {s.lower(): s for s in SYSTEM_FLAGS}
HEADER_ITEM = b"BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"
# Bodies are fetched and appended in batches bounded by count and bytes.
BATCH_MESSAGES = 100
BATCH_BYTES = 8 << 20


@dataclass(frozen=True)
class FolderInfo:
    """A folder as LIST shows it."""

    name: str
    separator: str | None
    attributes: frozenset[str]

    @property
    def selectable(self) -> bool:
        """False for ``\\Noselect`` / ``\\NonExistent`` names."""
        low = {a.lower() for a in self.attributes}
        return not ({"\\noselect", "\\nonexistent"} & low)

    @property
    def special_use(self) -> list[str]:
        """The folder's special-use attributes, sorted."""
        return sorted(_SPECIAL[a.lower()] for a in self.attributes if a.lower() in _SPECIAL)


@dataclass(frozen=True)
class FolderStatus:
    """STATUS of one folder."""

    messages: int
    uidvalidity: int
    uidnext: int
    highestmodseq: int | None


@dataclass(frozen=True)
class LiveMessage:
    """What a header-only FETCH tells about one message."""

    uid: int
    flags: tuple[str, ...]
    keywords: tuple[str, ...]
    internaldate: str
    size: int
    message_id: str | None
    modseq: int | None


@dataclass(frozen=True)
class NewMessage:
    """A message to APPEND."""

    raw: bytes
    flags: tuple[str, ...]
    internaldate: str


def text(value: Any) -> str:
    """Bytes from the wire as text (UTF-8, undecodable bytes replaced)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def split_flags(raw: Sequence[Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """System flags and keywords of a FLAGS response, each sorted, ``\\Recent`` dropped."""
    names = [text(f) for f in raw]
    # \Recent belongs to one session; no client can set it, so it is neither kept nor compared.
    system = sorted(
        _SYSTEM.get(f.lower(), f)
        for f in names
        if f.startswith("\\") and f.lower() != "\\recent"
    )
    keywords = sorted({f for f in names if not f.startswith("\\")})
    return tuple(system), tuple(keywords)


def utc_iso(when: datetime) -> str:
    """An INTERNALDATE as ISO 8601 in UTC (a naive time is taken as UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat()


def parse_message_id(header_block: bytes | None) -> str | None:
    """The Message-ID from a ``HEADER.FIELDS (MESSAGE-ID)`` block, unfolded; None if absent."""
    if not header_block:
        return None
    found = _MESSAGE_ID.search(_FOLD.sub(b" ", header_block))
    if found is None:
        return None
    text = " ".join(found.group(1).decode("utf-8", "replace").split())
    return text or None


def parse_uid_set(text: str) -> list[int]:
    """``5:7,9`` → ``[5, 6, 7, 9]``."""
    out: list[int] = []
    for part in text.split(","):
        if ":" in part:
            lo, hi = (int(x) for x in part.split(":"))
            out.extend(range(min(lo, hi), max(lo, hi) + 1))
        elif part:
            out.append(int(part))
    return out


def compact_uids(uids: Sequence[int]) -> str:
    """``[1, 2, 3, 5]`` → ``"1:3,5"`` (short commands for long runs of UIDs)."""
    out: list[str] = []
    ordered = sorted(set(uids))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}:{ordered[j]}")
        i = j + 1
    return ",".join(out)



def batches(items: Sequence[Any], size_of: Callable[[Any], int]) -> Iterator[list[Any]]:
    """Split ``items`` into lists of at most :data:`BATCH_MESSAGES` and about
    :data:`BATCH_BYTES` (an item larger than that goes alone)."""
    batch: list[Any] = []
    total = 0
    for item in items:
        size = size_of(item)
        if batch and (len(batch) >= BATCH_MESSAGES or total + size > BATCH_BYTES):
            yield batch
            batch, total = [], 0
        batch.append(item)
        total += size
    if batch:
        yield batch

_FOLD = re.compile(rb"\r?\n[ \t]+")
_MESSAGE_ID = re.compile(rb"(?im)^message-id:[ \t]*(.*?)[ \t]*\r?$")
_START = re.compile(rb"^\d+ \(")
_FLAGS = re.compile(rb"\bFLAGS \(([^)]*)\)")
_UID = re.compile(rb"\bUID (\d+)")
_DATE = re.compile(rb'\bINTERNALDATE "([^"]+)"')
_SIZE = re.compile(rb"\bRFC822\.SIZE (\d+)")
_MODSEQ = re.compile(rb"\bMODSEQ \((\d+)\)")


_MONTHS = {m: i for i, m in enumerate(
    (b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov", b"dec"),
    start=1,
)}


def parse_internaldate(value: bytes) -> str:
    """``02-Jan-2026 08:01:00 +0000`` → ISO 8601 in UTC (RFC 3501 date-time)."""
    try:
        day, month, rest = value.strip().split(b"-", 2)
        year, clock, zone = rest.split(b" ")
        hh, mm, ss = clock.split(b":")
        offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[3:5]))
        when = datetime(
            int(year), _MONTHS[month.lower()], int(day), int(hh), int(mm), int(ss),
            tzinfo=timezone(-offset if zone[:1] == b"-" else offset),
        )
    except (ValueError, KeyError, IndexError) as exc:
        raise ValueError(f"not an IMAP date-time: {value!r}") from exc
    return utc_iso(when)


def parse_scan(data: Sequence[Any]) -> list[LiveMessage] | None:
    """Messages in the untagged FETCH data of a header-only scan, or None if unsure.

    imaplib hands each message over as ``(head, literal)`` followed by the
    rest of the line (``b")"``), or as one line when there is no literal.
    Answers without RFC822.SIZE are unsolicited flag updates and are skipped.
    """
    records: list[tuple[bytes, bytes | None]] = []
    for entry in data:
        if isinstance(entry, tuple):
            if len(entry) != 2 or not isinstance(entry[0], bytes):
                return None
            records.append((entry[0], bytes(entry[1])))
        elif isinstance(entry, bytes):
            if _START.match(entry) or not records:
                records.append((entry, None))
            else:
                head, literal = records[-1]
                records[-1] = (head + entry, literal)
        else:
            return None
    out: list[LiveMessage] = []
    for head, literal in records:
        size = _SIZE.search(head)
        if size is None:
            continue
        flags = _FLAGS.search(head)
        if flags is None:
            return None
        rest = head[: flags.start()] + head[flags.end() :]
        uid, date, modseq = _UID.search(rest), _DATE.search(rest), _MODSEQ.search(rest)
        if uid is None or date is None or (literal is None and b"BODY[HEADER" not in head):
            return None
        system, keywords = split_flags(flags.group(1).split())
        try:
            internaldate = parse_internaldate(date.group(1))
        except ValueError:
            return None
        out.append(
            LiveMessage(
                uid=int(uid.group(1)),
                flags=system,
                keywords=keywords,
                internaldate=internaldate,
                size=int(size.group(1)),
                message_id=parse_message_id(literal),
                modseq=int(modseq.group(1)) if modseq else None,
            )
        )
    return out
