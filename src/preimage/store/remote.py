"""A store shared by many machines, configured by URL.

    PREIMAGE_STORE=s3://bucket/prefix?endpoint=http://127.0.0.1:8333&region=us-east-1
    PREIMAGE_CATALOG=postgresql://preimage@db.internal:5432/preimage
    PREIMAGE_STORE_KEY=…            (or PREIMAGE_STORE_KEY_FILE=/path/to/key)
    AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=…   (the object store's credentials)

Blobs go to a pack repository (:mod:`preimage.store.packs`) on the object store
— ``file:///shared/dir`` works too, for a shared filesystem — and the catalog
to PostgreSQL.  ``$PREIMAGE_HOME`` stays the machine's own directory: the
chunk and index cache, the stat cache, scratch areas and the trash.

No credential is ever taken from, or kept in, a store URL: an ``s3://`` URL
with a user or password is refused; the catalog URL may carry a password (it
is the libpq convention) but is only ever printed redacted.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote, urlsplit

from preimage.interface.errors import StoreConfigError
from preimage.interface.redact import redact

if TYPE_CHECKING:
    from preimage.store.catalog_postgres import PostgresCatalog
    from preimage.store.packs import PackBlobStore, Storage

STORE_ENV = "PREIMAGE_STORE"
CATALOG_ENV = "PREIMAGE_CATALOG"


@dataclass(frozen=True)
class RemoteSettings:
    """Where a shared store lives (from the environment or the command line)."""

    store_url: str
    catalog_url: str
    key_text: str | None

    @property
    def store_where(self) -> str:
        """The store URL, safe to print."""
        return redact(self.store_url)

    @property
    def catalog_where(self) -> str:
        """The catalog URL, safe to print (password removed)."""
        return redact(self.catalog_url)


def configured(env: dict[str, str] | None = None) -> RemoteSettings | None:
    """The shared store named by ``PREIMAGE_STORE`` (None when it is unset)."""
    env = dict(os.environ) if env is None else env
    url = env.get(STORE_ENV, "").strip()
    if not url:
        return None
    catalog = env.get(CATALOG_ENV, "").strip()
    if not catalog:
        raise StoreConfigError(
            f"{STORE_ENV} is set but {CATALOG_ENV} is not — a shared store keeps its catalog "
            f"in PostgreSQL: set {CATALOG_ENV}=postgresql://user@host/db")
    from preimage.store.packs import load_key_text

    return RemoteSettings(url, catalog, load_key_text(env))


def open_storage(url: str) -> Storage:
    """The :class:`Storage` an ``s3://`` or ``file://`` URL names."""
    from preimage.store.packs import DirectoryStorage

    parts = urlsplit(url)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise StoreConfigError(f"store URL {redact(url)}: file:// takes a local path")
        return DirectoryStorage(Path(unquote(parts.path)))
    if parts.scheme != "s3":
        raise StoreConfigError(
            f"store URL {redact(url)!r}: use s3://bucket/prefix?endpoint=… or file:///path")
    if parts.username or parts.password:
        raise StoreConfigError(
            "the store URL must not hold credentials — set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY instead")
    if not parts.hostname:
        raise StoreConfigError(f"store URL {redact(url)!r} names no bucket: s3://bucket/prefix")
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    unknown = set(query) - {"endpoint", "region"}
    if unknown:
        raise StoreConfigError(
            f"store URL {redact(url)!r}: unknown option(s) {', '.join(sorted(unknown))} "
            "(known: endpoint, region)")
    from preimage.store.packs._s3 import S3Location, S3Storage

    return S3Storage(S3Location(parts.hostname, parts.path.strip("/"), query.get("endpoint"),
                                query.get("region")))


def _check_catalog_url(url: str) -> None:
    if urlsplit(url).scheme not in ("postgresql", "postgres"):
        raise StoreConfigError(
            f"catalog URL {redact(url)!r}: use postgresql://user@host:port/database")


class LocalDigestCache:
    """The stat cache of one machine for a shared store (inode numbers are local)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._path = path
        self._local = threading.local()
        with self._db() as db:
            db.execute("CREATE TABLE IF NOT EXISTS stat_cache (dev INTEGER, ino INTEGER,"
                       " size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, digest TEXT NOT NULL,"
                       " PRIMARY KEY (dev, ino))")

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            from preimage.store.wal import use_wal

            db = sqlite3.connect(self._path, timeout=60)
            use_wal(db)
            self._local.db = db
        return db

    def cached_digest(self, dev: int, ino: int, size: int, mtime_ns: int,
                      ctime_ns: int) -> str | None:
        """A digest recorded for an unchanged inode, if any."""
        row = self._db().execute(
            "SELECT digest FROM stat_cache WHERE dev=? AND ino=? AND size=? AND mtime_ns=?"
            " AND ctime_ns=?", (dev, ino, size, mtime_ns, ctime_ns)).fetchone()
        return str(row[0]) if row else None

    def cache_digests(self, rows: list[tuple[int, int, int, int, int, str]]) -> None:
        """Remember digests by inode and stat (batched)."""
        if rows:
            with self._db() as db:
                db.executemany("INSERT OR REPLACE INTO stat_cache VALUES (?,?,?,?,?,?)", rows)

    def cached_digests(self, dev: int, inodes: Sequence[int]
                       ) -> dict[int, tuple[int, int, int, str]] | None:
        """The recorded stat and digest of each of ``inodes`` it holds (one query per 500)."""
        from preimage.store.catalog import stat_cache_rows

        return stat_cache_rows(self._db(), dev, inodes)


def open_backend(settings: RemoteSettings, home: Path) -> tuple[PackBlobStore, PostgresCatalog]:
    """The blob side and catalog side of the shared store (both checked: reachable,
    initialised, the right key, the catalog belonging to this repository)."""
    from preimage.store.catalog_postgres import PostgresCatalog
    from preimage.store.packs import PackBlobStore, PackRepository

    _check_catalog_url(settings.catalog_url)
    storage = open_storage(settings.store_url)
    repo = PackRepository.open(storage, settings.key_text, home / "cache")
    catalog = PostgresCatalog(settings.catalog_url, settings.catalog_where, repo.keys,
                              repo.config.id)
    blobs = PackBlobStore(repo, coordinator=catalog)
    blobs.digest_cache = LocalDigestCache(home / "cache" / repo.config.id / "stat.sqlite")
    catalog.on_lease = blobs.begin_capture
    return blobs, catalog


def init_backend(settings: RemoteSettings) -> tuple[str, bool, int]:
    """Create the repository and the catalog tables (idempotent).

    Returns ``(repository id, repository created, catalog schema found before)``.
    """
    from preimage.store.catalog_postgres import PostgresCatalog, reach_catalog
    from preimage.store.packs import Keys, init_repository

    _check_catalog_url(settings.catalog_url)
    storage = open_storage(settings.store_url)
    if settings.key_text is None and not settings.store_url.startswith("file:"):
        raise StoreConfigError(
            "a shared store is encrypted on the client: set PREIMAGE_STORE_KEY or "
            "PREIMAGE_STORE_KEY_FILE first (`preimage store key` makes one)")
    # Reach both servers before writing anything to either.
    reach_catalog(settings.catalog_url, settings.catalog_where)
    storage.check()
    config, created = init_repository(storage, Keys, settings.key_text, secrets.token_hex(16))
    keys = Keys.derive(settings.key_text, config.id)
    catalog = PostgresCatalog(settings.catalog_url, settings.catalog_where, keys, config.id,
                              create=True)
    try:
        before = catalog.migrate(config.id)
    finally:
        catalog.close()
    return config.id, created, before


def open_configured(home: Path) -> tuple[PackBlobStore, PostgresCatalog] | None:
    """The shared backend when ``PREIMAGE_STORE`` is set, else None."""
    settings = configured()
    return None if settings is None else open_backend(settings, home)

