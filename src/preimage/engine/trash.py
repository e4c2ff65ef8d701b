"""The store's trash: deletes protected by a rename instead of a copy.

When a plain ``rm [-r] [-f] PATH…`` runs on the store's filesystem, the
backup layer rewrites it into ``preimage trash --home STORE --backup ID …``
(see :mod:`preimage.layer.deciding.rm_trash`).  That command renames each path into
``STORE/trash/ID/N`` — one ``rename(2)`` however large the tree, so every
byte, inode, mode, owner, time, xattr, hard link and hole stays exactly as it
was — and records the move in the catalog's ``trash`` table under backup
``ID`` (``kind = 'trash'``).  ``preimage restore ID`` renames them back.

What ``rm`` would have said is kept: a missing path is an error unless
``-f``; a directory without ``-r`` is refused; the exit code is 1 when any
path failed.  A path that cannot be renamed into the trash (another
filesystem after all, a mount point) is captured with the file connector as
its own backup, then deleted as ``rm`` would, and that backup's ID is printed.

The backup names the agent's call, not the rewrite: the hook leaves the call
(tool, command, harness, session, call id — redacted as every stored call is)
in ``STORE/trash/ID.call.json`` when it decides, and ``preimage trash --backup
ID`` records it as the backup's ``tool_call`` and removes the file.  The
command line carries only the backup ID.  A call the user never approved
leaves its file behind; ``prune`` reclaims such files after a day.

Restoring: a path now occupied by something new is first captured into the
restore's undo backup and then replaced (``overwrite``), kept (``merge``),
or the restore stops (``refuse``).  A trash entry is renamed back once; a
second restore reports it as already back.

Comparing: a trash backup has no snapshot when it is taken (that is the
point of a rename), so ``diff`` and ``score`` read one when asked
(:func:`trash_snapshots`): an entry still in the trash is captured there, on
demand, and compared as if it lay at its original path; an entry renamed back
is compared against the snapshot the restore recorded of it just before the
rename (the restore's cost, not the call's).  An entry that is neither — gone
from the trash with no snapshot — is reported as not captured, so the score
stays below 1.0 rather than vouching for what nobody read.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from preimage.interface.errors import UnsafePathError
from preimage.store.backend import BackupRow
from preimage.store.format import CALL_SUFFIX

if TYPE_CHECKING:
    from preimage.connectors.files.dirfd import TreeHandle
    from preimage.engine.backups import RestoreResult
    from preimage.interface.blobs import BlobStore
    from preimage.snapshot_schemas import Snapshot
    from preimage.store.backend import SnapshotRow
    from preimage.store.store import Store



def trash_root(home: Path) -> Path:
    """``HOME/trash`` (created 0700)."""
    path = home / "trash"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def call_file(home: Path, backup_id: str) -> Path:
    """Where the hook leaves the call that backup ``backup_id``'s rewrite came from."""
    return home / "trash" / f"{backup_id}{CALL_SUFFIX}"


def leave_call(home: Path, backup_id: str, record: dict[str, Any]) -> None:
    """Keep ``record`` (the agent's call, as ``ToolCall.to_record`` gives it) for the
    ``preimage trash`` run that will record backup ``backup_id``: redacted, 0600.
    A failure to write it only costs the backup its description."""
    from preimage.interface.redact import redact_value

    path = call_file(home, backup_id)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(redact_value(record), fh)
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _take_call(home: Path, backup_id: str) -> dict[str, Any] | None:
    """The call file of ``backup_id`` (``None`` when there is none or it is unreadable)."""
    path = call_file(home, backup_id)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("tool"), str) else None


def _rm_error(path: str, why: str) -> None:
    sys.stderr.write(f"rm: cannot remove '{path}': {why}\n")


def _capture_then_delete(path: str, home: Path, label: str, session: str | None,
                         tool_call: dict[str, Any] | None) -> str:
    """Protect ``path`` the slow way (a copy into the store), then delete it; the backup ID."""
    from preimage.connectors.files.address import file_uri
    from preimage.engine.capture import capture
    from preimage.store.store import Store

    with Store(home) as store:
        backup = capture([file_uri(path)], store=store, label=label, tier="rewrite",
                         session=session, kind="layer", tool_call=tool_call)
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)
    return backup.id


def move_to_trash(paths: Sequence[str], *, home: Path, backup_id: str, recursive: bool,
                  force: bool, session: str | None = None, label: str = "") -> int:
    """Move ``paths`` into the trash as backup ``backup_id``; ``rm``'s exit code.

    The backup's ``tool_call`` is the agent's call the hook left for it
    (:func:`leave_call`); without one (``preimage trash`` run by hand) it names
    the paths."""
    from preimage.interface.redact import redact, redact_value
    from preimage.store.store import Store

    call = _take_call(home, backup_id)
    part_of = None   # the backup the same call took of what else it changes
    if call is None:
        call = {"tool": "trash", "input": {"paths": list(paths)}}
    else:
        part_of = call.pop("part_of", None)
        session = session or call.get("session")
        command = (call.get("input") or {}).get("command")
        label = label or (command if isinstance(command, str) else "")[:120]
    call.pop("session", None)
    label = redact(label or ("rm " + " ".join(paths))[:120])
    tool_call = redact_value(call)
    store = Store(home)
    catalog = store.catalog
    try:
        with catalog.lease(backup_id):   # held before the row exists: never open unleased
            catalog.add_backup(backup_id, label=label, kind="trash", tier="rewrite",
                               session=session, tool_call=tool_call,
                               parent_id=part_of if isinstance(part_of, str) else None)
            with contextlib.suppress(OSError):
                call_file(home, backup_id).unlink()
            return _move_all(paths, store, backup_id, recursive=recursive, force=force,
                             session=session, label=label, tool_call=tool_call)
    finally:
        store.close()


def _move_all(paths: Sequence[str], store: Store, backup_id: str, *, recursive: bool,
              force: bool, session: str | None, label: str,
              tool_call: dict[str, Any] | None) -> int:
    """The renames of :func:`move_to_trash`, under the backup's lease."""
    from preimage.engine.trash_parents import Parents

    home, catalog = store.home, store.catalog
    folder = trash_root(home) / backup_id
    parents = Parents(folder)
    code, moved = 0, 0
    for i, raw in enumerate(paths):
        # the parent resolved now: a restore refuses a parent that resolves elsewhere later
        absolute = os.path.abspath(raw)
        path = os.path.join(os.path.realpath(os.path.dirname(absolute)),
                            os.path.basename(absolute))
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            if not force:
                _rm_error(raw, "No such file or directory")
                code = 1
            continue
        if os.path.isdir(path) and not os.path.islink(path) and not recursive:
            _rm_error(raw, "Is a directory")
            code = 1
            continue
        folder.mkdir(mode=0o700, exist_ok=True)
        dest = folder / str(i)
        try:
            if st.st_dev != os.stat(folder).st_dev:
                raise OSError(18, "on another filesystem than the store")
            parents.before(path)
            os.rename(path, dest)
        except OSError as exc:
            try:
                other = _capture_then_delete(path, home, label, session, tool_call)
            except Exception as cap:  # not protected: do not delete
                _rm_error(raw, f"not removed — preimage could not back it up ({cap})")
                code = 1
                continue
            sys.stderr.write(f"preimage: {raw} could not move to the trash "
                             f"({exc.strerror or exc}); backed up as {other} and removed\n")
            continue
        catalog.add_trash(backup_id, path, str(dest))
        moved += 1
    parents.save()
    catalog.finish_backup(backup_id, status="complete" if moved else "failed",
                          stored_bytes=0, logical_bytes=0, seconds=0.0)
    return code


def main(argv: Sequence[str] | None = None) -> None:
    """``preimage trash --home STORE --backup ID [-r] [-f] [--session S] -- PATH…``."""
    parser = argparse.ArgumentParser(
        prog="preimage trash",
        description="Delete paths as rm does, keeping them in the store's trash as a backup "
                    "(what the backup layer rewrites a plain rm into).")
    parser.add_argument("--home", required=True, help="the backup store")
    parser.add_argument("--backup", required=True, help="the backup ID to record the move under")
    parser.add_argument("--session", default=None)
    parser.add_argument("--label", default="")
    parser.add_argument("-r", "-R", "--recursive", action="store_true")
    parser.add_argument("-f", "--force", action="store_true")
    parser.add_argument("paths", nargs="*")
    opts = parser.parse_args(list(sys.argv[2:] if argv is None else argv))
    if not opts.paths and not opts.force:
        sys.stderr.write("rm: missing operand\n")
        sys.exit(1)
    try:
        code = move_to_trash(opts.paths, home=Path(opts.home), backup_id=opts.backup,
                             recursive=opts.recursive, force=opts.force, session=opts.session,
                             label=opts.label)
    except Exception as exc:  # the store itself failed: nothing was moved after the failure
        sys.stderr.write(f"preimage trash: {exc}\n")
        sys.exit(1)
    sys.exit(code)


# ------------------------------------------------------------------ restore
def moved_paths(store: Store, backup_id: str) -> list[tuple[str, str]]:
    """``(original, stored_at)`` of each path backup ``backup_id`` moved into the trash."""
    return [(e.original, e.stored_at) for e in store.catalog.trash() if e.backup_id == backup_id]


def _entries(store: Store, backup: BackupRow, only: Sequence[str],
             verb: str) -> list[tuple[int, str, str]]:
    """``(index, original, stored_at)`` of backup ``backup``'s trash entries, kept to those
    at, under or above an ``only`` URI; a :class:`UsageError` when none is left."""
    from preimage.interface.errors import UsageError

    every = list(enumerate(moved_paths(store, backup.id)))
    entries = [(i, o, s) for i, (o, s) in every]
    if only:
        wanted = [_path_of(u) for u in only]
        entries = [(i, o, s) for i, o, s in entries if any(_overlaps(o, w) for w in wanted)]
        if not entries:
            held = ", ".join(entry_target(o) for _, (o, _s) in every) or "nothing"
            raise UsageError(f"--only {', '.join(only)}: not in backup {backup.id} "
                             f"(it holds: {held})")
    if not entries:
        raise UsageError(f"backup {backup.id} moved nothing into the trash; nothing to {verb}")
    return entries


def restore_trash(store: Store, backup: BackupRow, *, only: Sequence[str] = (),
                  dry_run: bool = False, conflict: str = "overwrite") -> RestoreResult:
    """Rename backup ``backup``'s trash entries back to where they were.

    Just before an entry is renamed back, what it holds is captured into the
    store and, once the rename succeeded, recorded as a snapshot of backup
    ``backup`` (:class:`_Recorder`): ``score`` and ``diff`` of the backup then keep
    working after the trash is empty.  A capture that fails does not stop the
    restore; the report says the entry can no longer be compared."""
    from preimage.connectors.files.address import file_uri
    from preimage.engine.backups import RestoreResult
    from preimage.engine.capture import capture
    from preimage.interface.errors import RestoreConflictError
    from preimage.restoration import Outcome, RestoreReport

    entries = _entries(store, backup, only, "restore")
    waiting = [(o, s) for _, o, s in entries if os.path.lexists(s)]
    occupied = [o for o, _ in waiting if os.path.lexists(o)]
    if occupied and conflict == "refuse" and not dry_run:
        raise RestoreConflictError(file_uri(occupied[0]), occupied)
    for original, _stored in waiting:   # every parent checked before anything is written
        _check_parent(original)
    undo = None
    if waiting and not dry_run:
        undo = capture([file_uri(o) for o, _ in waiting], store=store, tier="restore",
                       label=f"before restoring {backup.id}", kind="pre-restore",
                       parent_id=backup.id).id
    from preimage.engine.trash_parents import Parents

    parents = Parents.load(trash_root(store.home) / backup.id)
    untouched = parents.untouched()   # read before anything is renamed back
    reports = []
    with _Recorder(store, backup, active=bool(waiting) and not dry_run) as recorder:
        for idx, original, stored in entries:
            report = RestoreReport(target=file_uri(original), connector="trash", dry_run=dry_run)
            reports.append(report)
            if not os.path.lexists(stored):
                report.add(original, Outcome.SKIPPED, reason="no longer in the trash (restored "
                           "before, or pruned)")
                continue
            if dry_run:
                there = os.path.lexists(original)
                if there and conflict == "merge":
                    report.add(original, Outcome.SKIPPED, reason="something new is there; "
                               "merge keeps it")
                else:
                    report.add(original, Outcome.PLANNED, action=(
                        "replace what is there now and rename back from the trash" if there
                        else "rename back from the trash"))
                continue
            parent, name = _parent_of(original)
            try:
                if _lexists_at(parent, name):
                    if conflict == "merge":
                        report.add(original, Outcome.SKIPPED, reason="something new is there; "
                                   "merge keeps it")
                        continue
                    _remove_at(parent, name)
                pending = recorder.read(idx, original, stored, report)
                os.rename(stored, name, dst_dir_fd=parent.parent_fd())
            except OSError as exc:
                report.add(original, Outcome.FAILED, reason=f"cannot rename back: {exc.strerror}")
                continue
            finally:
                parent.close()
            report.add(original, Outcome.RESTORED, action="renamed back from the trash")
            recorder.keep(pending)
    if not dry_run and not only and reports and all(r.ok for r in reports):
        for folder in parents.put_back(untouched):
            reports[-1].notes.append(f"{folder} changed after the rm, so it keeps its newer "
                                     "mtime")
    return RestoreResult(backup.id, undo, reports, dry_run)


def _check_parent(original: str) -> None:
    """:class:`UnsafePathError` when ``original``'s parent resolves elsewhere than the path
    the trash recorded (its parent resolved at the ``rm``): a symlink was put in its way."""
    parent = os.path.dirname(os.path.normpath(original))
    real = os.path.realpath(parent)
    if real != parent:
        raise UnsafePathError(original, (
            f"its parent {parent} now resolves to {real} — a symlink was put in its way. "
            "Make the parent a real directory again, then restore"))


def _remove_at(parent: TreeHandle, name: str) -> None:
    """Remove what is at ``name`` in ``parent`` (a tree without following its links)."""
    fd = parent.parent_fd()
    if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
        shutil.rmtree(name, dir_fd=fd)
    else:
        os.unlink(name, dir_fd=fd)


def _parent_of(original: str) -> tuple[TreeHandle, str]:
    """The directory ``original`` was moved from, reached from ``/`` without following a
    symlink (created, as ``mkdir -p``, when it is gone), and ``original``'s name in it.

    The trash records the path an ``rm`` was given, its parent resolved (see
    :func:`_move_all`): a parent that resolves elsewhere now had a symlink put in its
    way, and nothing is written or deleted through it (:class:`UnsafePathError`)."""
    from preimage.connectors.files.dirfd import TreeHandle

    root = Path(os.path.normpath(original))
    handle = TreeHandle(root, str(root.parent))
    if not handle.parent_exists():
        handle.make_parent()
        handle = TreeHandle(root, str(root.parent))   # what was made is checked again
    handle.parent_fd()
    return handle, root.name


def _lexists_at(parent: TreeHandle, name: str) -> bool:
    try:
        os.stat(name, dir_fd=parent.parent_fd(), follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


class _Recorder:
    """Records, as snapshots of a trash backup, what its restore renames back.

    The captures write blobs into the store outside any capture of the engine,
    so while they run a placeholder backup is held ``open`` under its lease:
    ``prune`` waits for open captures before it deletes a blob it found
    unreferenced, and a blob these captures reuse is referenced only once its
    snapshot row is in.  The placeholder is forgotten at the end (a killed
    restore leaves it ``abandoned``, which ``prune`` reclaims)."""

    def __init__(self, store: Store, backup: BackupRow, *, active: bool) -> None:
        self.store, self.backup, self.active = store, backup, active
        self.have = {row.target for row in backup.snapshots}
        self.guard: str | None = None
        self._lease: contextlib.ExitStack | None = None

    def __enter__(self) -> _Recorder:
        if not self.active:
            return self
        from preimage.store.ids import new_backup_id

        catalog = self.store.catalog
        self.guard = new_backup_id()
        self._lease = contextlib.ExitStack()
        self._lease.enter_context(catalog.lease(self.guard))
        catalog.add_backup(self.guard, label=f"recording what restoring {self.backup.id} "
                           "renames back", kind="trash-record", tier="restore",
                           parent_id=self.backup.id)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.guard is not None:
            with contextlib.suppress(Exception):
                self.store.catalog.forget([self.guard])
        if self._lease is not None:
            self._lease.close()

    def read(self, idx: int, original: str, stored: str,
             report: Any) -> tuple[SnapshotRow, set[str]] | None:
        """Capture trash entry ``stored`` (as ``original``) into the store; ``None``
        when it is already recorded or cannot be read (the report says so)."""
        if self.guard is None or entry_target(original) in self.have:
            return None
        from preimage.store.backend import RecordingBlobs, SnapshotRow
        from preimage.store.quota import load as load_quota
        from preimage.store.snapshots import snapshot_bytes

        view = RecordingBlobs(self.store.blobs)
        view.max_file_size = load_quota(self.store).max_file_size
        try:
            snap = entry_snapshot(original, stored, view)
            digest = view.put_bytes(snapshot_bytes(snap))
            view.flush()
        except Exception as exc:   # the rename back matters more than the record of it
            report.notes.append(f"{original}: what was renamed back could not be recorded "
                                f"({exc}); `preimage score {self.backup.id}` will say it was "
                                "not captured")
            return None
        row = SnapshotRow(self.backup.id, idx, "file", snap.target, digest, len(snap.items))
        return row, view.touched

    def keep(self, pending: tuple[SnapshotRow, set[str]] | None) -> None:
        """Add the snapshot :meth:`read` prepared to the backup (the rename succeeded)."""
        if pending is not None:
            row, refs = pending
            self.store.catalog.add_snapshot(row, refs)
            self.have.add(row.target)


# ------------------------------------------------------------------ compare
def entry_target(original: str) -> str:
    """The ``file://`` target a trash entry stands for (as the file connector names it)."""
    from preimage.connectors.files.connector import file_uri

    return file_uri(os.path.normpath(original))


def _parse(path: str) -> Any:
    from preimage.connectors.files.address import file_uri
    from preimage.interface.target import Target

    return Target.parse(file_uri(path))


def entry_snapshot(original: str, stored: str, blobs: BlobStore) -> Snapshot:
    """Trash entry ``stored`` captured into ``blobs`` as if it lay at ``original``.

    The file connector walks it where it is (a rename kept every byte, mode,
    time and link as they were); only the snapshot's root is put back to the
    original path, so it compares item for item with a capture of that path."""
    from preimage.interface.registry import get_connector

    snap = get_connector("file").capture(_parse(stored), blobs)
    root = os.path.normpath(original)
    return snap.model_copy(update={
        "target": entry_target(original), "root": root,
        "root_parent": os.path.realpath(os.path.dirname(root)),
        "notes": [*snap.notes, "read from the store's trash, where the rm moved it"],
    })


def _missing_snapshot(original: str, why: str) -> Snapshot:
    """A snapshot of ``original`` that read nothing and says so (the meter counts it)."""
    from preimage.snapshot_schemas import Uncaptured
    from preimage.snapshot_schemas.files import FileSnapshot

    root = os.path.normpath(original)
    return FileSnapshot(target=entry_target(original), root=root, root_type=None,
                        uncaptured=[Uncaptured(name=root, kind="tree", reason=why)])


def trash_snapshots(store: Store, backup: BackupRow, blobs: BlobStore,
                    only: Sequence[str] = ()) -> list[tuple[SnapshotRow, Snapshot]]:
    """The state backup ``backup`` (a trash move) holds, one snapshot per entry.

    An entry renamed back has the snapshot its restore recorded; one still in
    the trash is captured there now, into ``blobs`` (a scratch store); one that
    is neither is an empty snapshot whose ``uncaptured`` says why.  ``only``
    keeps the entries at or under (or above) the given URIs.
    """
    from preimage.store.backend import SnapshotRow
    from preimage.store.snapshots import load_snapshot_row

    recorded = {row.target: row for row in backup.snapshots}
    out: list[tuple[SnapshotRow, Snapshot]] = []
    for idx, original, stored in _entries(store, backup, only, "compare"):
        target = entry_target(original)
        row = recorded.get(target)
        if row is not None:
            out.append((row, load_snapshot_row(store, row)))
            continue
        if os.path.lexists(stored):
            snap = entry_snapshot(original, stored, blobs)
        else:
            snap = _missing_snapshot(original, "renamed back from the trash by a restore that "
                                     "recorded nothing of it, or removed from the trash: "
                                     "nothing of it was read")
        out.append((SnapshotRow(backup.id, idx, "file", target, "", len(snap.items)), snap))
    return out


def _path_of(uri: str) -> str:
    return unquote(uri.split("://", 1)[-1].split("?", 1)[0]).rstrip("/") or "/"


def _overlaps(path: str, wanted: str) -> bool:
    return path == wanted or path.startswith(wanted + "/") or wanted.startswith(path + "/")


def live_target(snap: Snapshot) -> str:
    """The URI to capture the live state at a trash entry's original path from."""
    from preimage.connectors.files.address import file_uri

    root = getattr(snap, "root", None)
    return file_uri(root) if isinstance(root, str) else snap.target
