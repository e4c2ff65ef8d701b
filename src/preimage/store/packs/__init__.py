"""Packed, content-defined-chunked, optionally encrypted blob storage.

The repository format (``docs/remote-store.md``) over a :class:`Storage`: an
S3-compatible bucket for a store shared by many machines, or a plain
directory.  :class:`PackBlobStore` gives the connectors the same blob API as
the embedded default store.
"""

from preimage.store.packs._blobstore import PackBlobStore
from preimage.store.packs._crypto import Keys, load_key_text, new_key_text
from preimage.store.packs._format import RepoConfig
from preimage.store.packs._repository import PackRepository, init_repository
from preimage.store.packs._storage import DirectoryStorage, ObjectMissing, Storage

__all__ = [
    "DirectoryStorage",
    "Keys",
    "ObjectMissing",
    "PackBlobStore",
    "PackRepository",
    "RepoConfig",
    "Storage",
    "init_repository",
    "load_key_text",
    "new_key_text",
]
