"""The embedded default store: a blob store plus a SQLite catalog.

Location: ``$PREIMAGE_HOME``, else the user data directory
(``platformdirs.user_data_dir("preimage")``) — never inside a workspace being
protected, so ``git clean -fdx`` or ``rm -rf`` of the workspace cannot take
the backups with it.  Directories are created 0700 and files 0600.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from preimage._blobs import BlobStore
from preimage._catalog import Catalog
from preimage._errors import StoreUnavailableError


def default_home() -> Path:
    """``$PREIMAGE_HOME`` or the platform's user data directory for preimage."""
    env = os.environ.get("PREIMAGE_HOME")
    if env:
        return Path(env).expanduser().absolute()
    import platformdirs

    return Path(platformdirs.user_data_dir("preimage", appauthor=False))


class Store:
    """Blobs and catalog under one home directory."""

    def __init__(self, home: Path | None = None) -> None:
        self.home = (home or default_home()).absolute()
        try:
            self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.home.chmod(0o700)
        except OSError as exc:
            raise StoreUnavailableError(str(self.home), exc.strerror or str(exc)) from exc
        if not os.access(self.home, os.W_OK):
            raise StoreUnavailableError(str(self.home), "not writable")
        self.blobs = BlobStore(self.home / "blobs")
        self.catalog = Catalog(self.home / "catalog.sqlite")
        self.blobs.digest_cache = self.catalog

    def close(self) -> None:
        """Release the catalog connection."""
        self.catalog.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def scratch(self) -> BlobStore:
        """A throw-away blob store layered over this one (for live-state captures)."""
        parent = self.home / "scratch"
        parent.mkdir(mode=0o700, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix="live-", dir=parent))
        return BlobStore(root, fallback=self.blobs)

    def contains(self, path: Path) -> bool:
        """Whether ``path`` is the store or inside it, or holds it."""
        try:
            p = path.resolve()
        except OSError:
            return False
        home = self.home.resolve()
        return p == home or home in p.parents or p in home.parents

    def put_json(self, document: dict[str, Any] | str) -> str:
        """Store a JSON document as a blob; return its digest."""
        text = document if isinstance(document, str) else json.dumps(document, sort_keys=True)
        return self.blobs.put_bytes(text.encode())

    def trash_dir(self) -> Path:
        """Where rewritten ``rm`` calls move files to."""
        path = self.home / "trash"
        path.mkdir(mode=0o700, exist_ok=True)
        return path
