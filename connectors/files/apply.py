"""Bringing a tree back to a captured state, in place, without escaping it.

Order (each step is idempotent, so a restore killed half-way is finished by
running it again):

1. validate every snapshot path — relative, no ``..``, no NUL — before any write;
2. plan by comparing the live tree with the snapshot (files hashed, not stored);
3. verify every blob the plan needs, so a corrupt or missing blob stops the
   restore before anything is written;
4. remove what the snapshot does not have (deepest first; ``overwrite`` only);
5. create and rewrite top-down in capture order: directories, files (written
   to a temp file beside the final one and renamed), symlinks, FIFOs, device
   nodes, hardlinks to their group's first path;
6. put metadata back bottom-up (children before parents, so directory mtimes
   stick): xattrs, owner, mode (after chown, which clears setuid), then times.

Every write happens through a parent that is checked to be a real directory
inside the target — a symlinked parent is replaced, never followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from preimage._blobs import BlobStore
from preimage._errors import RestoreConflictError, RestoreError, UnsafePathError
from preimage.connectors.files.walk import Exclude, Walker, file_type
from preimage.restoration import ConflictMode, Outcome, RestorePolicy, RestoreReport
from preimage.snapshot_schemas.files import FileEntry, FileSnapshot

_TMP_PREFIX = ".preimage-tmp-"


def check_path(rel: str) -> None:
    """Raise :class:`UnsafePathError` unless ``rel`` stays inside its root."""
    if rel == ".":
        return
    if not rel or "\x00" in rel:
        raise UnsafePathError(rel, "empty or contains NUL")
    if rel.startswith("/"):
        raise UnsafePathError(rel, "absolute path in a snapshot")
    parts = PurePosixPath(rel).parts
    if any(p in ("..", ".", "") for p in parts) or rel != "/".join(parts):
        raise UnsafePathError(rel, "'..' or '.' component in a snapshot path")


def _content_equal(want: FileEntry, have: FileEntry) -> bool:
    if want.type != have.type:
        return False
    if want.type == "file":
        return want.digest == have.digest
    if want.type == "symlink":
        return want.link_target == have.link_target
    if want.type in ("chardev", "blockdev"):
        return want.rdev == have.rdev
    return True


def _meta_equal(want: FileEntry, have: FileEntry) -> bool:
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
    write: list[FileEntry]      # entries to (re)create, capture order
    fix: list[FileEntry]        # entries whose metadata to set, capture order
    unchanged: list[str]
    skipped: list[tuple[str, str]]


class TreeRestorer:
    """Restores one :class:`FileSnapshot` under the policy given.

    ``exclude`` (the predicate the snapshot was walked with) keeps live paths
    out of the plan: they are neither compared nor removed, and a directory
    removed because the snapshot lacks it is kept when an excluded path
    remains inside it.
    """

    def __init__(
        self,
        snap: FileSnapshot,
        blobs: BlobStore,
        policy: RestorePolicy,
        *,
        exclude: Exclude | None = None,
    ) -> None:
        self.snap = snap
        self.blobs = blobs
        self.policy = policy
        self.exclude = exclude
        self.root = Path(snap.root)
        self.report = RestoreReport(
            target=snap.target, connector="file", dry_run=policy.dry_run
        )
        self._written_inodes: dict[str, int] = {}

    # ------------------------------------------------------------ scope
    def _in_scope(self, rel: str) -> bool:
        if not self.policy.only:
            return True
        for o in self.policy.only:
            o = o.strip("/")
            if rel == o or rel.startswith(o + "/"):
                return True
        return False

    def _abs(self, rel: str) -> Path:
        return self.root if rel == "." else self.root / rel

    # ------------------------------------------------------------ plan
    def plan(self) -> Plan:
        for e in self.snap.items:
            check_path(e.path)
            if e.hardlink_to is not None:
                check_path(e.hardlink_to)
        wanted = {e.path: e for e in self.snap.items}
        walker = Walker(self.root, self.blobs, store_content=False, exclude=self.exclude)
        live = {e.path: e for e in walker.entries()}
        plan = Plan([], [], [], [], [])
        overwrite = self.policy.conflict is ConflictMode.OVERWRITE
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
            elif self.policy.conflict is ConflictMode.MERGE:
                plan.skipped.append((rel, "created after the capture; merge keeps it"))
            conflicts.append(rel)
        for e in self.snap.items:
            if not self._in_scope(e.path):
                continue
            have = live.get(e.path)
            if have is None:
                plan.write.append(e)
                plan.fix.append(e)
                continue
            same_content = _content_equal(e, have)
            same_links = (
                e.hardlink_to is None
                or live.get(e.hardlink_to) is None
                or live[e.hardlink_to].inode == have.inode
            )
            if same_content and same_links and _meta_equal(e, have):
                plan.unchanged.append(e.path)
                continue
            conflicts.append(e.path)
            if not overwrite:
                if self.policy.conflict is ConflictMode.MERGE:
                    plan.skipped.append((e.path, "changed since the capture; merge keeps it"))
                continue
            if not (same_content and same_links):
                if have.type != e.type and (e.path != "." or have.type == "dir" or e.type == "dir"):
                    plan.remove.append(e.path)
                plan.write.append(e)
            plan.fix.append(e)
        if self.policy.conflict is ConflictMode.REFUSE and conflicts:
            raise RestoreConflictError(self.snap.target, conflicts)
        plan.remove.sort(key=lambda p: (-p.count("/") if p != "." else 1, p))
        # a type change removes before it writes; a removed dir takes its subtree
        self._fix_parents(plan, wanted)
        return plan

    def _fix_parents(self, plan: Plan, wanted: dict[str, FileEntry]) -> None:
        """Directories whose entries are written or removed get their metadata set again.

        Creating, replacing (temp file + rename) or removing an entry moves its
        directory's mtime, so a directory that matched before the restore
        would not match after it.
        """
        changed = [*plan.remove, *(e.path for e in plan.write)]
        parents = {str(PurePosixPath(rel).parent) for rel in changed if rel != "."}
        fixing = {e.path for e in plan.fix}
        added = False
        for rel in parents:
            entry = wanted.get(rel)
            if entry is None or entry.path in fixing or entry.type != "dir" or not self._in_scope(rel):
                continue
            plan.fix.append(entry)
            added = True
            if rel in plan.unchanged:
                plan.unchanged.remove(rel)
        if added:
            order = {e.path: i for i, e in enumerate(self.snap.items)}
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
            for e in plan.fix:
                if e not in plan.write:
                    self.report.add(e.path, Outcome.PLANNED, "set metadata")
            for rel in plan.unchanged:
                self.report.add(rel, Outcome.UNCHANGED)
            for rel, why in plan.skipped:
                self.report.add(rel, Outcome.SKIPPED, reason=why)
            return self.report
        self._preflight(plan)
        self._ensure_parent()
        for rel in plan.remove:
            kept = self._remove(rel)
            if kept:
                self.report.add(rel, Outcome.SKIPPED, "remove", kept)
            elif rel not in {e.path for e in plan.write}:
                self.report.add(rel, Outcome.REMOVED, "remove")
        not_written: set[str] = set()
        for e in plan.write:
            reason = self._write(e)
            if reason:
                not_written.add(e.path)
                self.report.add(e.path, Outcome.SKIPPED, f"write {e.type}", reason)
        rewritten = {e.path for e in plan.write}
        for e in reversed(plan.fix):
            if e.path not in not_written:
                self._set_metadata(e)
        for e in plan.fix:
            if e.path in not_written:
                continue
            action = f"write {e.type}" if e.path in rewritten else "set metadata"
            self.report.add(e.path, Outcome.RESTORED, action)
        for rel in plan.unchanged:
            self.report.add(rel, Outcome.UNCHANGED)
        for rel, why in plan.skipped:
            self.report.add(rel, Outcome.SKIPPED, reason=why)
        return self.report

    def _preflight(self, plan: Plan) -> None:
        seen: set[str] = set()
        for e in plan.write:
            if e.type == "file" and e.digest and e.hardlink_to is None and e.digest not in seen:
                seen.add(e.digest)
                self.blobs.verify(e.digest, path=str(self._abs(e.path)))

    def _ensure_parent(self) -> None:
        parent = self.root.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RestoreError(
                f"cannot create {parent}: {exc.strerror}; nothing was written"
            ) from exc
        if self.snap.root_type is not None and not os.path.lexists(self.root):
            probe = None
            try:
                fd, probe = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=parent)
                os.close(fd)
            except OSError as exc:
                raise RestoreError(
                    f"cannot write into {parent}: {exc.strerror} — the parent of the target is "
                    "read-only; make it writable and run the restore again; nothing was written"
                ) from exc
            finally:
                if probe:
                    with contextlib.suppress(OSError):
                        os.unlink(probe)

    def _safe_parent(self, rel: str) -> Path:
        """The parent directory of ``rel``, checked to be a real dir inside the root."""
        path = self._abs(rel)
        parent = path.parent if rel != "." else self.root.parent
        if rel != ".":
            cur = self.root
            for part in PurePosixPath(rel).parts[:-1]:
                cur = cur / part
                st = os.lstat(cur)
                if not stat.S_ISDIR(st.st_mode):
                    raise UnsafePathError(rel, f"parent {cur} is not a real directory (symlink?)")
        return parent

    def _remove(self, rel: str) -> str:
        """Remove ``rel``; return a reason when it is kept instead."""
        path = self._abs(rel)
        self._safe_parent(rel)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return ""
        self._make_writable(path.parent)
        if stat.S_ISDIR(st.st_mode) and self.exclude is not None:
            # children were removed first (deepest first); what is left is excluded
            try:
                os.rmdir(path)
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                return "holds paths this restore leaves alone (excluded from the capture)"
        elif stat.S_ISDIR(st.st_mode):
            for dirpath, dirnames, _ in os.walk(path):
                for d in dirnames:
                    with contextlib.suppress(OSError):
                        p = os.path.join(dirpath, d)
                        if not os.path.islink(p):
                            os.chmod(p, 0o700)
            with contextlib.suppress(OSError):
                os.chmod(path, 0o700)
            shutil.rmtree(path)
        else:
            os.unlink(path)
        return ""

    @staticmethod
    def _make_writable(directory: Path) -> None:
        with contextlib.suppress(OSError):
            st = os.lstat(directory)
            if stat.S_ISDIR(st.st_mode) and not os.access(directory, os.W_OK | os.X_OK):
                os.chmod(directory, stat.S_IMODE(st.st_mode) | 0o700)

    def _write(self, e: FileEntry) -> str:
        """Create ``e``; return a reason when it cannot be created by a client."""
        path = self._abs(e.path)
        parent = self._safe_parent(e.path)
        self._make_writable(parent)
        if e.type == "dir":
            if os.path.lexists(path) and not os.path.isdir(path):
                os.unlink(path)
            if os.path.islink(path):
                os.unlink(path)
            if not os.path.isdir(path):
                os.mkdir(path, 0o700)
            self._make_writable(path)
            return ""
        if e.type == "socket":
            return "sockets belong to the process that listens on them; it re-creates them"
        if e.hardlink_to is not None:
            lead = self._abs(e.hardlink_to)
            if os.path.lexists(lead):
                self._replace_with(path, lambda tmp: os.link(lead, tmp, follow_symlinks=False))
                return ""
            # the lead is out of scope or gone: write the content on its own
        if e.type == "file":
            self._write_file(e, path)
        elif e.type == "symlink":
            self._replace_with(path, lambda tmp: os.symlink(e.link_target or "", tmp))
        elif e.type == "fifo":
            self._replace_with(path, lambda tmp: os.mkfifo(tmp, 0o600))
        elif e.type in ("chardev", "blockdev"):
            kind = stat.S_IFCHR if e.type == "chardev" else stat.S_IFBLK
            major, minor = e.rdev or (0, 0)
            try:
                self._replace_with(
                    path, lambda tmp: os.mknod(tmp, kind | 0o600, os.makedev(major, minor))
                )
            except PermissionError:
                return "creating device nodes needs root"
        return ""

    def _replace_with(self, path: Path, make: object) -> None:
        tmp = path.parent / f"{_TMP_PREFIX}{os.getpid()}-{path.name}"[:255]
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        make(str(tmp))  # type: ignore[operator]
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        os.replace(tmp, path)

    def _write_file(self, e: FileEntry, path: Path) -> None:
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                if e.digest:
                    for chunk in self.blobs.chunks(e.digest, path=str(path)):
                        fh.write(chunk)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def _set_metadata(self, e: FileEntry) -> None:
        path = self._abs(e.path)
        if e.type != "symlink":
            self._set_xattrs(path, e.xattrs)
        with contextlib.suppress(PermissionError):
            os.chown(path, e.uid, e.gid, follow_symlinks=False)
        if e.type != "symlink":
            os.chmod(path, e.mode)
        os.utime(path, ns=(e.atime_ns, e.mtime_ns), follow_symlinks=False)

    @staticmethod
    def _set_xattrs(path: Path, wanted: dict[str, str]) -> None:
        try:
            present = set(os.listxattr(path, follow_symlinks=False))
        except OSError:
            return
        for name in present - set(wanted):
            with contextlib.suppress(OSError):
                os.removexattr(path, name, follow_symlinks=False)
        for name, value in wanted.items():
            with contextlib.suppress(OSError):
                os.setxattr(path, name, bytes.fromhex(value), follow_symlinks=False)


__all__ = ["Plan", "TreeRestorer", "check_path", "file_type"]
