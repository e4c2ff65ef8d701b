"""Bringing a repository back to a captured state.

The repository is restored as up to four trees by the file connector's
:class:`TreeRestorer`, each walked with the exclusion it was captured with:

1. every tree is planned first — nothing is written when a path is unsafe,
   the policy is ``refuse`` and something changed, or a needed blob is
   missing or corrupt;
2. object files (``.git/objects``) — only *added back*, never removed or
   rewritten: objects are immutable, an extra unreachable object is
   invisible, and restoring them first means no ref written in step 3 ever
   names a missing object;
3. the git directory (HEAD, refs, packed-refs, reflogs, the index file,
   config, hooks, rebase/merge state) and, for a linked worktree, its private
   git directory — brought back exactly, which restores the branch, the
   staged content, the stash list and any operation in progress;
4. the ``.git`` file of a submodule or linked worktree, when it is missing;
5. the working tree — tracked, untracked and ignored files, exactly, with
   their metadata (``.git`` and nested repositories left alone).

A restore refuses to start while ``index.lock`` exists: another git command
is writing the repository and the two would corrupt each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from preimage.connectors.files.apply import Plan, TreeRestorer
from preimage.connectors.files.walk import Exclude
from preimage.connectors.git.layout import (
    git_dir_exclude,
    load_listing,
    objects_exclude,
    private_git_dir_exclude,
    worktree_exclude,
)
from preimage.interface.blobs import BlobStore
from preimage.interface.errors import RestoreError
from preimage.restoration import ConflictMode, Outcome, RestorePolicy, RestoreReport
from preimage.snapshot_schemas.files import FileEntry, FileSnapshot
from preimage.snapshot_schemas.git import GitSnapshot


@dataclass
class _Tree:
    """One tree of the repository to restore, and how its report keys are named."""

    name: str
    restorer: TreeRestorer
    key: Callable[[str], str]
    summarize: bool = False
    plan: Plan | None = None


class GitRestorer:
    """Restores one :class:`GitSnapshot` under the policy given."""

    def __init__(self, snap: GitSnapshot, blobs: BlobStore, policy: RestorePolicy) -> None:
        self.snap = snap
        self.blobs = blobs
        self.policy = policy
        self.root = Path(snap.root)
        self.git_dir = Path(snap.git_dir)
        self.common_dir = Path(snap.common_dir)
        self.report = RestoreReport(target=snap.target, connector="git", dry_run=policy.dry_run)

    # ------------------------------------------------------------ scope
    def _scopes(self) -> tuple[bool, tuple[str, ...], bool, tuple[str, ...]]:
        """(restore git state?, its sub-scope, restore the working tree?, its sub-scope)."""
        only = tuple(o.strip("/") for o in self.policy.only)
        if not only:
            return True, (), True, ()
        in_git = [o for o in only if o == ".git" or o.startswith(".git/")]
        worktree = tuple(o for o in only if o not in in_git)
        git_scope = () if ".git" in in_git else tuple(o[len(".git/") :] for o in in_git)
        return bool(in_git), git_scope, bool(worktree), worktree

    def _tree(
        self,
        name: str,
        root: Path,
        entries: list[FileEntry],
        exclude: Exclude,
        conflict: ConflictMode,
        only: tuple[str, ...],
        prefix: str,
    ) -> _Tree:
        snap = FileSnapshot(target=f"file://{root}", root=str(root), root_type="dir", items=entries)
        policy = RestorePolicy(dry_run=self.policy.dry_run, conflict=conflict, only=only)

        def key(rel: str) -> str:
            if not prefix:
                return rel
            return prefix if rel == "." else f"{prefix}/{rel}"

        return _Tree(name, TreeRestorer(snap, self.blobs, policy, exclude=exclude), key)

    def _git_prefix(self, path: Path) -> str:
        try:
            return ".git/" + path.relative_to(self.common_dir).as_posix()
        except ValueError:
            return str(path)

    def _trees(self) -> list[_Tree]:
        do_git, git_scope, do_worktree, worktree_scope = self._scopes()
        conflict = self.policy.conflict
        trees: list[_Tree] = []
        if do_git:
            objects = self._tree(
                "objects",
                self.common_dir / "objects",
                load_listing(self.blobs, self.snap.object_files),
                objects_exclude,
                ConflictMode.MERGE,
                (),
                ".git/objects",
            )
            objects.summarize = True
            trees.append(objects)
            trees.append(
                self._tree(
                    "git-dir",
                    self.common_dir,
                    load_listing(self.blobs, self.snap.git_files),
                    git_dir_exclude,
                    conflict,
                    git_scope,
                    ".git",
                )
            )
            if self.snap.worktree_git_files is not None:
                trees.append(
                    self._tree(
                        "worktree-git-dir",
                        self.git_dir,
                        load_listing(self.blobs, self.snap.worktree_git_files),
                        private_git_dir_exclude,
                        conflict,
                        (),
                        self._git_prefix(self.git_dir),
                    )
                )
        if do_worktree:
            trees.append(
                self._tree(
                    "worktree",
                    self.root,
                    list(self.snap.worktree),
                    worktree_exclude(self.root),
                    conflict,
                    worktree_scope,
                    "",
                )
            )
        return trees

    # ------------------------------------------------------------ run
    def run(self) -> RestoreReport:
        """Plan every tree, then restore them in order; see the module docstring."""
        if not self.snap.present:
            return self._remove_all()
        if not self.policy.dry_run:
            self._check_not_busy()
        trees = self._trees()
        try:
            for tree in trees:  # plans first: a refusal or an unsafe path stops before any write
                tree.plan = tree.restorer.plan()
            if not self.policy.dry_run:
                self._verify_blobs(trees)
            for tree in trees:
                if tree.name == "worktree":
                    self._gitfile()
                result = tree.restorer.run(tree.plan)
                self._merge(tree, result)
        finally:   # a plan's table is a temporary file: closed once run, or when one stops
            for tree in trees:
                if tree.plan is not None:
                    tree.plan.close()
        if not any(t.name == "worktree" for t in trees) and not self.policy.only:
            self._gitfile()
        return self.report

    def _remove_all(self) -> RestoreReport:
        """Nothing existed at capture time: take away what is there now (overwrite only)."""
        gone = FileSnapshot(target=self.snap.target, root=str(self.root), root_type=None, items=[])
        result = TreeRestorer(gone, self.blobs, self.policy).run()
        for item in result.items:
            self.report.add(item.key, item.outcome, item.action, item.reason)
        return self.report

    def _check_not_busy(self) -> None:
        for lock in (self.git_dir / "index.lock", self.git_dir / "HEAD.lock"):
            if lock.exists():
                raise RestoreError(
                    f"{lock} exists: a git command is writing {self.root} right now (or one "
                    "crashed and left its lock) — wait for it, or remove the stale lock, and "
                    "restore again; nothing was written"
                )

    def _verify_blobs(self, trees: list[_Tree]) -> None:
        seen: set[str] = set()
        for tree in trees:
            assert tree.plan is not None
            for e in tree.plan.write:
                if e.type == "file" and e.digest and e.digest not in seen:
                    seen.add(e.digest)
                    self.blobs.verify(e.digest, path=str(tree.restorer.root / e.path))

    def _gitfile(self) -> None:
        text = self.snap.gitfile
        if text is None:
            return
        dotgit = self.root / ".git"
        try:
            current = dotgit.read_text(errors="surrogateescape")
        except (FileNotFoundError, IsADirectoryError):
            current = None
        if current == text:
            self.report.add(".git", Outcome.UNCHANGED)
            return
        if current is not None and self.policy.conflict is not ConflictMode.OVERWRITE:
            self.report.add(".git", Outcome.SKIPPED, "write .git file", "changed since the capture")
            return
        if self.policy.dry_run:
            self.report.add(".git", Outcome.PLANNED, "write .git file")
            return
        self.root.mkdir(parents=True, exist_ok=True)
        dotgit.write_text(text, errors="surrogateescape")
        self.report.add(".git", Outcome.RESTORED, "write .git file")

    def _merge(self, tree: _Tree, result: RestoreReport) -> None:
        self.report.notes.extend(result.notes)
        if not tree.summarize:
            for item in result.items:
                self.report.add(tree.key(item.key), item.outcome, item.action, item.reason)
            return
        # object files: one line for the lot (thousands of immutable files), failures in full
        written = sum(
            1
            for i in result.items
            if i.outcome in (Outcome.RESTORED, Outcome.PLANNED) and i.action.startswith("write")
        )
        for item in result.items:
            if item.outcome is Outcome.FAILED:
                self.report.add(tree.key(item.key), item.outcome, item.action, item.reason)
        key = tree.key(".")
        if written == 0:
            self.report.add(key, Outcome.UNCHANGED)
        elif self.policy.dry_run:
            self.report.add(key, Outcome.PLANNED, f"add back {written} object files")
        else:
            self.report.add(key, Outcome.RESTORED, f"added back {written} object files")
