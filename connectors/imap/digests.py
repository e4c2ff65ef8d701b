"""Digests of messages already in the store, so an unchanged message is not fetched twice.

An IMAP message never changes under one ``(UIDVALIDITY, UID)`` of one folder
(RFC 3501 §2.3.1.1), so the digest of its bytes can be remembered by that
identity.  The store's digest cache is keyed by five integers (built for
files: device, inode, size, mtime, ctime); a message uses it as::

    dev   = a negative 62-bit hash of "user@host:port" and the folder name
            (negative, so it never meets a real device number)
    ino   = UID
    size  = RFC822.SIZE
    mtime = UIDVALIDITY
    ctime = 0

A remembered digest is used only while its blob is still in the store.
"""

from __future__ import annotations

import hashlib

from preimage.interface.blobs import BlobStore


class DigestCache:
    """Remembered digests of one folder's messages."""

    def __init__(self, blobs: BlobStore, account: str, folder: str, uidvalidity: int) -> None:
        self.blobs = blobs
        self.uidvalidity = uidvalidity
        raw = hashlib.sha256(f"imap\0{account}\0{folder}".encode()).digest()
        self.dev = -(int.from_bytes(raw[:8], "big") >> 2) - 1
        self._pending: list[tuple[int, int, int, int, int, str]] = []

    def get(self, uid: int, size: int) -> str | None:
        """The digest of message ``uid`` if it is known and its blob is present."""
        cache = self.blobs.digest_cache
        if cache is None:
            return None
        digest = cache.cached_digest(self.dev, uid, size, self.uidvalidity, 0)
        if digest is None or not self.blobs.exists(digest):
            return None
        return digest

    def put(self, uid: int, size: int, digest: str) -> None:
        """Remember ``digest`` for message ``uid`` (written by :meth:`flush`)."""
        self._pending.append((self.dev, uid, size, self.uidvalidity, 0, digest))

    def flush(self) -> None:
        """Write what :meth:`put` collected."""
        cache = self.blobs.digest_cache
        if cache is not None and self._pending:
            cache.cache_digests(self._pending)
        self._pending = []
