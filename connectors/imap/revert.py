"""Undoing one call on a mailbox: messages by identity, flags and keywords as sets.

A message is matched by folder, Message-ID (or the digest of its bytes) and copy
number.  A call that moved messages shows as copies removed from one folder and
added to another; the undo moves them back (never copying a message a later
writer kept).  Flags and keywords are merged as sets: what the call set is
cleared, what it cleared is set again, and what anyone set or cleared since is
kept.  A folder's message count is derived from its messages (*soft*).
"""

from __future__ import annotations

from typing import ClassVar

from preimage.restoration.revert import Reverter
from preimage.snapshot_schemas import Item


class ImapReverter(Reverter):
    """Messages by identity with flags as sets; folders whole."""

    write_soft_only: ClassVar[bool] = False

    def soft(self, item: Item, path: str) -> bool:
        return item.kind == "folder" and path == "messages"
