"""The store's trash: deletes protected by a rename instead of a copy.

When a plain ``rm [-r] [-f] PATH…`` runs on the store's filesystem, the
backup layer rewrites it into ``preimage trash --home STORE --backup ID …``
(see :mod:`preimage.layer.rm_trash`).  That command renames each path into
``STORE/trash/ID/N`` — one ``rename(2)`` however large the tree, so every
byte, inode, mode, owner, time, xattr, hard link and hole stays exactly as it
was — and records the move in the catalog's ``trash`` table under backup
``ID`` (``kind = 'trash'``).  ``preimage restore ID`` renames them back.

What ``rm`` would have said is kept: a missing path is an error unless
``-f``; a directory without ``-r`` is refused; the exit code is 1 when any
path failed.  A path that cannot be renamed into the trash (another
filesystem after all, a mount point) is captured with the file connector as
its own backup, then deleted as ``rm`` would, and that backup's ID is printed.

Restoring: a path now occupied by something new is first captured into the
restore's undo backup and then replaced (``overwrite``), kept (``merge``),
or the restore stops (``refuse``).  A trash entry is renamed back once; a
second restore reports it as already back.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from preimage._backend import BackupRow

if TYPE_CHECKING:
    from preimage._engine import RestoreResult
    from preimage._store import Store


def trash_root(home: Path) -> Path:
    """``HOME/trash`` (created 0700)."""
    path = home / "trash"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def _rm_error(path: str, why: str) -> None:
    sys.stderr.write(f"rm: cannot remove '{path}': {why}\n")


def _capture_then_delete(path: str, home: Path, label: str, session: str | None) -> str:
    """Protect ``path`` the slow way (a copy into the store), then delete it; the backup ID."""
    from preimage._engine import capture
    from preimage._store import Store
    from preimage.layer.uris import file_uri

    with Store(home) as store:
        backup = capture([file_uri(path)], store=store, label=label, tier="rewrite",
                         session=session, kind="layer")
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)
    return backup.id


def move_to_trash(paths: Sequence[str], *, home: Path, backup_id: str, recursive: bool,
                  force: bool, session: str | None = None, label: str = "") -> int:
    """Move ``paths`` into the trash as backup ``backup_id``; ``rm``'s exit code."""
    from preimage._store import Store

    store = Store(home)
    catalog = store.catalog
    label = label or ("rm " + " ".join(paths))[:120]
    try:
        catalog.add_backup(backup_id, label=label, kind="trash", tier="rewrite", session=session,
                           tool_call={"tool": "trash", "input": {"paths": list(paths)}})
        with catalog.lease(backup_id):
            return _move_all(paths, store, backup_id, recursive=recursive, force=force,
                             session=session, label=label)
    finally:
        store.close()


def _move_all(paths: Sequence[str], store: Store, backup_id: str, *, recursive: bool,
              force: bool, session: str | None, label: str) -> int:
    """The renames of :func:`move_to_trash`, under the backup's lease."""
    home, catalog = store.home, store.catalog
    folder = trash_root(home) / backup_id
    code, moved = 0, 0
    for i, raw in enumerate(paths):
        path = os.path.abspath(raw)
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
            os.rename(path, dest)
        except OSError as exc:
            try:
                other = _capture_then_delete(path, home, label, session)
            except Exception as cap:  # not protected: do not delete
                _rm_error(raw, f"not removed — preimage could not back it up ({cap})")
                code = 1
                continue
            sys.stderr.write(f"preimage: {raw} could not move to the trash "
                             f"({exc.strerror or exc}); backed up as {other} and removed\n")
            continue
        catalog.add_trash(backup_id, path, str(dest))
        moved += 1
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
def restore_trash(store: Store, backup: BackupRow, *, only: Sequence[str] = (),
                  dry_run: bool = False, conflict: str = "overwrite") -> RestoreResult:
    """Rename backup ``backup``'s trash entries back to where they were."""
    from preimage._engine import RestoreResult, capture
    from preimage._errors import RestoreConflictError, UsageError
    from preimage.layer.uris import file_uri
    from preimage.restoration import Outcome, RestoreReport

    entries = [(e.original, e.stored_at) for e in store.catalog.trash() if e.backup_id == backup.id]
    if only:
        wanted = [unquote(u.split("://", 1)[-1].split("?", 1)[0]).rstrip("/") for u in only]
        entries = [(o, s) for o, s in entries
                   if any(o == w or o.startswith(w + "/") or w.startswith(o + "/") for w in wanted)]
        if not entries:
            raise UsageError(f"--only {', '.join(only)}: not in backup {backup.id}")
    if not entries:
        raise UsageError(f"backup {backup.id} moved nothing into the trash; nothing to restore")
    waiting = [(o, s) for o, s in entries if os.path.lexists(s)]
    occupied = [o for o, _ in waiting if os.path.lexists(o)]
    if occupied and conflict == "refuse" and not dry_run:
        raise RestoreConflictError(file_uri(occupied[0]), occupied)
    undo = None
    if waiting and not dry_run:
        undo = capture([file_uri(o) for o, _ in waiting], store=store, tier="restore",
                       label=f"before restoring {backup.id}", kind="pre-restore",
                       parent_id=backup.id).id
    reports = []
    for original, stored in entries:
        report = RestoreReport(target=file_uri(original), connector="trash", dry_run=dry_run)
        reports.append(report)
        if not os.path.lexists(stored):
            report.add(original, Outcome.SKIPPED, reason="no longer in the trash (restored "
                       "before, or pruned)")
            continue
        if os.path.lexists(original):
            if conflict == "merge":
                report.add(original, Outcome.SKIPPED, reason="something new is there; merge "
                           "keeps it")
                continue
            if dry_run:
                report.add(original, Outcome.PLANNED, action="replace what is there now and "
                           "rename back from the trash")
                continue
            if os.path.isdir(original) and not os.path.islink(original):
                shutil.rmtree(original)
            else:
                os.unlink(original)
        if dry_run:
            report.add(original, Outcome.PLANNED, action="rename back from the trash")
            continue
        os.makedirs(os.path.dirname(original), exist_ok=True)
        try:
            os.rename(stored, original)
        except OSError as exc:
            report.add(original, Outcome.FAILED, reason=f"cannot rename back: {exc.strerror}")
            continue
        report.add(original, Outcome.RESTORED, action="renamed back from the trash")
    return RestoreResult(backup.id, undo, reports, dry_run)
