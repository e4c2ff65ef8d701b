"""Crash injection and corruption for the store, shared by the tests and benchmarks/bench_store.py.

**Crashes.** One trial kills one operation — capture, restore, forget or
prune — at a crash point chosen by a seeded generator (see
:mod:`preimage.interface.crash`: the process SIGKILLs itself the N-th time it passes
the point; no timing is involved), in a forked child, then checks what a user
relies on:

* no complete backup has a missing or corrupt blob (``check --read-data``
  finds nothing but the killed capture itself);
* the same operation run again finishes;
* after a killed restore, the re-run brings the tree back exactly and its
  undo backup describes the state the restore replaced.

**Corruption.** :func:`corrupt` makes one backup per fault, then flips,
truncates or deletes blobs and snapshot documents and edits or deletes
catalog rows, each fault on its own backup, and reports what it did so the
caller can check that ``check`` names every fault and that ``restore``
writes nothing.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import zstandard

import preimage
from preimage import Store
from preimage.interface import crash as _crash
from preimage.store.check import check
from preimage.store.prune import forget, prune
from preimage.store.retention import RetentionPolicy

POINTS = {
    "capture": ("blob", "pack-seal", "pack-index", "catalog"),
    "restore": ("restore-write", "restore-publish", "blob", "pack-seal", "pack-index",
                "catalog"),
    "forget": ("forget", "catalog"),
    "prune": ("prune-delete", "pack-seal", "pack-index", "catalog"),
}


def tree_state(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` with its bytes."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink() and not p.name.startswith(".preimage-tmp-")}


def make_tree(root: Path, rng: random.Random, n: int = 24) -> None:
    """A small tree with shared and unique content in two levels."""
    for i in range(n):
        sub = root / f"d{i % 3}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{i}").write_bytes(rng.randbytes(rng.randint(1, 3000)) if i % 4 else b"shared\n")


def _in_child(point: str, nth: int, work: Callable[[], object]) -> tuple[int, dict[str, int]]:
    """Run ``work`` in a forked child that dies at the ``nth`` pass of ``point``
    (``nth`` 0: never); return its wait status and how often it passed each point."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: its own store connection, its own crash plan
        os.close(read)
        code = 0
        try:
            _crash.arm(point, nth)
            work()
        except BaseException:
            code = 3
        finally:
            os.write(write, json.dumps(_crash.counts).encode())
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    return status, json.loads(data) if data else {}


@dataclass
class Trial:
    """What one crash trial did and found."""

    seed: int
    operation: str
    point: str = ""
    nth: int = 0
    passes: int = 0
    killed: bool = False
    problems: list[str] = field(default_factory=list)


def _sound(home: Path) -> list[str]:
    with Store(home) as st:
        report = check(st, read_data=True)
    return [f"{p.kind}: {p.message}" for p in report.problems if p.kind != "abandoned-capture"]


@dataclass
class _Scene:
    home: Path
    root: Path
    base: str
    damaged: dict[str, bytes]


def _scene(seed: int, operation: str, work_dir: Path) -> _Scene:
    """The trial's store and tree, the same bytes every time for one seed."""
    rng = random.Random(seed * 7919 + 1)
    shutil.rmtree(work_dir, ignore_errors=True)
    home, root = work_dir / "home", work_dir / "tree"
    make_tree(root, rng)
    with Store(home) as st:
        base = preimage.capture([f"file://{root}"], store=st)
        for i in range(2):
            (root / "d0" / f"new{i}").write_bytes(rng.randbytes(500))
            preimage.capture([f"file://{root}"], store=st)
        if operation == "prune":
            forget(st, policy=RetentionPolicy(keep_last=1))
    if operation == "restore":
        shutil.rmtree(root / "d1")
        (root / "d0" / "f0").write_bytes(b"damaged\n")
        (root / "d2" / "extra").write_bytes(b"created later\n")
    if operation == "capture":
        for i in range(6):
            (root / "d2" / f"fresh{i}").write_bytes(rng.randbytes(2000 + i))
    return _Scene(home, root, base.id, tree_state(root))


def crash_trial(seed: int, work_dir: Path) -> Trial:
    """One seeded crash trial in ``work_dir`` (created fresh); see the module docstring.

    The operation runs once only counting its crash points, then — on the
    same scene built again from the seed — is killed at a pass chosen among
    those it makes.
    """
    rng = random.Random(seed)
    operation = rng.choice(sorted(POINTS))
    trial = Trial(seed, operation)

    def op(scene: _Scene) -> object:
        with Store(scene.home) as st:
            if operation == "capture":
                return preimage.capture([f"file://{scene.root}"], store=st)
            if operation == "restore":
                return preimage.restore(scene.base, store=st)
            if operation == "forget":
                return forget(st, policy=RetentionPolicy(keep_last=1))
            return prune(st)

    scene = _scene(seed, operation, work_dir)
    _, passes = _in_child("", 0, lambda: op(scene))
    points = [p for p in POINTS[operation] if passes.get(p)]
    trial.point = rng.choice(points)
    trial.passes = passes[trial.point]
    trial.nth = rng.randint(1, trial.passes)
    for _attempt in range(3):
        scene = _scene(seed, operation, work_dir)
        status, seen = _in_child(trial.point, trial.nth, partial(op, scene))
        trial.killed = os.WIFSIGNALED(status)
        if trial.killed or seen.get(trial.point, 0) >= trial.nth:
            break
        # The same scene may pass a point fewer times (a blob verified at capture time
        # depends on the clock): kill at a pass this run does make.
        trial.passes = seen.get(trial.point, 0)
        if not trial.passes:
            break
        trial.nth = rng.randint(1, trial.passes)
    if not trial.killed:
        trial.problems.append(f"the operation was not killed (status {status})")
    trial.problems += _sound(scene.home)
    replaced = scene.damaged if trial.killed else tree_state(scene.root)
    result = op(scene)   # the same operation again, uninterrupted: it must finish
    trial.problems += _sound(scene.home)
    if operation == "restore":
        assert isinstance(result, preimage.RestoreResult)
        with Store(scene.home) as st:
            if tree_state(scene.root) != _snapshot_files(st, scene.base):
                trial.problems.append("the re-run restore did not bring the tree back")
            if _snapshot_files(st, result.undo_backup_id or "") != replaced:
                trial.problems.append("the undo backup does not describe the state it replaced")
    if operation == "prune":
        with Store(scene.home) as st:
            live = st.catalog.referenced(skip_statuses=("failed", "abandoned"))
            extra = set(st.blobs.digests()) - live
            if extra:
                trial.problems.append(f"{len(extra)} unreferenced blob(s) survive a finished prune")
    return trial


def _snapshot_files(st: Store, backup_id: str) -> dict[str, bytes]:
    from preimage.store.snapshots import load_snapshot_row

    snap = load_snapshot_row(st, st.catalog.get(backup_id).snapshots[0])
    return {e.path: st.blobs.get_bytes(e.digest) for e in snap.items
            if e.type == "file" and e.digest}


# ---------------------------------------------------------------- corruption
@dataclass
class Fault:
    """One injected fault: what was done, and the strings ``check`` must name it by."""

    kind: str
    backup_id: str
    names: list[str]
    data_fault: bool = True   # False: the backup's data is intact (a restore may proceed)


def _damaging_flip(data: bytes, raw: bool, rng: random.Random) -> bytes:
    """``data`` with one bit flipped where it changes what the blob decodes to.

    About one flip in 200 of a small zstd frame changes no decoded byte (the frame
    header's checksum and window bits, unused bits of the entropy tables): the
    blob's content is intact and still hashes to its name, so it is no fault and
    ``check`` rightly says nothing.  Such a flip is drawn again.
    """
    decoded = data if raw else _decoded(data)
    while True:
        at, bit = rng.randrange(len(data)), rng.randrange(8)
        flipped = data[:at] + bytes([data[at] ^ (1 << bit)]) + data[at + 1:]
        if raw or _decoded(flipped) != decoded:
            return flipped


def _decoded(frame: bytes) -> bytes | None:
    """What the store's reader makes of ``frame`` (None: it refuses it)."""
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(frame))
    try:
        return reader.read()
    except zstandard.ZstdError:
        return None


def corrupt(home: Path, trees: Path, n_faults: int, seed: int) -> list[Fault]:
    """Make ``n_faults`` backups in a new store at ``home`` and damage each one once."""
    rng = random.Random(seed)
    faults: list[Fault] = []
    with Store(home) as st:
        backups = []
        for i in range(n_faults):
            root = trees / f"t{i}"
            root.mkdir(parents=True)
            for j in range(3):
                (root / f"f{j}").write_bytes(rng.randbytes(200 + j) + f"{i}/{j}".encode())
            backups.append(preimage.capture([f"file://{root}"], store=st,
                                            tool_call={"tool": "Bash", "n": i}))
        kinds = ["blob-flip", "blob-truncate", "blob-delete", "doc-flip", "doc-truncate",
                 "doc-delete", "row-snapshot-delete", "row-digest", "row-target",
                 "row-backup-delete", "row-tool-call", "row-refs-delete"]
        for backup in backups:
            kind = rng.choice(kinds)
            row = st.catalog.get(backup.id).snapshots[0]
            files = [e.digest for e in backup.snapshots[0].items if e.type == "file" and e.digest]
            if kind.startswith(("blob-", "doc-")):
                digest = rng.choice(files) if kind.startswith("blob-") else row.digest
                path = st.blobs.path(digest)   # type: ignore[attr-defined]
                data = path.read_bytes()
                if kind.endswith("flip"):
                    path.write_bytes(_damaging_flip(data, path.suffix == ".raw", rng))
                elif kind.endswith("truncate"):
                    path.write_bytes(data[: rng.randrange(len(data))])
                else:
                    path.unlink()
                faults.append(Fault(kind, backup.id, [digest]))
                continue
            db = sqlite3.connect(home / "catalog.sqlite")
            with db:
                if kind == "row-snapshot-delete":
                    db.execute("DELETE FROM snapshots WHERE backup_id=?", (backup.id,))
                elif kind == "row-digest":
                    db.execute("UPDATE snapshots SET digest=? WHERE backup_id=?",
                               ("f" * 64, backup.id))
                elif kind == "row-target":
                    db.execute("UPDATE snapshots SET target=? WHERE backup_id=?",
                               ("file:///etc", backup.id))
                elif kind == "row-backup-delete":
                    db.execute("DELETE FROM backups WHERE id=?", (backup.id,))
                elif kind == "row-tool-call":
                    db.execute("UPDATE backups SET tool_call='{\"tool\": ' WHERE id=?",
                               (backup.id,))
                else:
                    db.execute("DELETE FROM refs WHERE backup_id=? AND digest=?",
                               (backup.id, row.digest))
            db.close()
            faults.append(Fault(kind, backup.id, [backup.id],
                                data_fault=kind not in ("row-tool-call", "row-refs-delete")))
    return faults
