"""The shared catalog's encryption with the store's catalog keys: text columns sealed, blob
digests turned into deterministic tokens (AES-SIV), each reversible only with the keys."""

from __future__ import annotations

import base64

from preimage.store.packs._crypto import Keys, open_box, seal


class CatalogCipher:
    """Seals text columns and tokenises digests with the store's catalog keys."""

    def __init__(self, keys: Keys) -> None:
        self._key = keys.catalog
        self._siv = None
        if keys.catalog_siv is not None:
            from cryptography.hazmat.primitives.ciphers.aead import AESSIV

            self._siv = AESSIV(keys.catalog_siv)

    def text(self, value: str, column: str) -> str:
        """A column value as stored."""
        if self._key is None:
            return value
        return "s1:" + base64.b64encode(seal(self._key, value.encode(), column.encode())).decode()

    def untext(self, stored: str | None, column: str) -> str | None:
        """A stored column value back as text (``None`` stays ``None``)."""
        if stored is None or self._key is None or not stored.startswith("s1:"):
            return stored
        return open_box(self._key, base64.b64decode(stored[3:]), column.encode()).decode()

    def token(self, digest: str) -> str:
        """The deterministic token of a blob digest."""
        if self._siv is None:
            return digest
        return self._siv.encrypt(bytes.fromhex(digest), None).hex()

    def untoken(self, token: str) -> str:
        """The digest a token stands for."""
        if self._siv is None:
            return token
        return self._siv.decrypt(bytes.fromhex(token), None).hex()
