"""Crafted archives and snapshot documents: import checks the whole archive before it
enters anything, and a restore refuses entries that do not form a tree before it writes."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard

import preimage
from preimage import Store
from preimage.store.archive import export_backup, import_backup


def _export(store: Store, backup_id: str) -> dict[str, bytes]:
    """The members of an exported archive, by name, in order."""
    buf = io.BytesIO()
    export_backup(store, backup_id, buf)
    raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(buf.getvalue())).read()
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]


def _archive(members: dict[str, bytes]) -> io.BytesIO:
    """An archive of ``members``, the manifest's checksum recomputed (a crafted, not a damaged, one)."""
    members = dict(members)
    members["preimage-backup.sha256"] = hashlib.sha256(
        members["preimage-backup.json"]).hexdigest().encode()
    members["preimage-backup.sha256"] = members.pop("preimage-backup.sha256")   # last
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return io.BytesIO(zstandard.ZstdCompressor().compress(raw.getvalue()))


def _crafted(store: Store, backup_id: str,
             edit: Callable[[dict[str, Any], dict[str, Any]], None]) -> io.BytesIO:
    """The export of ``backup_id`` with its manifest and first snapshot document edited by
    ``edit(manifest, document)``; the document is stored under its new digest."""
    members = _export(store, backup_id)
    manifest = json.loads(members["preimage-backup.json"])
    snap = manifest["snapshots"][0]
    document = json.loads(members[f"blobs/{snap['digest']}"])
    edit(manifest, document)
    data = json.dumps(document).encode()
    digest = hashlib.sha256(data).hexdigest()
    snap["refs"] = [d for d in snap["refs"] if d != snap["digest"]] + [digest]
    snap["digest"] = digest
    members[f"blobs/{digest}"] = data
    members["preimage-backup.json"] = json.dumps(manifest).encode()
    return _archive(members)


@pytest.fixture
def source(tmp_path: Path) -> tuple[Store, str, Path]:
    """A store holding one backup of a small tree: the store, the backup, the tree."""
    root = tmp_path / "t"
    (root / "a").mkdir(parents=True)
    (root / "a" / "b").write_text("b\n")
    (root / "keep").write_text("keep\n")
    st = Store(tmp_path / "source")
    backup = preimage.capture([f"file://{root}"], store=st)
    return st, backup.id, root


@pytest.mark.parametrize("bad_id", ["../../escaped", "a/b", "", "ID WITH SPACE", "x" * 200])
def test_an_archive_with_a_crafted_backup_id_adds_nothing_anywhere(
    source: tuple[Store, str, Path], store: Store, tmp_path: Path, bad_id: str
) -> None:
    """An ID that is not a backup ID is refused before anything is written, in the store or outside it."""
    src, backup_id, _root = source

    def edit(manifest: dict[str, Any], _doc: dict[str, Any]) -> None:
        manifest["backup"]["id"] = bad_id
        manifest["trash"] = [{"n": 0, "original": "/tmp/x", "name": "0"}]

    archive = _crafted(src, backup_id, edit)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(preimage.StoreError, match="nothing was imported"):
        import_backup(store, archive)
    assert store.catalog.count() == 0
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")
                   if "store/blobs" not in str(p.relative_to(tmp_path)))
    assert [p for p in after if p not in before and not str(p).startswith("store")] == []
    assert not (tmp_path / "escaped").exists() and not (store.home.parent / "escaped").exists()


@pytest.mark.parametrize("kind", ["dot-as-file", "symlink-then-write"])
def test_a_snapshot_whose_entries_do_not_form_a_tree_is_refused_before_anything_is_written(
    source: tuple[Store, str, Path], store: Store, tmp_path: Path, kind: str
) -> None:
    """An item '.' typed as a file, or an entry beneath one the snapshot makes a symlink: import refuses it, restore writes nothing."""
    src, backup_id, root = source
    (tmp_path / "elsewhere").mkdir()

    def edit(_manifest: dict[str, Any], doc: dict[str, Any]) -> None:
        for item in doc["items"]:
            if kind == "dot-as-file" and item["path"] == ".":
                keep = next(i for i in doc["items"] if i["path"] == "keep")
                item.update(type="file", digest=keep["digest"], size=keep["size"])
            if kind == "symlink-then-write" and item["path"] == "a":
                item.update(type="symlink", link_target=str(tmp_path / "elsewhere"))

    archive = _crafted(src, backup_id, edit)
    with pytest.raises(preimage.StoreError, match="nothing was imported"):
        import_backup(store, archive)
    assert store.catalog.count() == 0
    # the same document reaching a restore another way is refused before the first write
    (root / "a" / "b").write_text("changed\n")
    snap = preimage.capture([f"file://{root}"], store=src).snapshots[0]
    doc = json.loads(snap.model_dump_json())
    edit({}, doc)
    crafted = type(snap).model_validate(doc)
    from preimage.interface.registry import get_connector
    from preimage.restoration import RestorePolicy

    with pytest.raises(preimage.UnsafePathError):
        get_connector("file").restore(crafted, src.blobs, policy=RestorePolicy())
    assert root.is_dir() and not (root / "a").is_symlink()
    assert (root / "a" / "b").read_text() == "changed\n"
    assert os.listdir(tmp_path / "elsewhere") == []


def test_a_trash_member_linking_outside_its_entry_is_refused(
    source: tuple[Store, str, Path], store: Store, tmp_path: Path
) -> None:
    """A hard link in a trash entry that names a file outside that entry (another entry,
    or a path climbing out) is refused and nothing is imported."""
    src, backup_id, _root = source
    members = _export(src, backup_id)
    manifest = json.loads(members["preimage-backup.json"])
    manifest["trash"] = [{"n": 0, "original": "/tmp/x", "name": "x"},
                         {"n": 1, "original": "/tmp/y", "name": "y"}]
    members["preimage-backup.json"] = json.dumps(manifest).encode()
    members["preimage-backup.sha256"] = hashlib.sha256(
        members["preimage-backup.json"]).hexdigest().encode()
    for linkname in ("trash/0/x", "trash/1/../0/x"):
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name, data in members.items():
                if name == "preimage-backup.sha256":
                    info = tarfile.TarInfo("trash/0/x")
                    info.size = 2
                    tar.addfile(info, io.BytesIO(b"x\n"))
                    link = tarfile.TarInfo("trash/1/y")
                    link.type, link.linkname = tarfile.LNKTYPE, linkname
                    tar.addfile(link)
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        archive = io.BytesIO(zstandard.ZstdCompressor().compress(raw.getvalue()))
        with pytest.raises(preimage.StoreError, match="nothing was imported"):
            import_backup(store, archive)
        assert store.catalog.count() == 0
        assert not list(store.home.glob("trash/*/*"))
