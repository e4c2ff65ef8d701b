"""A backup being read is never forgotten or pruned: not by the quota a restore's own undo
backup triggers, not by a hook's capture meanwhile, not by ``forget ID --prune``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

import preimage
from preimage import Store
from preimage.store import quota as store_quota
from preimage.store.prune import forget, prune
from preimage.store.retention import RetentionPolicy


def _tree(root: Path, n: int, size: int, seed: str) -> dict[str, bytes]:
    root.mkdir(parents=True, exist_ok=True)
    files = {}
    for i in range(n):
        data = seed.encode() + os.urandom(size)
        (root / f"f{i:03}").write_bytes(data)
        files[f"f{i:03}"] = data
    return files


def _read(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir())}


@dataclass
class Stopped:
    """A restore held mid-write: its process, and once let go its exit code and stderr."""

    proc: subprocess.Popen[str]
    returncode: int | None = None
    stderr: str = ""


@contextmanager
def _stopped_restore(home: Path, backup_id: str, at: int = 2) -> Iterator[Stopped]:
    """``preimage restore`` in its own process, stopped (SIGSTOP) at its ``at``-th file
    write — holding everything a restore holds — and let go at the end of the block."""
    env = {**os.environ, "PREIMAGE_HOME": str(home), "PREIMAGE_SERVICE": "off",
           "PREIMAGE_CRASH_AT": f"restore-write:{at}:stop"}
    proc = subprocess.Popen([sys.executable, "-m", "preimage", "restore", backup_id],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stopped = Stopped(proc)
    try:
        _pid, status = os.waitpid(proc.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), "the restore did not reach its write"
        yield stopped
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        _out, stopped.stderr = proc.communicate(timeout=300)
        stopped.returncode = proc.returncode


def test_a_restore_whose_undo_backup_crosses_the_quota_keeps_the_backup_it_restores(
    tmp_path: Path, store: Store
) -> None:
    """The quota applied after a restore's undo capture forgets neither the restored backup nor the undo."""
    root = tmp_path / "t"
    original = _tree(root, 4, 4000, "a")
    backup = preimage.capture([f"file://{root}"], store=store)
    store_quota.save(store, store_quota.Quota(max_size=20_000,
                                              policy=RetentionPolicy(keep_last=1)))
    _tree(root, 4, 4000, "b")   # the undo backup adds as much again: over the cap
    result = preimage.restore(backup.id, store=store)
    assert _read(root) == original
    ids = {r.id for r in store.catalog.list_backups(None)}
    assert {backup.id, result.undo_backup_id} <= ids
    prune(store)
    preimage.restore(result.undo_backup_id or "", store=store)
    assert _read(root) != original


def test_forget_prune_and_a_hook_capture_during_a_restore_lose_nothing(
    tmp_path: Path, home: Path, store: Store, cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    """While a restore is mid-write: forget by name is refused, the quota and a policy keep the backup, prune keeps its blobs."""
    root = tmp_path / "t"
    original = _tree(root, 6, 3000, "a")
    backup = preimage.capture([f"file://{root}"], store=store)
    _tree(root, 6, 3000, "b")
    other = tmp_path / "other"
    with _stopped_restore(home, backup.id) as proc:
        refused = cli("forget", backup.id, "--prune")
        assert refused.returncode != 0 and "being read" in refused.stderr
        assert "Traceback" not in refused.stderr
        report = forget(store, policy=RetentionPolicy(keep_last=1))
        assert backup.id in report.in_use
        assert backup.id not in {r.id for r in report.forgotten}
        # a hook's capture that crosses the quota
        store_quota.save(store, store_quota.Quota(max_size=1, policy=RetentionPolicy(keep_last=1)))
        _tree(other, 2, 3000, "c")
        notes = preimage.capture([f"file://{other}"], store=store).notes
        assert any("reading them" in n for n in notes)
        prune(store)
    assert proc.returncode == 0, proc.stderr
    assert _read(root) == original
    assert backup.id in {r.id for r in store.catalog.list_backups(None)}


def test_a_forgotten_backup_cannot_be_pinned_half(store: Store, tmp_path: Path) -> None:
    """A reader that pins a backup after it was forgotten is told it is not there."""
    root = tmp_path / "t"
    _tree(root, 1, 100, "a")
    backup = preimage.capture([f"file://{root}"], store=store)
    forget(store, [backup.id])
    with pytest.raises(preimage.BackupNotFoundError):
        preimage.restore(backup.id, store=store)


def test_restore_against_concurrent_forget_prune_quota_and_hook_calls(
    tmp_path: Path, home: Path, store: Store
) -> None:
    """Fault injection: restores race forget, prune, quota and captures; each restores whole or writes nothing."""
    root = tmp_path / "t"
    store_quota.save(store, store_quota.Quota(max_size=50_000,
                                              policy=RetentionPolicy(keep_last=1)))
    stop = threading.Event()
    current: list[str] = []
    errors: list[BaseException] = []

    def churn() -> None:
        n = 0
        with Store(home) as st:
            while not stop.is_set():
                n += 1
                try:
                    side = tmp_path / f"hook{n % 3}"
                    _tree(side, 3, 3000, str(n))
                    preimage.capture([f"file://{side}"], store=st)   # applies the quota
                    forget(st, policy=RetentionPolicy(keep_last=1))
                    if current:
                        forget(st, [current[-1]])
                    prune(st, wait=False)
                except preimage.PreimageError as exc:
                    if not any(w in str(exc) for w in ("busy", "being read", "no backup",
                                                        "not found", "running")):
                        errors.append(exc)
                except BaseException as exc:   # reported below, in the test's thread
                    errors.append(exc)

    worker = threading.Thread(target=churn)
    worker.start()
    outcomes = []
    try:
        env = {**os.environ, "PREIMAGE_HOME": str(home), "PREIMAGE_SERVICE": "off"}
        for round_ in range(4):
            original = _tree(root, 30, 2000, f"a{round_}")
            backup = preimage.capture([f"file://{root}"], store=store)
            current.append(backup.id)
            changed = _tree(root, 30, 2000, f"x{round_}")
            res = subprocess.run([sys.executable, "-m", "preimage", "restore", backup.id],
                                 env=env, capture_output=True, text=True, timeout=300)
            if res.returncode == 0:
                assert _read(root) == original
            else:   # forgotten before the restore pinned it: refused whole, nothing written
                assert "no backup" in res.stderr.lower() or "not found" in res.stderr.lower(), \
                    res.stderr
                assert _read(root) == changed
            outcomes.append(res.returncode)
    finally:
        stop.set()
        worker.join(timeout=120)
    assert not errors, errors


def test_a_blob_lost_while_a_restore_writes_is_not_reported_as_nothing_written(
    tmp_path: Path, home: Path, store: Store
) -> None:
    """A blob deleted from disk mid-restore (no pin can stop that): the error names the undo backup, never 'nothing was written'."""
    root = tmp_path / "t"
    _tree(root, 6, 3000, "a")
    backup = preimage.capture([f"file://{root}"], store=store)
    _tree(root, 6, 3000, "b")
    with _stopped_restore(home, backup.id) as proc:
        for digest in store.catalog.refs(backup.id):
            packed = store.blobs.packs.locate(digest)
            path = store.blobs.path(digest)
            if path.exists() and path.stat().st_size > 2000:   # file contents, not the document
                path.unlink()
                if packed is not None and packed.pack is not None:
                    # the restore may have looked it up in its pack already: gone there too
                    with open(store.blobs.packs.pack_path(packed.pack), "r+b") as fh:
                        fh.seek(packed.offset)
                        fh.write(bytes(packed.length))
    assert proc.returncode != 0
    err = proc.stderr
    assert "nothing was written" not in err and "undo backup" in err, err
    assert "Traceback" not in err
