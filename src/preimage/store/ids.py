"""Backup IDs: short, unique, sortable.

An ID is 13 characters of Crockford base32 (lower case): 9 for the capture
time in milliseconds since 2020 (sortable for a thousand years) and 4 random.
"""

from __future__ import annotations

import re
import secrets
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_last = [0]  # the millisecond of this process's last ID


def _encode(value: int, width: int) -> str:
    out = []
    for _ in range(width):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def new_backup_id() -> str:
    """A new ID: 9 base32 chars of milliseconds since 2020 + 4 random chars.

    Lexical order is time order; 20 random bits make collisions within one
    millisecond vanishingly rare (and the catalog's primary key rejects them).
    Within one process the order is also the order of the calls, even when two
    fall in the same millisecond or the wall clock steps back.
    """
    ms = max(int(time.time() * 1000) - 1_577_836_800_000, _last[0] + 1)
    _last[0] = ms
    return _encode(ms, 9) + _encode(secrets.randbits(20), 4)


_ID = re.compile(r"[0-9a-z]{1,64}")


def is_backup_id(text: object) -> bool:
    """Whether ``text`` can be a backup ID: lower-case letters and digits, 1 to 64 of
    them (the catalog's IDs are 13; an ID names files, so nothing else is accepted)."""
    return isinstance(text, str) and _ID.fullmatch(text) is not None
