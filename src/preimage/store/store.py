"""The store: a blob store plus a catalog, and the local directories beside them.

Location: ``$PREIMAGE_HOME``, else the user data directory
(``platformdirs.user_data_dir("preimage")``) — never inside a workspace being
protected, so ``git clean -fdx`` or ``rm -rf`` of the workspace cannot take
the backups with it.  A home preimage creates is 0700 and its files 0600; a
home that already exists keeps its mode (a shared store stays shared).

Layout (the written contract is ``docs/store.md``)::

    catalog.sqlite       the catalog (format version in its meta table)
    locks/               capture leases and store-wide locks (flock)
    blobs/<xx>/<sha256>.zst, blobs/tmp/, blobs/hidden/<generation>/
    trash/<backup id>/   paths a backup moved aside instead of deleting
    scratch/live-*/      throw-away blob stores for comparing live state
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from preimage.interface.blobs import BlobStore, Leftover
from preimage.interface.errors import StoreUnavailableError
from preimage.store.backend import Catalog
from preimage.store.blobs import LocalBlobStore
from preimage.store.catalog import SqliteCatalog


def default_home() -> Path:
    """``$PREIMAGE_HOME`` or the platform's user data directory for preimage."""
    env = os.environ.get("PREIMAGE_HOME")
    if env:
        return Path(env).expanduser().absolute()
    import platformdirs

    return Path(platformdirs.user_data_dir("preimage", appauthor=False))


class Store:
    """Blobs and catalog under one home directory.

    ``blobs`` and ``catalog`` plug in another backend (see
    :mod:`preimage.store.backend`); with neither given and ``PREIMAGE_STORE`` set,
    the shared store it names is opened (:mod:`preimage.store.remote`).  The home
    still holds the local parts (locks, trash, scratch areas, caches).
    Opening a store at an older format upgrades it; a newer one raises
    :class:`~preimage.StoreFormatError`.
    """

    def __init__(
        self,
        home: Path | None = None,
        *,
        blobs: BlobStore | None = None,
        catalog: Catalog | None = None,
    ) -> None:
        from preimage.store.format import upgrade

        self.home = (home or default_home()).absolute()
        try:
            if not self.home.exists():
                self.home.mkdir(mode=0o700, parents=True)
                self.home.chmod(0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise StoreUnavailableError(str(self.home), exc.strerror or str(exc)) from exc
        if not self.home.is_dir():
            raise StoreUnavailableError(str(self.home), "not a directory")
        if not os.access(self.home, os.W_OK):
            raise StoreUnavailableError(str(self.home), "not writable")
        if blobs is None and catalog is None and os.environ.get("PREIMAGE_STORE"):
            from preimage.store.remote import open_configured

            blobs, catalog = open_configured(self.home) or (None, None)
        self.blobs: BlobStore = blobs or LocalBlobStore(self.home / "blobs")
        self.catalog: Catalog = catalog or SqliteCatalog(self.home / "catalog.sqlite")
        if self.blobs.digest_cache is None:
            self.blobs.digest_cache = self.catalog
        if isinstance(self.blobs, LocalBlobStore) and isinstance(self.catalog, SqliteCatalog):
            self.blobs.soundness = self.catalog
        try:
            upgrade(self)
        except BaseException:
            self.catalog.close()
            raise

    def close(self) -> None:
        """Write what the blob store buffers, release the blob side (uploads, leases)
        and the catalog connection."""
        try:
            try:
                self.blobs.flush()
            finally:
                self.blobs.close()
        finally:
            self.catalog.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ scratch areas
    def scratch(self) -> LocalBlobStore:
        """A throw-away blob store layered over this one (for live-state captures).

        The area is locked while the returned store lives, so ``prune`` can tell
        it from one a killed process left; callers remove ``root`` when done.
        """
        parent = self.home / "scratch"
        parent.mkdir(mode=0o700, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix=".new-", dir=parent))
        lock = os.open(fresh / ".lock", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX)
        root = parent / ("live-" + fresh.name[len(".new-") :])
        os.rename(fresh, root)
        area = LocalBlobStore(root, fallback=self.blobs)
        # the lock lives as long as the area's store object (or until scratch_area ends)
        area._scratch_lock = weakref.finalize(area, os.close, lock)  # type: ignore[attr-defined]
        return area

    @contextlib.contextmanager
    def scratch_area(self) -> Iterator[LocalBlobStore]:
        """:meth:`scratch` as a context manager that removes the area afterwards."""
        area = self.scratch()
        try:
            yield area
        finally:
            area.close()   # its pack index and open packs, before they are deleted
            shutil.rmtree(area.root, ignore_errors=True)
            area._scratch_lock()  # type: ignore[attr-defined]

    # ------------------------------------------------------------ paths
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
        import json

        text = document if isinstance(document, str) else json.dumps(document, sort_keys=True)
        return self.blobs.put_bytes(text.encode())

    def trash_dir(self) -> Path:
        """The store's trash: ``trash/<backup id>/`` per backup (see :meth:`trash_path`)."""
        path = self.home / "trash"
        path.mkdir(mode=0o700, exist_ok=True)
        return path

    def trash_path(self, backup_id: str) -> Path:
        """Where backup ``backup_id`` moves paths it takes out of the way.

        Create the backup (``open``) before moving anything here and record each
        move with ``catalog.add_trash``: ``prune`` reclaims a backup's trash
        directory only once the backup is forgotten.
        """
        path = self.trash_dir() / backup_id
        path.mkdir(mode=0o700, exist_ok=True)
        return path

    # ------------------------------------------------------------ local leftovers
    def local_leftovers(self) -> list[Leftover]:
        """Scratch areas no live process holds (left by killed ``diff``/``score`` runs)."""
        out: list[Leftover] = []
        parent = self.home / "scratch"
        if not parent.is_dir():
            return out
        for area in sorted(parent.iterdir()):
            if area.name.startswith(("live-", ".new-")) and _area_unheld(area):
                out.append(Leftover(f"scratch/{area.name}", _tree_size(area)))
        return out

    def remove_local_leftovers(self, names: list[str]) -> int:
        """Delete scratch areas listed earlier that are still unheld; bytes freed."""
        freed = 0
        for name in names:
            area = self.home / name
            if not name.startswith("scratch/") or not area.is_dir() or not _area_unheld(area):
                continue
            size = _tree_size(area)
            shutil.rmtree(area, ignore_errors=True)
            freed += size
        return freed


def _area_unheld(area: Path) -> bool:
    try:
        fd = os.open(area / ".lock", os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:   # no lock yet: being created this very moment (an empty directory)
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _tree_size(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, f)).st_size
    return total
