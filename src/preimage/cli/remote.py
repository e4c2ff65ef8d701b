"""``preimage store init|migrate|status|key`` and ``preimage copy``: the shared store's commands.

A shared store is named by ``PREIMAGE_STORE`` / ``PREIMAGE_CATALOG`` (or
``--store`` / ``--catalog``); its key by ``PREIMAGE_STORE_KEY`` or
``PREIMAGE_STORE_KEY_FILE``.  No command prints a key or a password: URLs are
shown redacted, the key only by where it came from.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from preimage.cli.output import emit_json, err, handle_errors, out
from preimage.interface.errors import StoreConfigError, UsageError

if TYPE_CHECKING:
    from preimage.store.remote import RemoteSettings
    from preimage.store.store import Store


def _settings(store: str | None, catalog: str | None) -> Any:
    from preimage.store.remote import CATALOG_ENV, STORE_ENV, RemoteSettings, configured

    env = dict(os.environ)
    if store:
        env[STORE_ENV] = store
    if catalog:
        env[CATALOG_ENV] = catalog
    settings = configured(env)
    if settings is None:
        raise StoreConfigError(
            f"no shared store named — set {STORE_ENV}=s3://bucket/prefix?endpoint=… and "
            f"{CATALOG_ENV}=postgresql://… (or pass --store and --catalog)")
    assert isinstance(settings, RemoteSettings)
    return settings


def _key_source() -> str:
    if os.environ.get("PREIMAGE_STORE_KEY"):
        return "PREIMAGE_STORE_KEY"
    if os.environ.get("PREIMAGE_STORE_KEY_FILE"):
        return f"PREIMAGE_STORE_KEY_FILE ({os.environ['PREIMAGE_STORE_KEY_FILE']})"
    return "none (unencrypted)"


_store_opt = click.option("--store", "store_url", help="Store URL (default: $PREIMAGE_STORE).")
_catalog_opt = click.option("--catalog", "catalog_url",
                            help="Catalog URL (default: $PREIMAGE_CATALOG).")


@click.group()
def store() -> None:
    """Set up and inspect a store shared by many machines (S3 + PostgreSQL)."""


@store.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@handle_errors
def key(path: Path) -> None:
    """Write a new random encryption key to PATH (0600; never printed)."""
    from preimage.store.packs import new_key_text

    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise UsageError(f"{path} exists; refusing to overwrite a key — choose a new path") from None
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    with os.fdopen(fd, "w") as fh:
        fh.write(new_key_text() + "\n")
    err.print(f"wrote a new key to {path} — keep a copy somewhere safe: without it the store "
              f"cannot be read. Use it with PREIMAGE_STORE_KEY_FILE={path}")


@store.command()
@_store_opt
@_catalog_opt
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def init(store_url: str | None, catalog_url: str | None, as_json: bool) -> None:
    """Create the shared store (the repository and the catalog tables); idempotent."""
    from preimage.store.remote import init_backend

    settings = _settings(store_url, catalog_url)
    repo_id, created, before = init_backend(settings)
    doc = {"store": settings.store_where, "catalog": settings.catalog_where,
           "repository": repo_id, "created": created, "catalog_schema_before": before}
    if as_json:
        emit_json(doc)
        return
    verb = "initialised" if created else "already initialised"
    out.print(f"{verb} {settings.store_where} (repository {repo_id[:12]}), catalog "
              f"{settings.catalog_where}")


@store.command()
@_store_opt
@_catalog_opt
@handle_errors
def migrate(store_url: str | None, catalog_url: str | None) -> None:
    """Bring the catalog's tables and the store format up to this preimage's."""
    from preimage.store.catalog_postgres import SCHEMA_VERSION
    from preimage.store.format import required

    settings = _settings(store_url, catalog_url)
    with _home_store(settings) as st:   # opening upgrades an older store format
        before = st.catalog.schema_found
        st.catalog.migrate()
        current = required(st)
    out.print(f"catalog schema {before} → {SCHEMA_VERSION}; store format {current} is current")


@contextlib.contextmanager
def _home_store(settings: Any) -> Iterator[Any]:
    from preimage.store.store import default_home

    st = remote_store(settings, default_home())
    try:
        yield st
    finally:
        st.close()


@store.command()
@_store_opt
@_catalog_opt
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def status(store_url: str | None, catalog_url: str | None, as_json: bool) -> None:
    """Where the shared store is, its format, and what it holds."""
    from preimage.interface.sizes import human_bytes
    from preimage.store.catalog_postgres import SCHEMA_VERSION

    settings = _settings(store_url, catalog_url)
    with _home_store(settings) as st:
        repo = st.blobs.repo
        repo.refresh()
        packs = repo.stored_packs()
        doc = {
            "store": settings.store_where,
            "catalog": settings.catalog_where,
            "repository": repo.config.id,
            "format": repo.config.version,
            "store_format": st.catalog.format_version(),
            "catalog_schema": SCHEMA_VERSION,
            "cipher": repo.config.cipher,
            "key": _key_source(),
            "backups": st.catalog.count(),
            "packs": len(packs),
            "pack_bytes": sum(packs.values()),
            "index_files": len(repo.index_files()),
            "blobs": len(repo.all_blobs()),
            "hidden_blobs": sum(len(v) for v in st.blobs.hidden().values()),
            "cache": str(repo.cache_dir) if repo.cache_dir else None,
        }
    if as_json:
        emit_json(doc)
        return
    for k, v in doc.items():
        shown = human_bytes(int(v)) if k == "pack_bytes" else v
        out.print(f"{k:>15}: {shown}")


def _open_named(spec: str | None, catalog_url: str | None) -> Any:
    """``local`` → the machine's own store; a URL → that shared store; None → the default."""
    from preimage.store.blobs import LocalBlobStore
    from preimage.store.catalog import SqliteCatalog
    from preimage.store.store import Store, default_home

    if spec is None:
        return Store()
    if spec == "local":
        home = default_home()
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        return Store(home, blobs=LocalBlobStore(home / "blobs"),
                     catalog=SqliteCatalog(home / "catalog.sqlite"))

    return remote_store(_settings(spec, catalog_url), default_home())


@click.command()
@click.argument("ref")
@click.option("--to", "to", required=True,
              help="Destination: `local` (this machine's store) or a store URL (s3://…, file://…).")
@click.option("--from", "from_", default=None,
              help="Source: `local` or a store URL (default: the configured store).")
@click.option("--catalog", "catalog_url", help="Catalog URL of a shared store named by URL.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def copy(ref: str, to: str, from_: str | None, catalog_url: str | None, as_json: bool) -> None:
    """Copy backup REF (with every blob it needs) into another store."""
    from preimage.store.copy import copy_backup

    src = _open_named(from_, catalog_url)
    try:
        dst = _open_named(to, catalog_url)
        try:
            result = copy_backup(src, dst, ref)
        finally:
            dst.close()
    finally:
        src.close()
    if as_json:
        emit_json(result)
        return
    if result["copied"]:
        out.print(f"copied {result['id']}: {result['blobs_copied']} blob(s), "
                  f"{result['bytes_copied']} bytes sent ({result['blobs_present']} already there)")
    else:
        out.print(f"{result['id']} is already in the destination")


def remote_store(settings: RemoteSettings, home: Path) -> Store:
    """A :class:`~preimage.Store` over the shared backend, with ``home`` for local parts."""
    from preimage.store.remote import open_backend
    from preimage.store.store import Store

    blobs, catalog = open_backend(settings, home)
    return Store(home, blobs=blobs, catalog=catalog)
