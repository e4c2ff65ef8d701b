"""Bringing a tree back to a captured state, in place, without escaping it.

Order (each step is idempotent, so a restore killed half-way is finished by
running it again):

1. validate every snapshot path — relative, no ``..``, no NUL — before any write;
2. plan by comparing the live tree with the snapshot (files hashed, not stored),
   both sides rows of a temporary table (:mod:`.plan_table`), each entry's action
   recorded in its row;
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

Memory does not grow with the tree: the writes read the plan's rows forward and the
metadata pass backward, a page at a time, and the report keeps a count per outcome
with its results in a temporary file past a few thousand
(:class:`~preimage.restoration.report.ItemLog`).  What the plan lists in memory is
what a user must see: removals, skipped entries, and the conflicts a refusal names.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from preimage.connectors.files.dirfd import Meta, TreeHandle, shown
from preimage.connectors.files.plan_table import (
    FIX,
    NONE,
    PAGE,
    UNCHANGED,
    WRITE,
    PlanTable,
    check_path,
    parent_of,
    temporary_space,
)
from preimage.connectors.files.planned import PlannedEntry
from preimage.connectors.files.walk import CLONE_MIN, Exclude, Walker, file_type, resolve_root
from preimage.interface import crash as _crash
from preimage.interface.blobs import BlobStore
from preimage.interface.errors import (
    BlobCorruptError,
    BlobMissingError,
    RestoreConflictError,
    RestoreError,
)
from preimage.restoration import ConflictMode, Outcome, RestorePolicy, RestoreReport
from preimage.snapshot_schemas.files import FileSnapshot

_AHEAD = 256   # files whose blobs the store is told about at once, before they are written
_WINDOWS = 8   # that many windows ahead of the file being written
_NOT_CAPTURED = "its content was not captured (over the store's per-file cap); left as it is"
_KEEP_ONE = 256 << 10   # a blob written again later is kept in memory up to this size …
_KEEP_ALL = 16 << 20    # … and while all those kept stay under this


class _Repeats:
    """The blobs a restore writes to more than one file, each read (and verified) once.

    A tree holds the same content in many files (``/usr/include``: 2,048 of its 7,956
    files repeat another's); the store keeps it once.  A small repeated blob is kept in
    memory from its first file to its last, within :data:`_KEEP_ALL`, so the later files
    are written from those bytes — no index look-up, decompression or SHA-256 again, as
    ``restic restore`` writes a blob to every file that needs it from one read.
    """

    def __init__(self, uses: dict[str, int]) -> None:
        self._left = uses                    # writes still to come, per repeated blob
        self._held: dict[str, bytes] = {}
        self._bytes = 0

    def held(self, digest: str | None) -> bool:
        return digest in self._held

    def chunks(self, digest: str, size: int,
               read: Callable[[], Iterable[bytes]]) -> Iterable[bytes]:
        """The blob's bytes for one file: kept ones, or ``read()``'s (kept when the blob
        is written again later and fits)."""
        left = self._left.pop(digest, 0)
        data = self._held.pop(digest, None)
        if data is not None:
            self._bytes -= len(data)
        elif left > 1 and size <= _KEEP_ONE and self._bytes + size <= _KEEP_ALL:
            data = b"".join(read())   # read whole: the SHA-256 is checked before it is kept
        if left > 1:
            self._left[digest] = left - 1
            if data is not None:
                self._held[digest] = data
                self._bytes += len(data)
        return read() if data is None else (data,)


def check_snapshot(snap: FileSnapshot) -> None:
    """Raise :class:`UnsafePathError` unless the snapshot's entries form a tree a restore
    can write: every path stays inside the root and appears once, the root entry has the
    snapshot's root type, and nothing lies beneath an entry that is not a directory (a
    symlink the restore would make, then write through).  Checked before any write, so a
    crafted or damaged document is refused whole instead of failing half-way."""
    with temporary_space(), PlanTable() as table:
        table.add_wanted(snap.items, snap.root_type)


def _content_equal(want: PlannedEntry, have: PlannedEntry) -> bool:
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


def _meta_equal(want: PlannedEntry, have: PlannedEntry) -> bool:
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
    """What a restore will do, path by path.

    The entries it writes or sets metadata on are rows of ``table`` (capture order),
    read back a page at a time; what a user must see is listed here.  Close it with
    :meth:`close` once it has run (:meth:`TreeRestorer.run` does).
    """

    table: PlanTable
    remove: list[str]           # live paths to delete (deepest first)
    skipped: list[tuple[str, str]]
    debris: list[str] = field(default_factory=list)   # temp files of a killed restore
    # the root is not there: the whole tree is staged, and published only once every
    # blob verified as it was read (so none is read before the first write)
    staged_whole: bool = False

    @property
    def write(self) -> Iterator[PlannedEntry]:
        """Entries to (re)create, capture order."""
        return self.table.entries((WRITE,))

    @property
    def fix(self) -> Iterator[PlannedEntry]:
        """Entries whose metadata to set (every written one among them), capture order."""
        return self.table.entries((FIX, WRITE))

    @property
    def unchanged(self) -> Iterator[str]:
        """Paths whose live entry already matches, capture order."""
        return self.table.paths(UNCHANGED)

    def close(self) -> None:
        """Drop the plan's table."""
        self.table.close()


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
        self._repeats = _Repeats({})

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
        with temporary_space():
            table = PlanTable()
            try:
                return self._plan(table)
            except BaseException:
                table.close()
                raise

    def _plan(self, table: PlanTable) -> Plan:
        # the snapshot's items read once, into the plan's table (a stored document is
        # read back chunk by chunk: each pass over snap.items would read it again)
        table.add_wanted(self.snap.items, self.snap.root_type)
        walker = Walker(self.tree.root, self.blobs, store_content=False, exclude=self.exclude)
        table.add_live(walker.entries())
        plan = Plan(table, [], [], debris=walker.debris)
        if self.policy.keys is None and not self.policy.only and table.live_empty():
            # Nothing is there (a removed tree): every entry in scope is written, but a file
            # captured without its content — what the comparison below decides entry by
            # entry, decided at once.
            reason = _NOT_CAPTURED.replace("; left as it is", "")
            plan.skipped.extend((rel, reason) for rel in table.write_all())
            plan.staged_whole = table.act_of(".") == WRITE
            self._fix_parents(plan)
            return plan
        overwrite = self.policy.conflict is ConflictMode.OVERWRITE
        merge = self.policy.conflict is ConflictMode.MERGE
        refuse = self.policy.conflict is ConflictMode.REFUSE
        conflicts: list[str] = []   # what a refusal names
        for rel in sorted(table.live_only(), key=lambda p: (-p.count("/"), p)):
            if not self._in_scope(rel):
                continue
            if refuse:
                conflicts.append(rel)
            if rel == "." and self.snap.root_type is None:
                if overwrite:
                    plan.remove.append(rel)
                continue
            if overwrite:
                plan.remove.append(rel)
            elif merge:
                plan.skipped.append((rel, "created after the capture; merge keeps it"))
        kept_in_place: list[str] = []   # snapshot dirs merge leaves as the non-dir they are now
        # Hardlink groups: the live paths sharing each inode, and each captured path's group
        # (its first path), so a file linked since the capture to a path it was not linked
        # to then (`hardlink a b`, `cp -l`) is written again as a file of its own.
        mates = table.shared_inodes()
        acts: list[tuple[int, int]] = []   # decided for this page, recorded after it
        pending: dict[str, int] = {}       # the same, by path, until recorded
        for i, e, have in table.pairs():
            act = self._act(e, have, plan, kept_in_place, mates, pending)
            if act is None:   # changed since the capture, and the policy keeps it
                if refuse:
                    conflicts.append(e.path)
                continue
            if act != NONE:
                acts.append((act, i))
                pending[e.path] = act
            if len(acts) >= PAGE:
                table.set_acts(acts)
                acts.clear()
                pending.clear()
        table.set_acts(acts)
        if refuse and conflicts:
            raise RestoreConflictError(self.snap.target, conflicts)
        # the root itself is written, where nothing is: everything goes beneath it, hidden
        plan.staged_whole = not table.has_live(".") and table.act_of(".") == WRITE
        plan.remove.sort(key=lambda p: (-p.count("/") if p != "." else 1, p))
        # a type change removes before it writes; a removed dir takes its subtree
        self._fix_parents(plan)
        return plan

    def _act(self, e: PlannedEntry, have: PlannedEntry | None, plan: Plan,
             kept_in_place: list[str], mates: dict[int, list[str]],
             pending: dict[str, int]) -> int | None:
        """What to do with captured entry ``e`` (live ``have``); None when it changed
        since the capture and the policy keeps it (``merge``: skipped) or refuses it."""
        if not self._in_scope(e.path):
            return NONE
        blocker = next((k for k in kept_in_place if _under(e.path, k)), None)
        if blocker is not None:
            plan.skipped.append(
                (e.path, f"inside {blocker}, which is no longer a directory; merge keeps it")
            )
            return NONE
        if have is None:
            if e.type == "file" and e.digest is None and e.hardlink_to is None:
                plan.skipped.append((e.path, _NOT_CAPTURED.replace("; left as it is", "")))
                return NONE
            return WRITE
        same = _content_equal(e, have) and self._same_links(e, have, plan.table, mates, pending)
        if same and _meta_equal(e, have):
            return UNCHANGED
        if same and have.type == "file" \
                and self._linked_outside(e.path, mates.get(have.inode or -1, [])):
            # a hard link to a file outside the target (planted, or made since): its
            # mode, owner and times would be set on that file too — write this one
            # again as a file of its own, and leave the other alone
            same = False
        if self.policy.conflict is not ConflictMode.OVERWRITE:
            if self.policy.conflict is ConflictMode.MERGE:
                plan.skipped.append((e.path, "changed since the capture; merge keeps it"))
                if e.type == "dir" and have.type != "dir":
                    kept_in_place.append(e.path)
            return None
        if same:
            return FIX
        if have.type != e.type and (e.path != "." or have.type == "dir" or e.type == "dir"):
            plan.remove.append(e.path)
        return WRITE

    @staticmethod
    def _same_links(e: PlannedEntry, have: PlannedEntry, table: PlanTable,
                    mates: dict[int, list[str]], pending: dict[str, int]) -> bool:
        """Whether live ``have`` is linked as captured ``e`` was: to its group's first
        path (not rewritten by this plan), and to no live path outside its group."""
        if e.hardlink_to is not None:
            act = pending.get(e.hardlink_to)
            if (act if act is not None else table.act_of(e.hardlink_to)) == WRITE:
                return False
            there, inode = table.live_inode(e.hardlink_to)
            if there and inode != have.inode:
                return False
        if e.type == "file" and have.type == "file" and have.inode is not None:
            linked = mates.get(have.inode, [])
            if len(linked) > 1:
                group = table.group_of(e.path)
                return all(table.group_of(m) == group for m in linked)
        return True

    def _linked_outside(self, rel: str, mates: list[str]) -> bool:
        """Whether live file ``rel`` has more hard links than the target holds."""
        st = self.tree.lstat(rel)
        return st is not None and st.st_nlink > max(len(mates), 1)

    def _fix_parents(self, plan: Plan) -> None:
        """Directories whose entries are written or removed get their metadata set again.

        Creating, replacing (temp file + rename) or removing an entry moves its
        directory's mtime, so a directory that matched before the restore
        would not match after it.
        """
        # Under exact keys too: a parent outside them gets back the metadata it had
        # just before (the synthesized snapshot holds its live state), so writing a
        # child does not move its mtime.
        plan.table.set_acts((FIX, i) for i, rel in plan.table.parents_to_fix(plan.remove)
                            if self._in_scope(rel) or self.policy.exact)

    # ------------------------------------------------------------ run
    def run(self, plan: Plan | None = None) -> RestoreReport:
        """Carry out ``plan`` (made now when not given); see the module docstring."""
        plan = plan if plan is not None else self.plan()
        try:
            return self._run(plan)
        finally:
            plan.close()

    def _run(self, plan: Plan) -> RestoreReport:
        if self.policy.dry_run:
            for rel in plan.remove:
                self.report.add(rel, Outcome.PLANNED, "remove")
            for e in plan.write:
                self.report.add(e.path, Outcome.PLANNED, f"write {e.type}")
            for e in plan.table.entries((FIX,)):
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
        table = plan.table
        for rel in plan.debris:
            tree.remove(rel, only_if_empty=False)
        for rel in plan.remove:
            # Exact keys (an undo) never take a directory's other children with it; a
            # depth-limited scope removes an entry made inside it whole (``prune_new``).
            kept = tree.remove(rel, only_if_empty=(self.exclude is not None and not self.prune_new)
                               or self.policy.exact)
            if kept:
                self.report.add(rel, Outcome.SKIPPED, "remove", kept)
            elif table.act_of(rel) != WRITE:
                self.report.add(rel, Outcome.REMOVED, "remove")
        not_written: set[str] = set()
        self._repeats = _Repeats(table.repeated_digests())
        writes = plan.write
        ahead: deque[PlannedEntry] = deque()   # the entries read, not yet written
        i = 0
        while True:
            if i % _AHEAD == 0:
                # the store may look up (or fetch) the blobs of the files _WINDOWS windows
                # on while these are written; at the start, of all the windows before
                known = len(ahead)
                ahead.extend(itertools.islice(writes, _WINDOWS * _AHEAD - known))
                self.blobs.will_read([w.digest for w in itertools.islice(ahead, known, None)
                                      if w.type == "file" and w.digest and w.hardlink_to is None
                                      and not self._repeats.held(w.digest)])
            if not ahead:
                break
            e = ahead.popleft()
            i += 1
            _crash.point("restore-write")
            reason = self._write(e)
            if reason:
                not_written.add(e.path)
                self.report.add(e.path, Outcome.SKIPPED, f"write {e.type}", reason)
        for e, act in table.entries_to_set():
            if e.path not in not_written and not _set_as_written(e, act):
                tree.set_metadata(
                    e.path, is_link=e.type == "symlink", xattrs=e.xattrs, uid=e.uid, gid=e.gid,
                    mode=e.mode, atime_ns=e.atime_ns, mtime_ns=e.mtime_ns,
                )
            if tree.staged(e.path):
                # its subtree is written and set, its parent's times not yet: in place now
                tree.publish(e.path)
        for path, type_, act in table.kinds_with_act((FIX, WRITE)):
            if path in not_written:
                continue
            action = f"write {type_}" if act == WRITE else "set metadata"
            self.report.add(path, Outcome.RESTORED, action)

    def _preflight(self, plan: Plan) -> None:
        if plan.staged_whole:
            return
        needed = (digest for digest, _path in plan.table.written_digests())
        try:
            self.blobs.verify_many(needed)
        except (BlobCorruptError, BlobMissingError) as exc:
            where = plan.table.first_written_with(exc.digest) or "."
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
        tree.make_writable(parent_of(e.path))
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
            meta = Meta(e.xattrs, e.uid, e.gid, e.mode, e.atime_ns, e.mtime_ns)
            if source is None:
                chunks = self._repeats.chunks(
                    digest, e.size, lambda: self.blobs.chunks(digest, path=where))
                tree.write_file(e.path, chunks, e.size, e.extents, meta)
            else:   # a cloned blob, verified by the preflight: share its extents
                try:
                    tree.clone_file(e.path, source,
                                    lambda: self.blobs.chunks(digest, path=where),
                                    e.size, e.extents, meta)
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


def _set_as_written(e: PlannedEntry, act: int) -> bool:
    """Whether ``e``'s metadata was set as it was written (a regular file this restore
    wrote from its blob, not made a hard link of another: see :meth:`_write`)."""
    return act == WRITE and e.type == "file" and e.hardlink_to is None and e.digest is not None


def entry_key(rel: str) -> str:
    """The natural key of the entry at ``rel`` (as :meth:`FileEntry.natural_key` spells it)."""
    return f"kind=file|path={rel}"


def _under(path: str, top: str) -> bool:
    return top == "." or path.startswith(top + "/")


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
