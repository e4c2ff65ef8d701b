"""What the engine's stages share: the result types (:class:`Backup`, :class:`RestoreResult`),
opening the store a call did not pass, running a connector with its errors made one line,
selecting a backup's snapshots by ``--only``, and checking a backup whole before a write."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar
from urllib.parse import unquote

from preimage.interface.connector import capabilities_of
from preimage.interface.errors import (
    BlobCorruptError,
    BlobMissingError,
    PreimageError,
    StoreError,
    TerminalConnectorError,
    UsageError,
)
from preimage.interface.registry import get_connector
from preimage.interface.target import Target
from preimage.restoration import IdRemap, RestoreReport
from preimage.snapshot_schemas import Snapshot
from preimage.store.backend import BackupRow, SnapshotRow
from preimage.store.snapshots import as_seen, item_naming
from preimage.store.store import Store


@dataclass
class Backup:
    """A finished capture: its ID, its snapshots and what it cost."""

    id: str
    snapshots: list[Snapshot]
    stored_bytes: int
    logical_bytes: int
    seconds: float
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # what the store did (quota)


@dataclass
class RestoreResult:
    """The outcome of restoring a backup: per-target reports and the undo backup."""

    backup_id: str
    undo_backup_id: str | None
    reports: list[RestoreReport]
    dry_run: bool

    @property
    def ok(self) -> bool:
        """True when every report is free of failures."""
        return all(r.ok for r in self.reports)

    @property
    def remaps(self) -> list[IdRemap]:
        """Every server-assigned identity the restore changed, old → new."""
        return [m for r in self.reports for m in r.remaps]


def open_store(store: Store | None) -> Store:
    return store if store is not None else Store()


P = ParamSpec("P")


R = TypeVar("R")


def closing_own_store(fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn`` with the caller's ``store=``, or with a store opened for this call and
    closed after it: its uploads end, its leases and connections are released, the chunk
    cache is trimmed and a restore's spool of verified plaintext is removed, instead of
    all of it lasting until the process exits (or, for the spool, until another process
    sweeps it)."""

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        if kwargs.get("store") is not None:
            return fn(*args, **kwargs)
        st = Store()
        kwargs["store"] = st
        try:
            result = fn(*args, **kwargs)
        except BaseException:
            with contextlib.suppress(Exception):   # the first error is the one to report
                st.close()
            raise
        st.close()
        return result

    return call


T = TypeVar("T")


def guarded(call: Callable[[], T], verb: str, target: str) -> T:
    """Run a connector's ``call``; an exception that is not a preimage error (a client
    library's, a bug) becomes a connector error naming the target, in one line."""
    try:
        return call()
    except (PreimageError, KeyboardInterrupt, SystemExit, MemoryError):
        raise
    except OSError as exc:
        raise TerminalConnectorError(
            f"cannot {verb} {target}: {exc.strerror or exc}"
            + (f" ({exc.filename})" if exc.filename else ""), target=target) from exc
    except Exception as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TerminalConnectorError(
            f"cannot {verb} {target}: {text} — check that the target is what its URI says",
            target=target,
        ) from exc


def select_snapshots(
    backup: BackupRow, only: Iterable[str]
) -> list[tuple[SnapshotRow, tuple[str, ...]]]:
    """Snapshots of ``backup`` selected by ``--only`` URIs, with per-snapshot sub-scopes.

    An ``--only`` URI names a target of the backup, a path below one
    (``file:///srv/app/bin``), or a part of one after ``#`` — which works for
    targets with a query too (``web+isso://h/t?profile=p#comment:…``).
    """
    only = [o for o in only if o]
    if not only:
        return [(row, ()) for row in backup.snapshots]
    chosen: dict[int, set[str]] = {}
    for uri in only:
        where, hashed, part = uri.partition("#")
        clean = Target.parse(where).redacted.rstrip("/")
        hit = False
        for row in backup.snapshots:
            base = row.target.rstrip("/")
            if clean == base:
                chosen.setdefault(row.idx, set()).add(unquote(part) if hashed else "")
                hit = True
            elif clean.startswith(base + "/") and not hashed:
                chosen.setdefault(row.idx, set()).add(clean[len(base) + 1 :])
                hit = True
        if not hit:
            targets = ", ".join(r.target for r in backup.snapshots)
            raise UsageError(f"--only {uri}: not in backup {backup.id} (it holds: {targets})")
    out = []
    for row in backup.snapshots:
        if row.idx in chosen:
            scopes = chosen[row.idx]
            out.append((row, () if "" in scopes else tuple(sorted(scopes))))
    return out


@closing_own_store
def show(ref: str, *, store: Store | None = None) -> BackupRow:
    """The catalog entry of backup ``ref``."""
    st = open_store(store)
    return as_seen(st, st.catalog.get(ref))


@closing_own_store
def list_backups(limit: int | None = 50, *, store: Store | None = None) -> list[BackupRow]:
    """Backups, newest first, a killed capture shown as ``abandoned``."""
    st = open_store(store)
    return [as_seen(st, r) for r in st.catalog.list_backups(limit)]


def whole_or_nothing(connector: str, snap: Snapshot) -> bool:
    """Whether ``connector`` restores ``snap`` into its target as it is now whole or not
    at all (see ``ConnectorBase.restores_whole_or_nothing``)."""
    conn = get_connector(connector)
    decide = getattr(conn, "restores_whole_or_nothing", None)
    if decide is None:
        return capabilities_of(conn).atomic_restore
    return bool(decide(snap))


def check_whole(
    st: Store, backup: BackupRow, loaded: list[tuple[SnapshotRow, Any, Snapshot]]
) -> None:
    """Every snapshot row is there and every blob each selected snapshot references
    is present and sound — before anything is written anywhere.

    A restore of one target whose connector restores it whole or not at all (it reads
    every blob inside the transaction it writes in, or builds the target where nobody
    sees it and publishes it once all verified) needs the blobs present only: reading
    each of them here too would read it twice."""
    if backup.expected_snapshots is not None and len(backup.snapshots) != backup.expected_snapshots:
        raise StoreError(
            f"backup {backup.id} should have {backup.expected_snapshots} snapshot(s) but the "
            f"catalog holds {len(backup.snapshots)}; run `preimage check` — nothing was written"
        )
    atomic = len(loaded) == 1 and whole_or_nothing(loaded[0][0].connector, loaded[0][2])
    for row, _scope, snap in loaded:
        try:
            refs = st.catalog.ref_digests(backup.id, row.idx)   # read as checked
            if atomic:
                missing = st.blobs.missing(refs)
                if missing is not None:
                    raise BlobMissingError(missing, backup_id=backup.id)
                continue
            st.blobs.verify_many(refs, backup_id=backup.id)
        except (BlobCorruptError, BlobMissingError) as exc:
            where = item_naming(snap, exc.digest)
            path = f"{row.target} {where}" if where else row.target
            raise type(exc)(exc.digest, backup_id=backup.id, path=path) from exc
