"""Before-images of what a supervised call is about to change, stored as one backup.

Each path is recorded once per call, before the syscall that changes it runs,
as a ``file`` snapshot — the same schema, restore, diff, score and undo as any
file backup:

* a **tree** record (``file:///P``) holds ``P`` and everything below it as it
  was: a file's bytes, a directory's whole subtree (what a ``rename`` of a
  directory moves), a symlink itself, or that ``P`` did not exist — so a
  restore removes what the call created there.  A path at or below a tree
  record is covered by it and never recorded again.
* an **entry** record (``file:///D?depth=0``) holds directory ``D``'s own
  entry: mode, owner, ns times, xattrs.  Every change of a name inside ``D``
  records it first, so a restore puts back ``D``'s mtime too.

Content is stored the way every file capture stores it (blobs deduplicated,
cloned where the file system can) — except a regular file whose last name the
call is about to remove (``unlink``, a ``rename`` over it) on the store's
file system: that one is hard-linked into the store's trash
(:mod:`preimage.engine.observed_links`), one ``link(2)`` and one journal line
whatever its size, and read into the store only when the backup is first used.

The backup is ``complete`` from its first record on, with no expected
snapshot count until :meth:`Recorder.close` seals it with its count and
sizes; so if the supervisor is killed mid-call, everything recorded so far
restores — and the call, whose listener died with the supervisor, can change
nothing more without ``ENOSYS``.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any
from urllib.parse import quote

from preimage.connectors.files.connector import file_uri
from preimage.engine.capture import _store_snapshot
from preimage.engine.observed_links import JOURNAL, journal_line, trash_folder
from preimage.interface.redact import redact, redact_value
from preimage.interface.registry import get_connector
from preimage.interface.target import Target
from preimage.store.backend import RecordingBlobs, SnapshotRow
from preimage.store.format import digests_in
from preimage.store.ids import new_backup_id
from preimage.store.quota import load as load_quota
from preimage.store.store import Store

KIND = "observed"           # the catalog kind of a supervised call's backup
_PSEUDO = ("/proc/", "/sys/", "/dev/")


class PathSet(set[str]):
    """A set of paths that tells ``listener`` of each new member (the compiled loop
    keeps a copy of the recorder's sets)."""

    listener: Callable[[str], object] | None = None

    def add(self, path: str) -> None:
        if path not in self:
            super().add(path)
            if self.listener is not None:
                self.listener(path)


class Recorder:
    """Records before-images into one backup of ``store`` (opened on first use, so a
    call that changes nothing leaves no backup)."""

    def __init__(self, store: Store, *, label: str, tool_call: dict[str, Any] | None = None,
                 session: str | None = None, ignore: tuple[str, ...] = (),
                 parent_id: str | None = None) -> None:
        self.store = store
        self.label = label
        self.tool_call = tool_call
        self.session = session
        self.parent_id = parent_id   # the backup of the call this one is part of
        self.backup_id: str | None = None
        self.trees = PathSet()
        self.entries = PathSet()
        self.count = 0
        self.stored = 0
        self.logical = 0
        self.seconds = 0.0
        self.uncaptured: list[str] = []
        self._foreign: set[str] = set()
        self._leases = ExitStack()
        self._home = os.path.realpath(store.home)
        self._ignore = frozenset(p.rstrip("/") for p in ignore)
        self._ignore_under = tuple(p.rstrip("/") + "/" for p in ignore)
        self._quota = load_quota(store)
        self._connector = get_connector("file")
        self.linked = 0
        self._links: list[tuple[str, str]] = []   # (original, stored): catalog rows at close
        self._journal: int | None = None
        self._trash: str | None = None
        self._trash_dev: int | None = None

    # ------------------------------------------------------------ for the compiled loop
    @property
    def home(self) -> str:
        """The store's home, resolved (never recorded)."""
        return self._home

    @property
    def ignore_paths(self) -> tuple[str, ...]:
        """The other paths never recorded (with what lies below them)."""
        return tuple(sorted(self._ignore))

    @property
    def max_file_size(self) -> int | None:
        """The store's per-file cap (``None``: none)."""
        return self._quota.max_file_size

    def trash_state(self) -> tuple[str, int, int, int] | None:
        """The trash folder, its journal descriptor, its device and the next entry number,
        once the first removed file was linked (``None`` before)."""
        if self._trash is None or self._journal is None or self._trash_dev is None:
            return None
        return self._trash, self._journal, self._trash_dev, self.linked

    def adopt_links(self, paths: list[str]) -> None:
        """Files the compiled loop linked into the trash, numbered on from
        ``self.linked``, each with its journal line written: the same bookkeeping as
        :meth:`_link`."""
        assert self._trash is not None
        for path in paths:
            self._links.append((path, f"{self._trash}/{self.linked}"))
            self.linked += 1
            set.add(self.trees, path)   # the compiled loop holds it already
            if self.count == 0 and self.linked == 1:
                self._finish(None)

    # ------------------------------------------------------------ what to record
    def covered(self, path: str) -> bool:
        """Whether ``path`` lies at or below a tree already recorded."""
        probe = path
        while True:
            if probe in self.trees:
                return True
            if probe == "/":
                return False
            probe = os.path.dirname(probe)

    def ignored(self, path: str) -> bool:
        """Paths that are not the user's files: the store itself, /proc, /sys, /dev, and
        the ``ignore`` prefixes (preimage's own log and runtime directories in session
        mode)."""
        return (path == self._home or path in self._ignore
                or path.startswith((*_PSEUDO, self._home + "/", *self._ignore_under)))

    def name(self, path: str, *, dropped: bool = False) -> None:
        """The entry at ``path`` is about to be created, removed or replaced;
        ``dropped``: what it names loses that name and is not kept by the call
        (``unlink``, the target of a ``rename``), so a file it was the last name of
        can be kept by a hard link instead of a copy."""
        if self.ignored(path) or self.covered(path):
            return
        self.entry(os.path.dirname(path))
        if dropped:
            try:
                st = os.lstat(path)
            except OSError:
                st = None
            # the syscall must be able to remove the name: were it refused, the file would
            # live on sharing its inode with the link, and a later write would reach both;
            # a file over the store's per-file cap is left to the capture, which reports
            # it as not captured, as every capture does (reading it later would drop it)
            cap = self._quota.max_file_size
            if st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink == 1 \
                    and (cap is None or st.st_size <= cap) \
                    and os.access(os.path.dirname(path), os.W_OK | os.X_OK) \
                    and self._link(path, st):
                return
            self._file(path, st)
            return
        self._file(path)

    def _link(self, path: str, st: os.stat_result) -> bool:
        """Keep the file at ``path`` by a hard link in the store's trash; False when it
        is on another file system (or the link fails: it is copied then)."""
        folder = self._trash_folder()
        if st.st_dev != self._trash_dev:
            return False
        n = self.linked
        stored = f"{folder}/{n}"
        try:
            os.link(path, stored, follow_symlinks=False)
        except OSError:
            return False
        assert self._journal is not None
        # before the syscall runs: a supervisor killed after it still left the line
        os.write(self._journal, journal_line(n, path, st.st_size, st.st_mtime_ns))
        self.linked += 1
        self.trees.add(path)
        self._links.append((path, stored))
        if self.count == 0 and self.linked == 1:
            self._finish(None)   # restorable from the first link on (see _record)
        return True

    def _trash_folder(self) -> str:
        if self._trash is None:
            backup_id = self._open()
            folder = trash_folder(self.store.home, backup_id)
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._journal = os.open(folder / JOURNAL, os.O_WRONLY | os.O_CREAT | os.O_APPEND
                                    | os.O_CLOEXEC, 0o600)
            self._trash = str(folder)
            self._trash_dev = os.stat(folder).st_dev
        return self._trash

    def foreign(self, path: str, pid: int, reason: str = "") -> None:
        """A change inside a process's own mount namespace (a sandbox's private
        ``/tmp``, a file bound over another) that no path here reaches: reported once
        as not captured, saying why."""
        if path not in self._foreign and not path.startswith(_PSEUDO):
            self._foreign.add(path)
            self.uncaptured.append(f"{path}: in the mount namespace of process {pid}, "
                                   f"{reason or 'not reachable from the supervisor'}")

    def removed_dir(self, path: str) -> None:
        """Empty directory ``path`` is about to be removed: its own entry is all it
        holds (its children, if it had any, were recorded as they went)."""
        if self.ignored(path) or self.covered(path):
            return
        self.entry(os.path.dirname(path))
        self.entry(path)

    def object(self, path: str, *, content: bool) -> None:
        """What ``path`` names is about to change: its content (``content``) or only
        its metadata.  A directory records its own entry; anything else its tree."""
        if self.ignored(path) or self.covered(path):
            return
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return   # nothing there: the syscall fails with ENOENT and changes nothing
        except OSError:   # cannot look: record the path whole, the capture says what it missed
            self.entry(os.path.dirname(path))
            self._record(path, tree=True)
            return
        if stat.S_ISDIR(st.st_mode):
            self.entry(path)
            return
        if stat.S_ISCHR(st.st_mode) | stat.S_ISBLK(st.st_mode) \
                | stat.S_ISFIFO(st.st_mode) | stat.S_ISSOCK(st.st_mode):
            return   # writing into a device, pipe or socket changes no file
        # a restore rewrites a file by temp file + rename, moving its directory's mtime
        self.entry(os.path.dirname(path))
        self._file(path, st)

    def _file(self, path: str, st: os.stat_result | None = None) -> None:
        """``path``'s tree; a file with other hard links is recorded with its whole
        directory (one level), so the restore links the group again."""
        if st is None:
            try:
                st = os.lstat(path)
            except OSError:
                st = None
        if st is None or not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:
            self._record(path, tree=True)
            return
        folder = os.path.dirname(path)
        mates = 0
        with os.scandir(folder) as it:
            children = list(it)
        for child in children:
            try:
                cst = child.stat(follow_symlinks=False)
            except OSError:
                continue
            if (cst.st_dev, cst.st_ino) == (st.st_dev, st.st_ino):
                mates += 1
            (self.entries if child.is_dir(follow_symlinks=False) else self.trees).add(child.path)
        self.entries.add(folder)
        self._record(folder, tree=False, depth=1)
        if mates < st.st_nlink:
            self.uncaptured.append(
                f"{path}: {st.st_nlink - mates} of its hard links lie outside {folder}; a "
                "restore brings its bytes back but not those links")

    def entry(self, path: str) -> None:
        """Directory ``path``'s own entry (mode, owner, times, xattrs)."""
        if path in self.entries or self.ignored(path) or self.covered(path):
            return
        self.entries.add(path)
        self._record(path, tree=False)

    # ------------------------------------------------------------ storing
    def _open(self) -> str:
        if self.backup_id is None:
            self.backup_id = new_backup_id()
            self._leases.enter_context(self.store.catalog.lease(self.backup_id))
            self.store.catalog.add_backup(
                self.backup_id, label=redact(self.label), kind=KIND, tier=KIND,
                tool_call=redact_value(self.tool_call) if self.tool_call is not None else None,
                session=self.session, parent_id=self.parent_id)
        return self.backup_id

    def _record(self, path: str, *, tree: bool, depth: int = 0) -> None:
        backup_id = self._open()
        if tree:
            self.trees.add(path)
        started = time.perf_counter()
        uri = file_uri(path) + ("" if tree else f"?depth={depth}")
        if self._home.startswith(path.rstrip("/") + "/"):
            # the store inside the recorded tree (a call renaming /tmp's parent away…)
            rel = os.path.relpath(self._home, path)
            uri += ("&" if "?" in uri else "?") + f"exclude={quote(rel)}"
        target = Target.parse(uri)
        view = RecordingBlobs(self.store.blobs)
        view.max_file_size = self._quota.max_file_size
        snap, doc = _store_snapshot(self.store, self._connector, target, view, None)
        view.flush()
        named = {d for d in digests_in(doc.raw) - view.touched
                 if self.store.blobs.stored_size(d)}
        self.store.catalog.add_snapshot(
            SnapshotRow(backup_id, self.count, "file", snap.target, doc.digest, doc.count),
            view.touched | named)
        self.uncaptured += [f"{path}: {u}" for u in snap.uncaptured]
        self.count += 1
        self.stored += view.bytes_written
        self.logical += view.bytes_seen
        self.store.blobs.flush()
        self.seconds += time.perf_counter() - started
        if self.count == 1:
            # complete from the first record on, with no expected count until it is sealed:
            # a killed supervisor leaves a backup that restores what it recorded
            self._finish(None)

    def _finish(self, count: int | None) -> None:
        assert self.backup_id is not None
        self.store.catalog.finish_backup(
            self.backup_id, status="complete", stored_bytes=self.stored,
            logical_bytes=self.logical, seconds=self.seconds, snapshots=count)

    def close(self) -> None:
        """Seal the backup (its sizes and snapshot count) and release its lease."""
        try:
            if self._links:
                assert self.backup_id is not None
                self.store.catalog.add_trash_many(self.backup_id, self._links)
                self._links = []
            if self.backup_id is not None:
                self._finish(self.count)
        finally:
            if self._journal is not None:
                os.close(self._journal)
                self._journal = None
            self._leases.close()
