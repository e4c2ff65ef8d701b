"""Files an observed call removed, kept by a hard link in the store's trash until first use.

When a supervised call is about to remove the last name of a regular file on
the store's file system (``unlink``, or a ``rename`` over it), the recorder
does not copy it: it links the file into ``STORE/trash/ID/N`` — one
``link(2)``, whatever the size.  The inode stays, so its bytes, mode, owner,
ns times and xattrs are exactly as they were (only ctime moves: a server
field).  Each link is written to the backup's journal
(``STORE/trash/ID/observed.journal``, one ``N<TAB>path`` line, appended before
the syscall runs, so a supervisor killed right after still left it) and, when
the call ends, to the catalog's ``trash`` table (so ``export`` and ``check``
see it).

A linked file becomes an ordinary ``file`` snapshot of the backup the first
time the backup is used — ``restore``, ``undo``, ``diff``, ``score`` call
:func:`materialize` first: each entry is read from the trash into the store
as if it lay at its original path (:func:`~preimage.engine.trash.entry_snapshot`),
added as the backup's next snapshot, and only then is its link removed.  So
the hashing and compressing a copy would have cost the call is paid once, by
whoever needs the backup, and everything downstream sees a plain observed
backup.  A materialisation that dies halfway is finished by the next one: an
entry whose snapshot is already in is only unlinked.

Why only files with one link: a file with other names could be changed
through them after the call, and the linked before-image with it; such files
(and renames' sources, which live on under a new name) are copied as before.
A process that held a removed file open for writing from before the call can
still write into it; :func:`materialize` compares each entry with the size and
mtime it had when linked and reports a difference as not captured.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from preimage.store.backend import BackupRow, SnapshotRow
from preimage.store.store import Store

JOURNAL = "observed.journal"


def trash_folder(home: Path, backup_id: str) -> Path:
    """``HOME/trash/ID``, where backup ``backup_id``'s linked files are kept."""
    return home / "trash" / backup_id


def journal_line(n: int, path: str, size: int, mtime_ns: int) -> bytes:
    """One journal line: entry ``n`` holds what lay at ``path`` (with its size and mtime
    when it was linked, to tell a later write through an open descriptor)."""
    return f"{n}\t{quote(path, safe='/')}\t{size}\t{mtime_ns}\n".encode()


@dataclass
class Linked:
    """One linked file: where it lay, where it is kept, its size and mtime then."""

    original: str
    stored: str
    size: int = -1
    mtime_ns: int = -1


def _read_journal(folder: Path) -> list[Linked]:
    try:
        text = (folder / JOURNAL).read_text()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) != 4 or not parts[0].isdigit():
            continue   # a line cut short by a kill: its syscall never ran
        out.append(Linked(unquote(parts[1]), str(folder / parts[0]), int(parts[2]),
                          int(parts[3])))
    return out


def linked(store: Store, backup_id: str) -> list[Linked]:
    """Backup ``backup_id``'s linked files not yet read into the store: the journal's
    entries, and the catalog's trash rows (an imported backup has only those)."""
    folder = trash_folder(store.home, backup_id)
    found = {e.stored: e for e in _read_journal(folder)}
    for t in store.catalog.trash():
        if t.backup_id == backup_id:
            found.setdefault(t.stored_at, Linked(t.original, t.stored_at))
    return sorted(found.values(), key=lambda e: (len(e.stored), e.stored))


def held_targets(store: Store, backup: BackupRow) -> list[str]:
    """The ``file://`` targets backup ``backup`` holds: its snapshots' and, for an
    observed backup, those of the files it keeps linked in the trash."""
    from preimage.engine.trash import entry_target

    targets = [row.target for row in backup.snapshots]
    if backup.kind == "observed":
        targets += [entry_target(e.original) for e in linked(store, backup.id)]
    return targets


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One materialisation of a backup at a time (a second waits, then finds it done)."""
    folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(f"{folder}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def materialize(store: Store, backup: BackupRow) -> BackupRow:
    """Read backup ``backup``'s linked files into the store as snapshots, then drop the
    links; the backup as it is now (unchanged when it has none).

    Raises :class:`UsageError` while the call that records the backup still runs
    (it holds the backup's lease, and seals the snapshot count when it ends)."""
    if backup.kind != "observed":
        return backup
    folder = trash_folder(store.home, backup.id)
    if not folder.is_dir() and not any(t.backup_id == backup.id for t in store.catalog.trash()):
        return backup
    from preimage.engine.trash import _Recorder, entry_target
    from preimage.interface.errors import UsageError

    if store.catalog.lease_held(backup.id):
        raise UsageError(f"backup {backup.id} is still being recorded (its call is running); "
                         "use it once the call has ended")

    with _locked(folder), store.catalog.lease(backup.id):
        backup = store.catalog.get(backup.id)
        entries = linked(store, backup.id)
        if not entries:
            return backup
        have = {row.target for row in backup.snapshots}
        idx = max((row.idx for row in backup.snapshots), default=-1) + 1
        added = 0
        waiting = [e for e in entries if entry_target(e.original) not in have]
        with _Recorder(store, backup, active=bool(waiting)) as recorder:
            for e in waiting:
                recorder.keep(_read(store, backup.id, idx, e))
                idx += 1
                added += 1
        if added and backup.expected_snapshots is not None:
            store.catalog.finish_backup(
                backup.id, status=backup.status, stored_bytes=backup.stored_bytes,
                logical_bytes=backup.logical_bytes, seconds=backup.seconds,
                snapshots=backup.expected_snapshots + added)
        backup = store.catalog.get(backup.id)
        kept = {row.target for row in backup.snapshots}
        for e in entries:   # only what is now a snapshot loses its link
            if entry_target(e.original) in kept:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(e.stored)
        store.catalog.drop_trash(t.id for t in store.catalog.trash()
                                 if t.backup_id == backup.id and entry_target(t.original) in kept)
        if all(entry_target(e.original) in kept for e in entries):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / JOURNAL)
        return backup


def _changed_since(e: Linked) -> str | None:
    """Why entry ``e`` may no longer be what was removed (``None``: as it was linked)."""
    if e.size < 0:
        return None
    try:
        st = os.lstat(e.stored)
    except OSError:
        return None
    if st.st_size != e.size or st.st_mtime_ns != e.mtime_ns:
        return ("written after it was removed, through a descriptor a process held open "
                "from before the call; the backup holds it as it was when read")
    return None


def _read(store: Store, backup_id: str, idx: int, e: Linked) -> tuple[SnapshotRow, set[str]]:
    """Entry ``e`` read into the store as snapshot ``idx`` of the backup (not yet added).
    An entry that is gone or unreadable becomes a snapshot that says so, so the score
    counts it as not captured rather than the backup vouching for it."""
    from preimage.engine.trash import _missing_snapshot, entry_snapshot, entry_target
    from preimage.snapshot_schemas import Uncaptured
    from preimage.store.backend import RecordingBlobs
    from preimage.store.quota import load as load_quota
    from preimage.store.snapshots import snapshot_bytes

    view = RecordingBlobs(store.blobs)
    view.max_file_size = load_quota(store).max_file_size
    try:
        snap = entry_snapshot(e.original, e.stored, view)
    except Exception as exc:   # whatever failed, the score must say so
        snap = _missing_snapshot(e.original, f"its link in the store's trash could not be "
                                 f"read ({exc})")
    else:
        changed = _changed_since(e)
        if changed is not None:
            snap = snap.model_copy(update={"uncaptured": [
                *snap.uncaptured, Uncaptured(name=e.original, kind="file", reason=changed)]})
    digest = view.put_bytes(snapshot_bytes(snap))
    view.flush()
    row = SnapshotRow(backup_id, idx, "file", entry_target(e.original), digest,
                      len(snap.items))
    return row, view.touched
