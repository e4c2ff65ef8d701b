"""forget, prune, check, stats, quotas, format versions, export/import."""

from __future__ import annotations

import io
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import preimage
from preimage import Store
from preimage.store.archive import export_backup, import_backup
from preimage.store.check import check
from preimage.store.format import FORMAT
from preimage.store.prune import forget, prune
from preimage.store.retention import RetentionPolicy
from preimage.store.stats import stats


def _files(root: Path, tag: str, n: int = 4) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"{tag}-{i}").write_bytes(f"{tag} {i}\n".encode() * 200)
    return root


def _on_disk(store: Store) -> set[str]:
    return set(store.blobs.digests())


def test_forget_and_prune_reclaim_every_unreferenced_blob(tmp_path: Path, store: Store) -> None:
    """After forgetting a backup, prune leaves exactly the blobs the rest reference."""
    root = _files(tmp_path / "t", "a")
    first = preimage.capture([f"file://{root}"], store=store)
    _files(root, "b")
    second = preimage.capture([f"file://{root}"], store=store)
    report = forget(store, [first.id])
    assert [r.id for r in report.forgotten] == [first.id]
    pruned = prune(store)
    assert pruned.deleted_blobs > 0 and pruned.freed_bytes > 0
    assert _on_disk(store) == store.catalog.refs(second.id)
    assert stats(store)["unreferenced_bytes"] == 0
    shutil.rmtree(root)
    preimage.restore(second.id, store=store)
    assert sorted(p.name for p in root.iterdir()) == [f"{t}-{i}" for t in "ab" for i in range(4)]


def test_prune_reclaims_failed_and_abandoned_backups_and_partial_writes(
    tmp_path: Path, store: Store
) -> None:
    """Blobs of failed/abandoned backups, partial blobs and scratch areas go; trash of kept ones stays."""
    root = _files(tmp_path / "t", "a")
    kept = preimage.capture([f"file://{root}"], store=store)
    lost = _files(tmp_path / "lost", "z")
    failed = preimage.capture([f"file://{lost}"], store=store)
    store.catalog.set_status(failed.id, "failed")
    # an open backup no process holds: a killed capture
    store.catalog.add_backup("0000000000zzz")
    (store.home / "blobs" / "tmp" / "blob-1-dead").write_bytes(b"half a blob")
    scratch = store.home / "scratch" / "live-dead"
    scratch.mkdir(parents=True)
    (scratch / ".lock").touch()   # a killed `diff` leaves its (unheld) lock file
    (scratch / "junk").write_bytes(b"x" * 100)
    (store.trash_path(kept.id) / "kept-file").write_text("rm'd by the agent\n")
    (store.trash_path("0000000000aaa") / "forgotten-file").write_text("old\n")
    report = prune(store)
    assert report.abandoned == ["0000000000zzz"]
    assert store.catalog.get("0000000000zzz").status == "abandoned"
    assert _on_disk(store) == store.catalog.refs(kept.id)
    assert not (store.home / "blobs" / "tmp" / "blob-1-dead").exists()
    assert not scratch.exists()
    assert (store.trash_path(kept.id) / "kept-file").exists()
    assert not (store.home / "trash" / "0000000000aaa").exists()


def test_prune_keeps_a_blob_a_running_capture_reused(tmp_path: Path, store: Store) -> None:
    """A capture that found a blob before prune hid it keeps it: the sweep waits for it."""
    root = _files(tmp_path / "t", "a")
    old = preimage.capture([f"file://{root}"], store=store)
    digest = next(e.digest for e in old.snapshots[0].items if e.path == "a-0") or ""
    forget(store, [old.id])
    # a capture is running and has just found `digest` in the store (holds its lease)
    with store.catalog.lease("0000000000run"):
        store.catalog.add_backup("0000000000run")
        assert store.blobs.exists(digest)
        report = prune(store, wait=False)
        assert report.pending, "the sweep must wait for the running capture"
        assert not store.blobs.path(digest).exists()   # hidden, not deleted
        store.catalog.add_snapshot(
            preimage.store.backend.SnapshotRow("0000000000run", 0, "file", "file:///x", digest, 1),
            [digest],
        )
        store.catalog.finish_backup("0000000000run", status="complete", stored_bytes=0,
                                    logical_bytes=0, seconds=0, snapshots=1)
    report = prune(store)
    assert report.kept_back >= 1
    store.blobs.verify(digest)


def test_a_capture_that_asks_for_a_hidden_blob_brings_it_back(tmp_path: Path, store: Store) -> None:
    """exists() on a blob hidden by an unfinished prune renames it back."""
    digest = store.blobs.put_bytes(b"garbage for now" * 100)
    with store.catalog.lease("0000000000run"):
        store.catalog.add_backup("0000000000run")
        prune(store, wait=False)
        assert not store.blobs.path(digest).exists()
        assert store.blobs.exists(digest)
        assert store.blobs.path(digest).exists()


def test_retention_policies(tmp_path: Path, store: Store) -> None:
    """keep-last, keep-within and per-session pick what restic's rules pick; dry-run changes nothing."""
    root = _files(tmp_path / "t", "a", n=1)
    ids = []
    for i in range(6):
        b = preimage.capture([f"file://{root}"], store=store, session=f"s{i % 2}")
        ids.append(b.id)
    dry = forget(store, policy=RetentionPolicy(keep_last=2), dry_run=True)
    assert {r.id for r in dry.forgotten} == set(ids[:4])
    assert store.catalog.count() == 6
    per = forget(store, policy=RetentionPolicy(keep_last=1, per_session=True), dry_run=True)
    assert {r.id for r in per.forgotten} == set(ids[:4])
    with store.catalog._tx() as db:  # type: ignore[attr-defined]
        for i, b in enumerate(ids):
            db.execute("UPDATE backups SET created_at=? WHERE id=?", (1_000_000 + i * 3600, b))
    within = forget(store, policy=RetentionPolicy(keep_within=__import__("datetime").timedelta(hours=2)))
    assert {r.id for r in within.forgotten} == set(ids[:3])
    assert store.catalog.count() == 3
    with pytest.raises(preimage.UsageError, match="keep"):
        forget(store, policy=RetentionPolicy())


def test_forget_refuses_a_running_capture(store: Store) -> None:
    """A backup still being captured cannot be forgotten by name."""
    with store.catalog.lease("0000000000run"):
        store.catalog.add_backup("0000000000run")
        with pytest.raises(preimage.UsageError, match="still being captured"):
            forget(store, ["0000000000run"])


def test_stats_counts_dedup_per_target_and_session(tmp_path: Path, store: Store) -> None:
    """Two captures of an unchanged tree: restore size doubles, stored bytes do not."""
    root = tmp_path / "t"
    root.mkdir()
    for i in range(4):
        (root / f"f{i}").write_bytes(os.urandom(50_000))
    preimage.capture([f"file://{root}"], store=store, session="s1")
    preimage.capture([f"file://{root}"], store=store, session="s2")
    doc = stats(store)
    assert doc["backups"] == 2
    assert doc["dedup_ratio"] > 1.8
    assert doc["restore_size"] > doc["stored_bytes"]
    assert set(doc["per_session"]) == {"s1", "s2"}
    assert doc["per_target"][f"file://{root}"]["backups"] == 2


def test_check_is_clean_on_a_sound_store_and_names_an_abandoned_capture(
    tmp_path: Path, store: Store
) -> None:
    """A sound store checks clean with --read-data; an open backup with no process is named."""
    root = _files(tmp_path / "t", "a")
    preimage.capture([f"file://{root}"], store=store)
    assert check(store, read_data=True).ok
    store.catalog.add_backup("0000000000zzz")
    report = check(store)
    assert not report.ok
    assert [p.subject for p in report.problems] == ["0000000000zzz"]
    assert check(store, repair=True).ok
    assert store.catalog.get("0000000000zzz").status == "abandoned"


def _format_one_store(home: Path, tree: Path) -> str:
    """A store as the first release wrote it: the v1 tables, no meta, no refs."""
    with Store(home) as st:
        backup = preimage.capture([f"file://{tree}"], store=st)
    db = sqlite3.connect(home / "catalog.sqlite")
    db.executescript(
        "DROP TABLE meta; DROP TABLE refs; DROP TABLE blob_sound; DROP TABLE blob_raw_size;"
        "DROP TABLE links;"
        "DROP INDEX snapshots_by_target_newest; DROP INDEX backups_by_parent;"
        "DROP INDEX backups_by_finish; CREATE INDEX snapshots_by_target ON snapshots(target);"
        "ALTER TABLE backups DROP COLUMN expected_snapshots;"
        "ALTER TABLE backups DROP COLUMN finished_at;"
    )
    db.close()
    return backup.id


def test_an_old_store_is_upgraded_and_a_newer_one_refused(tmp_path: Path) -> None:
    """Format 1 is upgraded on open (references recovered); a newer format is refused untouched."""
    home = tmp_path / "old-home"
    root = _files(tmp_path / "t", "a")
    backup_id = _format_one_store(home, root)
    with Store(home) as st:
        assert st.catalog.format_version() == FORMAT
        assert len(st.catalog.refs(backup_id)) == 5   # the document and four files
        assert check(st, read_data=True).ok
        assert st.catalog.latest_snapshot(f"file://{root}", "file") is not None
    with sqlite3.connect(home / "catalog.sqlite") as db:   # and the indexes a new one has
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    db.close()
    assert {"snapshots_by_target_newest", "backups_by_parent", "backups_by_finish"} <= names
    assert "snapshots_by_target" not in names
    db = sqlite3.connect(home / "catalog.sqlite")
    db.execute("UPDATE meta SET value='99' WHERE key='format'")
    db.commit()
    db.close()
    before = (home / "catalog.sqlite").read_bytes()
    with pytest.raises(preimage.StoreFormatError, match="format 99"):
        Store(home)
    assert (home / "catalog.sqlite").read_bytes() == before
    env = {**os.environ, "PREIMAGE_HOME": str(home)}
    res = subprocess.run([sys.executable, "-m", "preimage", "list"], env=env,
                         capture_output=True, text=True)
    assert res.returncode == 2 and "upgrade preimage" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_export_and_import_move_a_backup_between_stores(tmp_path: Path, store: Store) -> None:
    """A backup exported from one store and imported into another restores there."""
    root = _files(tmp_path / "t", "a")
    backup = preimage.capture([f"file://{root}"], store=store)
    (store.trash_path(backup.id) / "gone.txt").write_text("moved aside\n")
    store.catalog.add_trash(backup.id, str(root / "gone.txt"),
                            str(store.trash_path(backup.id) / "gone.txt"))
    buf = io.BytesIO()
    export_backup(store, backup.id, buf)
    archive = buf.getvalue()
    with Store(tmp_path / "other-home") as other:
        result = import_backup(other, io.BytesIO(archive))
        assert result.backup_id == backup.id
        with Store(tmp_path / "other-home") as meanwhile:   # another process, before close
            assert check(meanwhile, read_data=True).ok
        assert check(other, read_data=True).ok
        assert import_backup(other, io.BytesIO(archive)).already_present
        [entry] = other.catalog.trash()
        assert Path(entry.stored_at).read_text() == "moved aside\n"
        shutil.rmtree(root)
        preimage.restore(backup.id, store=other)
        assert (root / "a-0").exists()
    for damage in (archive[: len(archive) // 2], archive[:-40] + b"\0" * 40):
        with Store(tmp_path / f"bad-{len(damage)}") as bad:
            with pytest.raises(preimage.StoreError, match="nothing was imported"):
                import_backup(bad, io.BytesIO(damage))
            assert bad.catalog.count() == 0


def test_quota_over_the_cap_applies_the_retention_policy_and_says_so(
    tmp_path: Path, store: Store
) -> None:
    """The capture that crosses the size cap forgets by the policy and reports it."""
    from preimage.store import quota as _quota

    _quota.save(store, _quota.Quota(max_size=30_000, policy=RetentionPolicy(keep_last=1)))
    notes: list[str] = []
    for i in range(4):
        root = tmp_path / f"t{i}"
        root.mkdir()
        (root / "data").write_bytes(os.urandom(12_000))
        notes += preimage.capture([f"file://{root}"], store=store).notes
    assert any("over its" in n and "retention policy" in n for n in notes)
    assert store.catalog.count() < 4
    assert _quota.measure(store) <= 30_000


def test_a_killed_capture_leaves_nothing_prune_cannot_reclaim(tmp_path: Path, home: Path) -> None:
    """kill -9 in the middle of writing a blob: the backup is marked abandoned and its bytes reclaimed."""
    root = _files(tmp_path / "t", "a", n=8)
    env = {**os.environ, "PREIMAGE_HOME": str(home), "PREIMAGE_CRASH_AT": "blob:5"}
    res = subprocess.run([sys.executable, "-m", "preimage", "capture", f"file://{root}"],
                         env=env, capture_output=True, text=True)
    assert res.returncode == -9
    with Store(home) as st:
        [row] = st.catalog.list_backups()
        assert row.status == "open" and not st.catalog.lease_held(row.id)
        assert st.blobs.leftovers(), "the killed writer's temp file is there"
        prune(st)
        assert st.catalog.get(row.id).status == "abandoned"
        assert not list((home / "blobs" / "tmp").iterdir())
        assert _on_disk(st) == set()


def test_a_killed_capture_does_not_look_like_a_running_one(store: Store) -> None:
    """An open backup nobody holds is listed and shown as abandoned; a running one as open."""
    from preimage.engine.backups import list_backups

    store.catalog.add_backup("0000000000dead")
    with store.catalog.lease("0000000000live"):
        store.catalog.add_backup("0000000000live")
        seen = {r.id: r.status for r in list_backups(store=store)}
        assert seen == {"0000000000dead": "abandoned", "0000000000live": "open"}
        assert preimage.show("0000000000dead", store=store).status == "abandoned"


def _meta(top: Path) -> dict[str, tuple[object, ...]]:
    out: dict[str, tuple[object, ...]] = {}
    for p in [top, *sorted(top.rglob("*"))]:
        st = p.lstat()
        xattrs = {} if p.is_symlink() else {n: os.getxattr(p, n) for n in os.listxattr(p)}
        link = os.readlink(p) if p.is_symlink() else None
        out[str(p.relative_to(top))] = (st.st_mode, st.st_mtime_ns, st.st_nlink, link,
                                        sorted(xattrs.items()))
    return out


def test_an_exported_trash_entry_comes_back_with_its_exact_metadata(
        tmp_path: Path, store: Store) -> None:
    """A trashed tree (the only copy of what a call removed) keeps through export and
    import its ns times, modes with setgid and group-write bits, extended attributes,
    hard links and symlinks."""
    root = _files(tmp_path / "t", "a")
    backup = preimage.capture([f"file://{root}"], store=store)
    gone = store.trash_path(backup.id) / "gone"
    (gone / "sub").mkdir(parents=True)
    (gone / "sub" / "data.bin").write_bytes(b"\0\1kept" * 100)
    os.link(gone / "sub" / "data.bin", gone / "twin.bin")
    (gone / "link").symlink_to("sub/data.bin")
    os.setxattr(gone / "sub" / "data.bin", "user.origin", b"agent\0run")
    os.chmod(gone / "sub" / "data.bin", 0o664)
    os.chmod(gone / "sub", 0o2775)
    for n, p in enumerate([gone / "sub" / "data.bin", gone / "sub", gone]):
        os.utime(p, ns=(1_700_000_000_123_456_789 + n, 1_700_000_000_987_654_321 + n))
    before = _meta(gone)
    store.catalog.add_trash(backup.id, str(root / "gone"), str(gone))
    buf = io.BytesIO()
    export_backup(store, backup.id, buf)
    with Store(tmp_path / "other-home") as other:
        import_backup(other, io.BytesIO(buf.getvalue()))
        [entry] = other.catalog.trash()
        assert _meta(Path(entry.stored_at)) == before
