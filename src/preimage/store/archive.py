"""``export`` / ``import``: one backup as one self-contained, verifiable archive.

The archive is a tar stream compressed with zstd (``.tar.zst``)::

    preimage-backup.json       the manifest: format, the backup's catalog row,
                               its snapshot rows, the blobs each references, its
                               trash entries; written first
    blobs/<sha256>             every referenced blob, uncompressed
    trash/<n>/...              paths the backup moved into the store's trash
    preimage-backup.sha256     sha256 of the manifest, written last

Import verifies as it reads: the manifest against its digest, every blob
against its name (a blob is stored only if its bytes hash to it), and that
every referenced blob arrived — and only then enters the backup into the
catalog, under its own ID, so a damaged or truncated archive adds nothing a
restore could use.  While it imports, the backup is ``open`` under its lease,
like a capture, so a parallel ``prune`` keeps the blobs it has written.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import zstandard

from preimage.interface.errors import PreimageError, StoreError, UsageError
from preimage.store.backend import BackupRow, SnapshotRow
from preimage.store.format import FORMAT
from preimage.store.ids import is_backup_id
from preimage.store.store import Store

MANIFEST = "preimage-backup.json"
MANIFEST_SUM = "preimage-backup.sha256"
KIND = "preimage-backup"
VERSION = 1


class _ChunkReader(io.RawIOBase):
    """A file object over a blob's verified chunks (for ``tarfile.addfile``)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf:
            try:
                self._buf = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def _manifest(store: Store, backup: BackupRow) -> dict[str, Any]:
    refs = {row.idx: sorted(store.catalog.refs(backup.id, row.idx)) for row in backup.snapshots}
    trash = [e for e in store.catalog.trash()
             if e.backup_id == backup.id and os.path.lexists(e.stored_at)]
    return {
        "kind": KIND,
        "version": VERSION,
        "store_format": FORMAT,
        "exported_at": time.time(),
        "backup": {
            "id": backup.id, "created_at": backup.created_at, "label": backup.label,
            "kind": backup.kind, "tier": backup.tier, "tool_call": backup.tool_call,
            "session": backup.session, "parent_id": backup.parent_id,
            "stored_bytes": backup.stored_bytes, "logical_bytes": backup.logical_bytes,
            "seconds": backup.seconds,
        },
        "snapshots": [
            {"idx": r.idx, "connector": r.connector, "target": r.target, "digest": r.digest,
             "items": r.items, "refs": refs[r.idx]}
            for r in backup.snapshots
        ],
        "trash": [{"n": i, "original": e.original, "name": Path(e.stored_at).name}
                  for i, e in enumerate(trash)],
        "trash_paths": [e.stored_at for e in trash],
    }


def export_backup(store: Store, ref: str, out: IO[bytes]) -> dict[str, Any]:
    """Write backup ``ref`` as an archive to ``out``; return its manifest.

    Every blob is verified before the first byte is written, so a damaged
    backup is refused rather than exported half.
    """
    from preimage.store.snapshots import pinned_backup

    with pinned_backup(store, ref, "exported") as backup:
        return _export(store, backup, out)


def _export(store: Store, backup: BackupRow, out: IO[bytes]) -> dict[str, Any]:
    manifest = _manifest(store, backup)
    digests = sorted({d for s in manifest["snapshots"] for d in s["refs"]})
    for digest in digests:
        store.blobs.verify(digest, backup_id=backup.id)
    trash_paths = manifest.pop("trash_paths")
    raw = json.dumps(manifest, sort_keys=True, indent=1).encode()
    cctx = zstandard.ZstdCompressor(level=3)
    with cctx.stream_writer(out, closefd=False) as zout, \
            tarfile.open(fileobj=zout, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        _add_bytes(tar, MANIFEST, raw)
        for digest in digests:
            info = tarfile.TarInfo(f"blobs/{digest}")
            info.size = store.blobs.raw_size(digest) or 0
            info.mtime = int(manifest["exported_at"])
            tar.addfile(info, io.BufferedReader(_ChunkReader(store.blobs.chunks(digest))))
        for entry, path in zip(manifest["trash"], trash_paths, strict=True):
            _add_tree(tar, path, f"trash/{entry['n']}/{entry['name']}")
        _add_bytes(tar, MANIFEST_SUM, hashlib.sha256(raw).hexdigest().encode())
    return manifest


# tar keeps times to the second (pax: a float, so to the microsecond), and neither
# tarfile nor the "tar" extraction filter keeps extended attributes or a file's
# setuid/setgid/sticky and group/other write bits.  A trashed file is the only copy of
# what the call removed, so each member carries its times in nanoseconds and its
# extended attributes in pax records of its own, and import puts them back.
PAX_TIMES = "PREIMAGE.times_ns"
PAX_XATTRS = "PREIMAGE.xattrs"


def _add_tree(tar: tarfile.TarFile, top: str, arcname: str) -> None:
    """``top`` and everything under it (never following a symlink), with exact metadata."""
    walk: list[tuple[str, str]] = [(top, arcname)]
    if os.path.isdir(top) and not os.path.islink(top):
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            rel = os.path.relpath(dirpath, top)
            base = arcname if rel == "." else f"{arcname}/{rel}"
            walk += [(os.path.join(dirpath, n), f"{base}/{n}") for n in dirnames + sorted(filenames)]
    for path, name in walk:
        info = tar.gettarinfo(path, name)
        st = os.lstat(path)
        info.pax_headers = {PAX_TIMES: f"{st.st_atime_ns} {st.st_mtime_ns}"}
        xattrs = _xattrs(path)
        if xattrs:
            info.pax_headers[PAX_XATTRS] = json.dumps(xattrs, sort_keys=True)
        if info.isreg():
            with open(path, "rb") as fh:
                tar.addfile(info, fh)
        else:
            tar.addfile(info)


def _xattrs(path: str) -> dict[str, str]:
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:   # a file system without extended attributes has none to keep
        return {}
    return {n: os.getxattr(path, n, follow_symlinks=False).hex() for n in names}


def _put_back(member: tarfile.TarInfo, path: Path) -> None:
    """The extended attributes (the mode bits the extraction filter cleared and the times
    come last, deepest first, once every member is in place)."""
    raw = member.pax_headers.get(PAX_XATTRS)
    if raw:
        try:
            for name, value in json.loads(raw).items():
                os.setxattr(path, name, bytes.fromhex(value), follow_symlinks=False)
        except OSError as exc:
            raise _bad(f"the extended attributes of the trashed {member.name} cannot be set "
                       f"here ({exc.strerror}); import into a store on a file system that "
                       "holds them") from exc
        except (ValueError, TypeError, AttributeError) as exc:
            raise _bad(f"the extended attributes of {member.name} do not read") from exc


def _times(member: tarfile.TarInfo) -> tuple[int, int]:
    raw = member.pax_headers.get(PAX_TIMES, "")
    parts = raw.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1])
    seconds = int(member.mtime * 1_000_000_000)   # an archive from before the record
    return seconds, seconds


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(time.time())
    tar.addfile(info, io.BytesIO(data))


@dataclass
class ImportResult:
    """What ``import`` added."""

    backup_id: str
    blobs: int
    new_bytes: int
    already_present: bool = False


def _bad(reason: str) -> StoreError:
    return StoreError(f"the archive is not a sound preimage backup: {reason}; nothing was imported")


def import_backup(store: Store, source: IO[bytes]) -> ImportResult:
    """Read an archive written by :func:`export_backup` into ``store`` (see the module
    docstring); raise :class:`StoreError` naming what is wrong, adding nothing."""
    dctx = zstandard.ZstdDecompressor()
    try:
        reader = dctx.stream_reader(source, read_across_frames=True)
        tar = tarfile.open(fileobj=reader, mode="r|")  # noqa: SIM115 - closed below
    except (tarfile.TarError, zstandard.ZstdError) as exc:
        raise _bad(f"not a zstd-compressed tar ({exc})") from exc
    try:
        return _read(store, tar)
    except (tarfile.TarError, zstandard.ZstdError, EOFError) as exc:
        raise _bad(f"it is truncated or damaged ({exc})") from exc
    finally:
        tar.close()


def _read(store: Store, tar: tarfile.TarFile) -> ImportResult:
    first = tar.next()
    if first is None or first.name != MANIFEST or not first.isfile():
        raise _bad("it does not start with its manifest")
    fh = tar.extractfile(first)
    raw = fh.read() if fh else b""
    try:
        manifest = json.loads(raw)
        backup = manifest["backup"]
        snapshots = manifest["snapshots"]
        if manifest.get("kind") != KIND:
            raise ValueError("kind")
    except (ValueError, KeyError, TypeError) as exc:
        raise _bad("its manifest does not read") from exc
    if int(manifest.get("store_format", 0)) > FORMAT:
        raise UsageError(
            f"the archive was written by a newer preimage (store format "
            f"{manifest['store_format']}); upgrade preimage to import it"
        )
    _check_manifest(manifest)
    backup_id = str(backup["id"])
    try:
        existing = store.catalog.get(backup_id)
    except PreimageError:
        existing = None
    if existing is not None and existing.id == backup_id:
        return ImportResult(backup_id, 0, 0, already_present=True)
    wanted = {d for s in snapshots for d in s["refs"]} | {s["digest"] for s in snapshots}
    got: set[str] = set()
    new_bytes = 0
    summed = False
    trash_dir = store.trash_path(backup_id) if manifest.get("trash") else None
    trash_entries: list[tuple[str, str]] = []
    trash_times: list[tuple[tarfile.TarInfo, Path]] = []
    with store.catalog.lease(backup_id):
        store.catalog.add_backup(
            backup_id, label=backup.get("label", ""), kind=backup.get("kind", "capture"),
            tier=backup.get("tier", "import"), tool_call=backup.get("tool_call"),
            session=backup.get("session"), parent_id=backup.get("parent_id"),
            created_at=float(backup.get("created_at") or time.time()),
        )
        try:
            for member in tar:
                if member.name == MANIFEST_SUM:
                    data = tar.extractfile(member)
                    if data is None or data.read().decode().strip() != hashlib.sha256(raw).hexdigest():
                        raise _bad("its manifest does not match its checksum")
                    summed = True
                elif member.name.startswith("blobs/") and member.isfile():
                    name = member.name[len("blobs/"):]
                    data = tar.extractfile(member)
                    if data is None:
                        raise _bad(f"blob {name[:16]}… is not a file")
                    before = store.blobs.bytes_written
                    digest = store.blobs.put_chunks(_read_chunks(data))
                    if digest != name:
                        raise _bad(f"blob {name[:16]}… does not hash to its name")
                    new_bytes += store.blobs.bytes_written - before
                    got.add(digest)
                elif member.name.startswith("trash/") and trash_dir is not None:
                    _extract_trash(tar, member, trash_dir, manifest["trash"], trash_entries,
                                   trash_times)
            for member, path in reversed(trash_times):   # a directory after its entries
                if not member.issym():   # after a second name's extraction reset it
                    os.chmod(path, member.mode & 0o7777)
                os.utime(path, ns=_times(member), follow_symlinks=False)
            if not summed:
                raise _bad("it ends before its checksum (truncated)")
            missing = wanted - got
            if missing:
                raise _bad(f"{len(missing)} referenced blob(s) are not in it")
            rows = [SnapshotRow(backup_id, int(s["idx"]), str(s["connector"]),
                                str(s["target"]), str(s["digest"]), int(s["items"]))
                    for s in snapshots]
            for row in rows:   # every document, before the backup is entered
                _check_document(store, row)
            store.blobs.flush()   # the blobs durable and indexed before anything names them
            for row, s in zip(rows, snapshots, strict=True):
                store.catalog.add_snapshot(row, s["refs"])
            for original, stored_at in trash_entries:
                store.catalog.add_trash(backup_id, original, stored_at)
        except BaseException:
            store.catalog.finish_backup(backup_id, status="failed", stored_bytes=new_bytes,
                                        logical_bytes=0, seconds=0)
            store.catalog.forget([backup_id])
            if trash_dir is not None:   # the backup was not there before: its trash is ours
                shutil.rmtree(trash_dir, ignore_errors=True)
            raise
        store.catalog.finish_backup(
            backup_id, status="complete", stored_bytes=new_bytes,
            logical_bytes=int(backup.get("logical_bytes") or 0),
            seconds=float(backup.get("seconds") or 0), snapshots=len(snapshots),
        )
    return ImportResult(backup_id, len(got), new_bytes)


_DIGEST = re.compile(r"[0-9a-f]{64}")


def _check_manifest(manifest: dict[str, Any]) -> None:
    """Everything the manifest names, checked before anything is written: the IDs name
    files and lock files, the digests blob files, the trash entries paths."""
    backup, snapshots, trash = manifest["backup"], manifest["snapshots"], manifest.get("trash")
    if not isinstance(backup, dict) or not is_backup_id(backup.get("id")):
        raise _bad(f"its backup ID {str(backup.get('id') if isinstance(backup, dict) else '')[:80]!r} "
                   "is not a backup ID")
    if backup.get("parent_id") is not None and not is_backup_id(backup["parent_id"]):
        raise _bad("its parent backup ID is not a backup ID")
    if not isinstance(snapshots, list) or not isinstance(trash, (list, type(None))):
        raise _bad("its manifest does not read")
    for n, s in enumerate(snapshots):
        ok = (isinstance(s, dict) and s.get("idx") == n and isinstance(s.get("connector"), str)
              and isinstance(s.get("target"), str) and isinstance(s.get("items"), int)
              and isinstance(s.get("digest"), str) and _DIGEST.fullmatch(s["digest"])
              and isinstance(s.get("refs"), list)
              and all(isinstance(d, str) and _DIGEST.fullmatch(d) for d in s["refs"]))
        if not ok:
            raise _bad(f"snapshot {n} of its manifest does not read")
    for e in trash or []:
        original = e.get("original") if isinstance(e, dict) else None
        if not (isinstance(e, dict) and isinstance(e.get("n"), int)
                and isinstance(original, str) and "\x00" not in original
                and original.startswith("/") and os.path.normpath(original) == original
                and original != "/"):
            raise _bad("a trash entry of its manifest is not an absolute path")


def _check_document(store: Store, row: SnapshotRow) -> None:
    """Snapshot document ``row`` reads as its connector's schema, names its target, and —
    for a connector that checks its documents — would not be refused by a restore."""
    from preimage.interface.registry import get_connector
    from preimage.store.snapshots import load_snapshot_row

    try:
        snap = load_snapshot_row(store, row)
        check = getattr(get_connector(row.connector), "check_snapshot", None)
        if check is not None:
            check(snap)
    except PreimageError as exc:
        raise _bad(f"the snapshot of {row.target} is refused ({exc})") from exc


def _read_chunks(fh: IO[bytes]) -> Iterator[bytes]:
    while chunk := fh.read(1 << 20):
        yield chunk


def _extract_trash(tar: tarfile.TarFile, member: tarfile.TarInfo, trash_dir: Path,
                   entries: list[dict[str, Any]], out: list[tuple[str, str]],
                   placed: list[tuple[tarfile.TarInfo, Path]]) -> None:
    parts = member.name.split("/")
    if len(parts) < 3 or not parts[1].isdigit() or ".." in parts:
        raise _bad(f"unexpected member {member.name}")
    entry = next((e for e in entries if e["n"] == int(parts[1])), None)
    if entry is None:
        raise _bad(f"unexpected member {member.name}")
    dest = trash_dir / parts[1]
    dest.mkdir(mode=0o700, exist_ok=True)
    member.name = "/".join(parts[2:])
    if member.islnk():   # a second name of a file archived earlier in the same entry
        target = member.linkname.split("/")
        if len(target) < 3 or target[:2] != parts[:2] or ".." in target:
            raise _bad(f"member {member.name} links outside its trash entry")
        member.linkname = "/".join(target[2:])
    tar.extract(member, dest, filter="tar")
    path = dest / member.name
    if member.isfile() or member.isdir() or member.issym():   # the filter let it through
        _put_back(member, path)
        placed.append((member, path))
    if len(parts) == 3:
        out.append((entry["original"], str(dest / parts[2])))
