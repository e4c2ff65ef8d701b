"""Client-side encryption of a pack repository: one user key, four subkeys.

The user's key comes from ``PREIMAGE_STORE_KEY`` or the file named by
``PREIMAGE_STORE_KEY_FILE`` (``preimage store key`` prints a fresh one).  It is
a machine-made secret, not a password: at least 32 characters, used through
HKDF-SHA256 with the repository id as salt to derive

- ``data``    — AES-256-GCM for chunks, pack headers and index files;
- ``ids``     — HMAC-SHA256 that names chunks, so neither the object store nor
  the catalog ever sees a hash of plaintext (no confirmation of a known file);
- ``chunker`` — the FastCDC gear seed, so chunk boundaries do not fingerprint
  known files either;
- ``catalog`` — AES-256-GCM for the catalog columns that can hold user text
  (labels, tool calls, targets), and an AES-SIV key that turns blob digests
  into deterministic tokens (equal digests, equal tokens; the catalog can join
  on them, and only a key holder can turn them back into digests).

A sealed box is ``0x01 | nonce (12 random bytes) | ciphertext + tag``; its
associated data binds it to its role and name, so a box moved to another place
fails to open.  Random 96-bit nonces keep one key safe for ~2**32 boxes — a
repository of 2**32 chunks of ~256 KiB is a petabyte.  A repository created
without a key (``cipher = "none"``, meant for a local directory) stores boxes as
``0x00 | plaintext`` and names chunks by plain SHA-256.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from preimage.interface.errors import StoreConfigError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

KEY_ENV = "PREIMAGE_STORE_KEY"
KEY_FILE_ENV = "PREIMAGE_STORE_KEY_FILE"
MIN_KEY_CHARS = 32
_SEALED = 1
_PLAIN = 0
_NONCE = 12


def new_key_text() -> str:
    """A fresh random key as text (43 characters of URL-safe base64, 256 bits)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")


def load_key_text(env: dict[str, str] | None = None) -> str | None:
    """The key from ``PREIMAGE_STORE_KEY`` or the file ``PREIMAGE_STORE_KEY_FILE``; None if unset.

    Raises :class:`StoreConfigError` when the file cannot be read or the key is too short.
    """
    env = dict(os.environ) if env is None else env
    text = env.get(KEY_ENV)
    source = KEY_ENV
    if not text and env.get(KEY_FILE_ENV):
        path = Path(env[KEY_FILE_ENV]).expanduser()
        source = f"{KEY_FILE_ENV} ({path})"
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise StoreConfigError(
                f"cannot read the encryption key file {path}: {exc.strerror or exc} — "
                f"point {KEY_FILE_ENV} at a readable file"
            ) from exc
    if not text:
        return None
    text = text.strip()
    if len(text) < MIN_KEY_CHARS:
        raise StoreConfigError(
            f"the encryption key from {source} is {len(text)} characters; it needs at least "
            f"{MIN_KEY_CHARS} — make one with `preimage store key`"
        )
    return text


def _hkdf(material: bytes, salt: bytes, info: bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(material)


@dataclass(frozen=True)
class Keys:
    """The subkeys of one repository (``None`` everywhere for an unencrypted one)."""

    data: bytes | None
    ids: bytes | None
    chunker_seed: int
    catalog: bytes | None
    catalog_siv: bytes | None = None

    @classmethod
    def derive(cls, key_text: str | None, repo_id: str) -> Keys:
        """Subkeys for ``repo_id`` from the user's key (or none, for ``cipher = "none"``)."""
        if key_text is None:
            return cls(None, None, 0, None)
        material, salt = key_text.encode(), bytes.fromhex(repo_id)
        # pyfastcdc takes the seed as a signed 64-bit C long: keep 63 bits.
        seed = int.from_bytes(_hkdf(material, salt, b"preimage chunker")[:8], "little") >> 1
        return cls(
            data=_hkdf(material, salt, b"preimage data"),
            ids=_hkdf(material, salt, b"preimage ids"),
            chunker_seed=seed,
            catalog=_hkdf(material, salt, b"preimage catalog"),
            catalog_siv=_hkdf(material, salt, b"preimage catalog siv a")
            + _hkdf(material, salt, b"preimage catalog siv b"),
        )

    @property
    def encrypted(self) -> bool:
        """Whether boxes are sealed (the repository has a key)."""
        return self.data is not None

    def chunk_id(self, data: bytes | memoryview) -> str:
        """The name of a chunk: keyed HMAC-SHA256 (plain SHA-256 without a key), hex."""
        if self.ids is None:
            return hashlib.sha256(data).hexdigest()
        return hmac.new(self.ids, data, hashlib.sha256).hexdigest()

    def seal(self, plaintext: bytes | memoryview, aad: bytes) -> bytes:
        """Encrypt ``plaintext`` bound to ``aad`` (a pass-through box without a key)."""
        return seal(self.data, plaintext, aad)

    def open(self, box: bytes | memoryview, aad: bytes) -> bytes:
        """Decrypt a box made by :meth:`seal`; raise :class:`BoxError` if it does not open."""
        return open_box(self.data, box, aad)


class BoxError(Exception):
    """A sealed box failed authentication (wrong key, corrupt bytes, or moved)."""


def seal(key: bytes | None, plaintext: bytes | memoryview, aad: bytes) -> bytes:
    """``0x01 | nonce | AES-256-GCM(plaintext)`` under ``key``; ``0x00 | plaintext`` without."""
    head, body = seal_parts(key, plaintext, aad)
    return head + body


def seal_parts(key: bytes | None, plaintext: bytes | memoryview,
               aad: bytes) -> tuple[bytes, bytes | memoryview]:
    """:func:`seal` as ``(prefix, rest)``, for a caller that appends both to a buffer
    (no joined copy of the box)."""
    if key is None:
        return bytes([_PLAIN]), plaintext
    nonce = secrets.token_bytes(_NONCE)
    return bytes([_SEALED]) + nonce, _aead(key).encrypt(nonce, plaintext, aad)


def open_box(key: bytes | None, box: bytes | memoryview, aad: bytes) -> bytes:
    """Reverse :func:`seal`; :class:`BoxError` when the box does not authenticate."""
    view = memoryview(box)
    if len(view) < 1:
        raise BoxError("empty box")
    kind = view[0]
    if kind == _PLAIN:
        if key is not None:
            raise BoxError("unencrypted box in an encrypted repository")
        return bytes(view[1:])
    if kind != _SEALED or key is None or len(view) < 1 + _NONCE + 16:
        raise BoxError("not a box this key can open")
    from cryptography.exceptions import InvalidTag

    try:
        return _aead(key).decrypt(view[1 : 1 + _NONCE], view[1 + _NONCE :], aad)
    except InvalidTag as exc:
        raise BoxError("authentication failed") from exc


@functools.lru_cache(maxsize=8)
def _aead(key: bytes) -> AESGCM:
    """One cipher object per key (they are immutable, and safe to share between threads)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key)
