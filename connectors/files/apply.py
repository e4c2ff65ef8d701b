"""Bringing a tree back to a captured state, in place, without escaping it.

Order (each step is idempotent, so a restore killed half-way is finished by
running it again):

1. validate every snapshot path — relative, no ``..``, no NUL — before any write;
2. plan by comparing the live tree with the snapshot (files hashed, not stored);
3. verify every blob the plan needs, so a corrupt or missing blob stops the
   restore before anything is written;
4. remove what the snapshot does not have (deepest first; ``overwrite`` only);
5. create and rewrite top-down in capture order: directories, files (written
   to a temp file beside the final one and renamed; a blob the store cloned
   is cloned back where the filesystem can), symlinks, FIFOs, device
   nodes, hardlinks to their group's first path.  A directory that is not
   there live is built under a hidden name with everything beneath it written
   in place (:mod:`.dirfd`, *staged subtrees*);
6. put metadata back bottom-up (children before parents, so directory mtimes
   stick): xattrs, owner, mode (after chown, which clears setuid), then times;
   a staged directory is renamed to its name once its own metadata is set, so a
   restore that stops before leaves none of it in place (a restore after
   ``rm -rf`` leaves the target absent until its whole tree is there).

Every write goes through directory file descriptors (:mod:`.dirfd`): a path
is reached component by component without following a symlink, and the
target's parent must resolve where it did at capture — a symlink put in the
way is replaced (``overwrite``), kept and not written through (``merge``), or
stops the restore before it writes; it is never followed.  The snapshot's root
must be its target's path.  Hardlink groups are re-linked to their first path
whenever that path is rewritten; sparse files get their holes back; a file
whose content was not captured (over the per-file cap) keeps its live content.
Temporary files of a killed restore (``.preimage-tmp-*``) are removed.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

from preimage.connectors.files.dirfd import TreeHandle, shown
from preimage.connectors.files.planned import PlannedEntry
from preimage.connectors.files.walk import CLONE_MIN, Exclude, Walker, file_type, resolve_root
from preimage.interface import crash as _crash
from preimage.interface.blobs import BlobStore
from preimage.interface.errors import (
    BlobCorruptError,
    BlobMissingError,
    RestoreConflictError,
    RestoreError,
    UnsafePathError,
)
from preimage.restoration import ConflictMode, Outcome, RestorePolicy, RestoreReport
from preimage.snapshot_schemas.files import FileEntry, FileSnapshot

_AHEAD = 256   # files whose blobs the store is told about at once, before they are written
_WINDOWS = 8   # that many windows ahead of the file being written
_NOT_CAPTURED = "its content was not captured (over the store's per-file cap); left as it is"


def check_path(rel: str) -> None:
    """Raise :class:`UnsafePathError` unless ``rel`` stays inside its root."""
    if rel == ".":
        return
    if not rel or "\x00" in rel:
        raise UnsafePathError(rel, "empty or contains NUL")
    if rel.startswith("/"):
        raise UnsafePathError(rel, "absolute path in a snapshot")
    # split, not parsed: an empty part is a doubled or trailing slash, refused as well
    if any(p in ("..", ".", "") for p in rel.split("/")):
        raise UnsafePathError(rel, "'..' or '.' component in a snapshot path")


def check_snapshot(snap: FileSnapshot) -> None:
    """Raise :class:`UnsafePathError` unless the snapshot's entries form a tree a restore
    can write: every path stays inside the root and appears once, the root entry has the
    snapshot's root type, and nothing lies beneath an entry that is not a directory (a
    symlink the restore would make, then write through).  Checked before any write, so a
    crafted or damaged document is refused whole instead of failing half-way."""
    _check_tree(snap.items, snap.root_type)


def _check_tree(entries: Iterable[FileEntry | PlannedEntry], root_type: str | None) -> None:
    types: dict[str, str] = {}
    for e in entries:
        check_path(e.path)
        if e.hardlink_to is not None:
            check_path(e.hardlink_to)
        if e.path in types:
            raise UnsafePathError(e.path, "listed twice in the snapshot")
        types[e.path] = e.type
    root = types.get(".")
    if root is not None and root_type is not None and root != root_type:
        raise UnsafePathError(".", f"the root entry is a {root}, but the snapshot's root is a "
                                   f"{root_type}")
    for path in types:
        if path == ".":
            continue
        up = _parent(path)
        kind = types.get(up, root_type if up == "." else None)
        if kind is not None and kind != "dir":
            raise UnsafePathError(path, f"it lies beneath {up}, which the snapshot makes a {kind}")


def _content_equal(want: PlannedEntry, have: FileEntry) -> bool:
    if want.type != have.type:
        return False
    if want.type == "file":
        # no digest: the content was never read, so the live content stands
        return want.digest is None or (want.digest == have.digest and want.extents == have.extents)
    if want.type == "symlink":
        return want.link_target == have.link_target
    if want.type in ("chardev", "blockdev"):
        return want.rdev == have.rdev
    return True


def _meta_equal(want: PlannedEntry, have: FileEntry) -> bool:
    return (
        (want.type == "symlink" or want.mode == have.mode)
        and want.uid == have.uid
        and want.gid == have.gid
        and want.mtime_ns == have.mtime_ns
        and want.atime_ns == have.atime_ns
        and want.xattrs == have.xattrs
    )


@dataclass
class Plan:
    """What a restore will do, path by path."""

    remove: list[str]           # live paths to delete (deepest first)
    write: list[PlannedEntry]   # entries to (re)create, capture order
    fix: list[PlannedEntry]     # entries whose metadata to set, capture order
    unchanged: list[str]
    skipped: list[tuple[str, str]]
    debris: list[str] = field(default_factory=list)   # temp files of a killed restore
    # the root is not there: the whole tree is staged, and published only once every
    # blob verified as it was read (so none is read before the first write)
    staged_whole: bool = False


class TreeRestorer:
    """Restores one :class:`FileSnapshot` under the policy given.

    ``exclude`` (the predicate the snapshot was walked with) keeps live paths
    out of the plan: they are neither compared nor removed, and a directory
    removed because the snapshot lacks it is kept when an excluded path
    remains inside it — unless ``prune_new``: then everything inside a
    directory the snapshot lacks goes with it (a depth-limited snapshot, whose
    exclusion is only a depth: what is inside a new directory is new too).
    """

    def __init__(
        self,
        snap: FileSnapshot,
        blobs: BlobStore,
        policy: RestorePolicy,
        *,
        exclude: Exclude | None = None,
        prune_new: bool = False,
    ) -> None:
        self.snap = snap
        self.blobs = blobs
        self.policy = policy
        self.exclude = exclude
        self.prune_new = prune_new
        self.root = resolve_root(snap.root)
        self.report = RestoreReport(
            target=snap.target, connector="file", dry_run=policy.dry_run
        )
        self._tree: TreeHandle | None = None

    @property
    def tree(self) -> TreeHandle:
        """The root's directory handle (its parent checked against the capture)."""
        if self._tree is None:
            self._tree = TreeHandle(self.root, self.snap.root_parent)
        return self._tree

    # ------------------------------------------------------------ scope
    def _in_scope(self, rel: str) -> bool:
        if self.policy.keys is not None and entry_key(rel) not in self.policy.keys:
            return False  # an undo: exactly these paths, never their parents or children
        if not self.policy.only:
            return True
        for o in self.policy.only:
            o = o.strip("/")
            if rel == o or rel.startswith(o + "/"):
                return True
        return False

    # ------------------------------------------------------------ plan
    def plan(self) -> Plan:
        """Compare the live tree with the snapshot; raise before anything is written
        when a path is unsafe or (policy ``refuse``) anything changed."""
        # the snapshot's items read once, kept in their compact form (a stored document
        # is read back chunk by chunk: each pass over snap.items would read it again)
        wanted: dict[str, PlannedEntry] = {}
        for item in self.snap.items:
            if item.path in wanted:
                raise UnsafePathError(item.path, "listed twice in the snapshot")
            wanted[item.path] = PlannedEntry.of(item)
        _check_tree(wanted.values(), self.snap.root_type)
        walker = Walker(self.tree.root, self.blobs, store_content=False, exclude=self.exclude)
        live = {e.path: e for e in walker.entries()}
        plan = Plan([], [], [], [], [], debris=walker.debris)
        overwrite = self.policy.conflict is ConflictMode.OVERWRITE
        merge = self.policy.conflict is ConflictMode.MERGE
        conflicts: list[str] = []
        for rel in sorted(set(live) - set(wanted), key=lambda p: (-p.count("/"), p)):
            if not self._in_scope(rel):
                continue
            if rel == "." and self.snap.root_type is None:
                conflicts.append(rel)
                if overwrite:
                    plan.remove.append(rel)
                continue
            if overwrite:
                plan.remove.append(rel)
            elif merge:
                plan.skipped.append((rel, "created after the capture; merge keeps it"))
            conflicts.append(rel)
        kept_in_place: list[str] = []   # snapshot dirs merge leaves as the non-dir they are now
        rewritten: set[str] = set()
        # Hardlink groups: the paths sharing each live inode, and each captured path's group
        # (its first path), so a file linked since the capture to a path it was not linked
        # to then (`hardlink a b`, `cp -l`) is written again as a file of its own.
        mates: dict[int, list[str]] = {}
        for p, h in live.items():
            if h.type == "file" and h.inode is not None:
                mates.setdefault(h.inode, []).append(p)
        group = {e.path: e.hardlink_to or e.path for e in wanted.values()}
        for e in wanted.values():
            if not self._in_scope(e.path):
                continue
            blocker = next((k for k in kept_in_place if _under(e.path, k)), None)
            if blocker is not None:
                plan.skipped.append(
                    (e.path, f"inside {blocker}, which is no longer a directory; merge keeps it")
                )
                continue
            have = live.get(e.path)
            if have is None:
                if e.type == "file" and e.digest is None and e.hardlink_to is None:
                    plan.skipped.append((e.path, _NOT_CAPTURED.replace("; left as it is", "")))
                    continue
                plan.write.append(e)
                plan.fix.append(e)
                rewritten.add(e.path)
                continue
            same_content = _content_equal(e, have)
            same_links = e.hardlink_to is None or (
                e.hardlink_to not in rewritten
                and (live.get(e.hardlink_to) is None
                     or live[e.hardlink_to].inode == have.inode)
            )
            if same_links and e.type == "file" and have.type == "file" \
                    and have.inode is not None:
                same_links = all(group.get(m) == group[e.path]
                                 for m in mates.get(have.inode, []))
            if same_content and same_links and _meta_equal(e, have):
                plan.unchanged.append(e.path)
                continue
            if same_content and same_links and have.type == "file" \
                    and self._linked_outside(e.path, mates.get(have.inode or -1, [])):
                # a hard link to a file outside the target (planted, or made since): its
                # mode, owner and times would be set on that file too — write this one
                # again as a file of its own, and leave the other alone
                same_links = False
            conflicts.append(e.path)
            if not overwrite:
                if merge:
                    plan.skipped.append((e.path, "changed since the capture; merge keeps it"))
                    if e.type == "dir" and have.type != "dir":
                        kept_in_place.append(e.path)
                continue
            if not (same_content and same_links):
                if have.type != e.type and (e.path != "." or have.type == "dir" or e.type == "dir"):
                    plan.remove.append(e.path)
                plan.write.append(e)
                rewritten.add(e.path)
            plan.fix.append(e)
        if self.policy.conflict is ConflictMode.REFUSE and conflicts:
            raise RestoreConflictError(self.snap.target, conflicts)
        # the root itself is written, where nothing is: everything goes beneath it, hidden
        plan.staged_whole = "." not in live and any(e.path == "." for e in plan.write)
        plan.remove.sort(key=lambda p: (-p.count("/") if p != "." else 1, p))
        # a type change removes before it writes; a removed dir takes its subtree
        self._fix_parents(plan, wanted)
        return plan

    def _linked_outside(self, rel: str, mates: list[str]) -> bool:
        """Whether live file ``rel`` has more hard links than the target holds."""
        st = self.tree.lstat(rel)
        return st is not None and st.st_nlink > max(len(mates), 1)

    def _fix_parents(self, plan: Plan, wanted: dict[str, PlannedEntry]) -> None:
        """Directories whose entries are written or removed get their metadata set again.

        Creating, replacing (temp file + rename) or removing an entry moves its
        directory's mtime, so a directory that matched before the restore
        would not match after it.
        """
        changed = [*plan.remove, *(e.path for e in plan.write)]
        parents = {_parent(rel) for rel in changed if rel != "."}
        fixing = {e.path for e in plan.fix}
        added = False
        for rel in parents:
            entry = wanted.get(rel)
            # Under exact keys too: a parent outside them gets back the metadata it had
            # just before (the synthesized snapshot holds its live state), so writing a
            # child does not move its mtime.
            if (entry is None or entry.path in fixing or entry.type != "dir"
                    or not (self._in_scope(rel) or self.policy.exact)):
                continue
            plan.fix.append(entry)
            added = True
            if rel in plan.unchanged:
                plan.unchanged.remove(rel)
        if added:
            order = {path: i for i, path in enumerate(wanted)}
            plan.fix.sort(key=lambda e: order[e.path])

    # ------------------------------------------------------------ run
    def run(self, plan: Plan | None = None) -> RestoreReport:
        """Carry out ``plan`` (made now when not given); see the module docstring."""
        plan = plan if plan is not None else self.plan()
        if self.policy.dry_run:
            for rel in plan.remove:
                self.report.add(rel, Outcome.PLANNED, "remove")
            for e in plan.write:
                self.report.add(e.path, Outcome.PLANNED, f"write {e.type}")
            writing = {id(e) for e in plan.write}
            for e in plan.fix:
                if id(e) not in writing:
                    self.report.add(e.path, Outcome.PLANNED, "set metadata")
            for rel in plan.unchanged:
                self.report.add(rel, Outcome.UNCHANGED)
            for rel, why in plan.skipped:
                self.report.add(rel, Outcome.SKIPPED, reason=why)
            return self.report
        try:
            self._preflight(plan)
            self._ensure_parent()
            self._apply(plan)
        except OSError as exc:
            raise RestoreError(_os_failure(exc, self.tree)) from exc
        finally:
            self.tree.close()
        for rel in plan.unchanged:
            self.report.add(rel, Outcome.UNCHANGED)
        for rel, why in plan.skipped:
            self.report.add(rel, Outcome.SKIPPED, reason=why)
        return self.report

    def _apply(self, plan: Plan) -> None:
        tree = self.tree
        rewritten = {e.path for e in plan.write}
        for rel in plan.debris:
            tree.remove(rel, only_if_empty=False)
        for rel in plan.remove:
            # Exact keys (an undo) never take a directory's other children with it; a
            # depth-limited scope removes an entry made inside it whole (``prune_new``).
            kept = tree.remove(rel, only_if_empty=(self.exclude is not None and not self.prune_new)
                               or self.policy.exact)
            if kept:
                self.report.add(rel, Outcome.SKIPPED, "remove", kept)
            elif rel not in rewritten:
                self.report.add(rel, Outcome.REMOVED, "remove")
        not_written: set[str] = set()
        for i, e in enumerate(plan.write):
            if i % _AHEAD == 0:
                # the store may look up (or fetch) the blobs of the files _WINDOWS windows
                # on while these are written; at the start, of all the windows before
                start = i + (_WINDOWS - 1) * _AHEAD if i else 0
                self.blobs.will_read([w.digest for w in plan.write[start : i + _WINDOWS * _AHEAD]
                                      if w.type == "file" and w.digest and w.hardlink_to is None])
            _crash.point("restore-write")
            reason = self._write(e)
            if reason:
                not_written.add(e.path)
                self.report.add(e.path, Outcome.SKIPPED, f"write {e.type}", reason)
        for e in reversed(plan.fix):
            if e.path not in not_written:
                tree.set_metadata(
                    e.path, is_link=e.type == "symlink", xattrs=e.xattrs, uid=e.uid, gid=e.gid,
                    mode=e.mode, atime_ns=e.atime_ns, mtime_ns=e.mtime_ns,
                )
            if tree.staged(e.path):
                # its subtree is written and set, its parent's times not yet: in place now
                tree.publish(e.path)
        for e in plan.fix:
            if e.path in not_written:
                continue
            action = f"write {e.type}" if e.path in rewritten else "set metadata"
            self.report.add(e.path, Outcome.RESTORED, action)

    def _preflight(self, plan: Plan) -> None:
        if plan.staged_whole:
            return
        needed = (e.digest for e in plan.write
                  if e.type == "file" and e.digest and e.hardlink_to is None)
        try:
            self.blobs.verify_many(needed)
        except (BlobCorruptError, BlobMissingError) as exc:
            where = next((e.path for e in plan.write if e.digest == exc.digest), ".")
            raise type(exc)(exc.digest, path=shown(self.tree.abs(where))) from exc

    def _ensure_parent(self) -> None:
        tree = self.tree
        if not tree.parent_exists():
            tree.make_parent()
        tree.sweep_stages()
        if self.snap.root_type is not None and tree.lstat(".") is None:
            probe = ".preimage-tmp-probe-" + str(os.getpid())
            fd = tree.parent_fd()
            try:
                os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=fd))
                os.unlink(probe, dir_fd=fd)
            except OSError as exc:
                raise RestoreError(
                    f"cannot write into {shown(tree.real_parent)}: {exc.strerror} — the parent "
                    "of the target is read-only; make it writable and run the restore again; "
                    "nothing was written"
                ) from exc

    def _write(self, e: PlannedEntry) -> str:
        """Create ``e``; return a reason when it cannot be created by a client."""
        tree = self.tree
        tree.make_writable(_parent(e.path))
        if e.type == "dir":
            tree.mkdir(e.path)
            return ""
        if e.type == "socket":
            return "sockets belong to the process that listens on them; it re-creates them"
        if e.hardlink_to is not None and tree.hardlink(e.path, e.hardlink_to):
            return ""
        # the lead is out of scope or gone: write the content on its own
        if e.type == "file":
            if e.digest is None:
                return _NOT_CAPTURED
            where = shown(f"{tree.root}/{e.path}")
            digest = e.digest
            source = self.blobs.clone_source(digest) if e.size >= CLONE_MIN else None
            if source is None:
                tree.write_file(e.path, self.blobs.chunks(digest, path=where), e.size, e.extents)
            else:   # a cloned blob, verified by the preflight: share its extents
                try:
                    tree.clone_file(e.path, source,
                                    lambda: self.blobs.chunks(digest, path=where),
                                    e.size, e.extents)
                finally:
                    os.close(source)
        elif e.type == "symlink":
            tree.symlink(e.path, e.link_target or "")
        elif e.type == "fifo":
            tree.fifo(e.path)
        elif e.type in ("chardev", "blockdev"):
            kind = stat.S_IFCHR if e.type == "chardev" else stat.S_IFBLK
            major, minor = e.rdev or (0, 0)
            try:
                tree.device(e.path, kind, major, minor)
            except PermissionError:
                return "creating device nodes needs root"
        return ""


def entry_key(rel: str) -> str:
    """The natural key of the entry at ``rel`` (as :meth:`FileEntry.natural_key` spells it)."""
    return f"kind=file|path={rel}"


def _under(path: str, top: str) -> bool:
    return top == "." or path.startswith(top + "/")


def _parent(rel: str) -> str:
    return "." if rel == "." else (rel.rpartition("/")[0] or ".")


def _os_failure(exc: OSError, tree: TreeHandle) -> str:
    where = shown(exc.filename) if isinstance(exc.filename, str) else shown(tree.root)
    if exc.errno == errno.ENOSPC:
        return (f"the filesystem holding {shown(tree.root)} is full — free space and run the "
                "same restore again to finish it")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (f"cannot write {where}: {exc.strerror} — fix the permissions and run the same "
                "restore again to finish it")
    return f"cannot write under {shown(tree.root)}: {exc.strerror} ({where})"


__all__ = ["Plan", "TreeRestorer", "check_path", "entry_key", "file_type"]
