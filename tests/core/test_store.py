"""The blob store and catalog: dedup, verification, permissions, parallel writers."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from preimage import BlobCorruptError, BlobMissingError, Store


def test_blobs_are_deduplicated_and_compressed(store: Store) -> None:
    """The same bytes stored twice take space once, compressed."""
    data = b"row,value\n" * 10_000
    d1 = store.blobs.put_bytes(data)
    written = store.blobs.bytes_written
    d2 = store.blobs.put_bytes(data)
    assert d1 == d2
    assert store.blobs.bytes_written == written
    assert store.blobs.stored_size(d1) < len(data) / 10
    assert store.blobs.get_bytes(d1) == data


def test_a_corrupted_blob_is_detected_on_read(store: Store) -> None:
    """Flipping bytes in a blob makes reads fail with BlobCorruptError naming the path."""
    digest = store.blobs.put_bytes(b"precious" * 1000)
    path = store.blobs.path(digest)
    path.chmod(0o600)
    path.write_bytes(path.read_bytes()[:-3] + b"xyz")
    with pytest.raises(BlobCorruptError) as info:
        store.blobs.get_bytes(digest, backup_id="b1", path="/srv/key")
    assert "/srv/key" in str(info.value)
    assert "b1" in str(info.value)


def test_a_missing_blob_is_reported(store: Store) -> None:
    """A blob deleted from the store gives BlobMissingError."""
    digest = store.blobs.put_bytes(b"gone")
    store.blobs.path(digest).unlink()
    with pytest.raises(BlobMissingError):
        store.blobs.verify(digest)


def test_store_is_private(store: Store) -> None:
    """Store directories are 0700 and files 0600."""
    digest = store.blobs.put_bytes(b"secret")
    assert stat.S_IMODE(store.home.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.blobs.path(digest).parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.blobs.path(digest).stat().st_mode) == 0o600
    assert stat.S_IMODE((store.home / "catalog.sqlite").stat().st_mode) == 0o600


def test_parallel_captures_from_processes_keep_the_catalog_sound(
    tmp_path: Path, home: Path
) -> None:
    """Eight processes capturing at once all land complete in one sound catalog."""
    trees = []
    for i in range(8):
        t = tmp_path / f"tree{i}"
        (t / "sub").mkdir(parents=True)
        for j in range(30):
            (t / "sub" / f"f{j}").write_text(f"{i}-{j}\n" * 50)
        (t / "shared").write_text("same content in every tree\n" * 100)
        trees.append(t)
    env = {**os.environ, "PREIMAGE_HOME": str(home)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "preimage", "capture", f"file://{t}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for t in trees
    ]
    ended = [p.communicate(timeout=300) for p in procs]   # all of them, before any assert
    ids = []
    for p, (out, errs) in zip(procs, ended, strict=True):
        assert p.returncode == 0, errs
        ids.append(out.strip())
    assert len(set(ids)) == 8
    db = sqlite3.connect(home / "catalog.sqlite")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = db.execute("SELECT id, status FROM backups").fetchall()
    assert sorted(r[0] for r in rows) == sorted(ids)
    assert {r[1] for r in rows} == {"complete"}


def test_unwritable_store_gives_a_clear_error(tmp_path: Path) -> None:
    """A store path that cannot be created says so and what to do."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    from preimage import StoreUnavailableError

    with pytest.raises(StoreUnavailableError, match="PREIMAGE_HOME"):
        Store(blocker / "home")


def test_a_damaged_blob_is_rewritten_by_the_next_capture_of_its_bytes(
    tmp_path: Path, store: Store
) -> None:
    """After a blob is damaged, capturing the same bytes again heals it: the new backup restores."""
    import shutil

    import preimage

    root = tmp_path / "t"
    root.mkdir()
    (root / "key").write_bytes(b"precious bytes\n" * 100)
    first = preimage.capture([f"file://{root}"], store=store)
    digest = next(e.digest for e in first.snapshots[0].items if e.path == "key")
    blob = store.blobs.path(digest or "")
    blob.write_bytes(blob.read_bytes()[:-5] + b"xxxxx")
    (root / "key").touch()   # a new mtime: the file is read again, its bytes are the same
    second = preimage.capture([f"file://{root}"], store=store)
    store.blobs.verify(digest or "")
    shutil.rmtree(root)
    preimage.restore(second.id, store=store)
    assert (root / "key").read_bytes() == b"precious bytes\n" * 100


def test_exists_does_not_vouch_for_a_damaged_blob(store: Store) -> None:
    """The dedup test answers False for a damaged blob, and put_bytes rewrites it."""
    data = b"same bytes" * 500
    digest = store.blobs.put_bytes(data)
    assert store.blobs.exists(digest)
    blob = store.blobs.path(digest)
    blob.write_bytes(b"\x28\xb5\x2f\xfd" + b"junk")
    assert not store.blobs.exists(digest)
    assert store.blobs.put_bytes(data) == digest
    assert store.blobs.get_bytes(digest) == data


def test_a_capture_finds_the_newest_snapshot_of_its_target_through_an_index(
        tmp_path: Path) -> None:
    """The newest complete snapshot of a target — what every capture reads first, to reuse
    the unchanged entries — is looked up through an index on (target, newest), not by
    sorting every snapshot the target ever had (which grew with a session's history); a
    catalog an earlier release made, with only its index on the target, gets the new one
    when it is opened, and the newest complete snapshot is still the one found."""
    import preimage

    tree = tmp_path / "t"
    tree.mkdir()
    ids = []
    with Store(tmp_path / "home") as first:
        for n in range(3):
            (tree / "f").write_text(f"{n}\n")
            ids.append(preimage.capture([f"file://{tree}"], store=first).id)
    catalog = tmp_path / "home" / "catalog.sqlite"
    with sqlite3.connect(catalog) as db:   # as an earlier release left it
        db.execute("DROP INDEX snapshots_by_target_newest")
        db.execute("CREATE INDEX snapshots_by_target ON snapshots(target)")
        db.execute("UPDATE backups SET status='abandoned' WHERE id=?", (ids[2],))
    db.close()
    with Store(tmp_path / "home") as store:
        row = store.catalog.latest_snapshot(f"file://{tree}", "file")
        assert row is not None and row.backup_id == ids[1]
    with sqlite3.connect(catalog) as db:
        plan = " ".join(str(r[3]) for r in db.execute(
            "EXPLAIN QUERY PLAN SELECT s.backup_id FROM snapshots s JOIN backups b"
            " ON b.id = s.backup_id WHERE s.target=? AND s.connector=? AND b.status='complete'"
            " ORDER BY s.backup_id DESC LIMIT 1", (f"file://{tree}", "file")))
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    db.close()
    assert "snapshots_by_target_newest" in plan and "TEMP B-TREE" not in plan, plan
    assert "snapshots_by_target" not in names   # the old one, covered by the new, is gone


def test_finding_backups_by_kind_parent_session_and_range_reads_as_a_full_scan_would(
        tmp_path: Path) -> None:
    """The catalog's one-query look-ups (a call's post-call backup and trash moves by
    parent, a session's calls in a range, a call by its tool-use id — what `undo`,
    `restore` of a call and `log` use instead of reading every backup) give exactly what
    filtering every backup gives."""
    import random

    from preimage.store.backend import Catalog

    rng = random.Random(7)
    with Store(tmp_path / "home") as store:
        cat = store.catalog
        ids: list[str] = []
        for n in range(240):
            backup_id = f"06bq{n:09d}"
            parent = rng.choice(ids) if ids and rng.random() < 0.6 else None
            kind = rng.choice(["layer", "trash", "post-call", "pre-restore", "capture"])
            call = {"tool": "Bash", "tool_use_id": f"t{rng.randrange(30)}"} \
                if rng.random() < 0.7 else None
            cat.add_backup(backup_id, kind=kind, tool_call=call, parent_id=parent,
                           session=rng.choice(["s1", "s2", None]))
            cat.set_status(backup_id, rng.choice(["complete", "complete", "overlapped", "open"]))
            ids.append(backup_id)
        with sqlite3.connect(tmp_path / "home" / "catalog.sqlite") as db:   # not JSON
            db.execute("UPDATE backups SET tool_call='{nope' WHERE id=?", (ids[5],))
        db.close()
        every = Catalog.find_backups(cat)
        post_parent = next(r.parent_id for r in every
                           if r.kind == "post-call" and r.parent_id and r.status == "complete")
        trash_parent = next(r.parent_id for r in every if r.kind == "trash" and r.parent_id)
        queries = [
            {"kinds": ("post-call",), "parent_id": post_parent, "status": "complete"},
            {"kinds": ("trash",), "parent_id": trash_parent},
            {"kinds": ("layer", "trash"), "status": "complete", "session": "s1",
             "id_from": ids[40], "id_to": ids[200]},
            {"kinds": ("post-call",), "status": "complete", "limit": 3},
            {"id_from": ids[230]}, {"kinds": ()}, {},
        ]
        found = []
        for query in queries:
            fast = [r.id for r in cat.find_backups(**query)]
            assert fast == [r.id for r in Catalog.find_backups(cat, **query)], query
            found.append(len(fast))
        assert all(found[:5]) and found[5] == 0 and found[6] == len(ids), found
        named = 0
        for n in range(30):
            fast_row = cat.by_tool_use_id(f"t{n}", ("layer", "trash"))
            slow_row = Catalog.by_tool_use_id(cat, f"t{n}", ("layer", "trash"))
            assert (fast_row and fast_row.id) == (slow_row and slow_row.id), n
            named += fast_row is not None
        assert named > 20
