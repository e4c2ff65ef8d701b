"""Writing single items of a repository back: what an undo of one call writes.

An undo restores exactly the natural keys of its plan (``RestorePolicy.keys``) from a
snapshot equal to live except for those items (:mod:`.revert`).  Each kind goes back
through git's own plumbing, never by rewriting the git directory wholesale, so refs,
index entries and config keys nobody named are left as they are:

1. object files the before-call state needs are added back (never removed or rewritten),
   so no ref or index entry written next names a missing object;
2. config keys (``git config --unset-all`` / ``--add``);
3. refs (``git update-ref``, ``git symbolic-ref``; ``-d`` for a ref the call created),
   then HEAD (``git symbolic-ref HEAD`` or ``update-ref --no-deref``) — each keeping the
   reflogs of refs not named as they were (git appends a line on every update);
4. index entries (``git update-index --index-info``, then their skip-worktree and
   assume-unchanged flags);
5. reflogs, written as the file git keeps them in (the stash list is ``refs/stash``'s);
6. the git directory's other files (hooks with their mode, ``info/exclude``,
   ``ORIG_HEAD`` …: :mod:`.dir_files`), by the file connector's restore of exactly those
   paths, which never writes through a symlink or outside the git directory;
7. work-tree files, by the file connector's restore limited to the same keys.

Refused before anything is written: an operation in progress (merge, rebase, …) the call
started, ended or moved on — its state is a set of files in the git directory that only a
whole restore puts back — and any key of a kind this module does not know.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from preimage.connectors.files.apply import TreeRestorer
from preimage.connectors.git import dir_files, state
from preimage.connectors.git.layout import (
    git_dir_exclude,
    load_listing,
    objects_exclude,
    private_git_dir_exclude,
    worktree_exclude,
)
from preimage.connectors.git.repo import Repository, locate
from preimage.interface.blobs import BlobStore
from preimage.interface.errors import RestoreError
from preimage.restoration import ConflictMode, Outcome, RestorePolicy, RestoreReport
from preimage.snapshot_schemas import Item
from preimage.snapshot_schemas.files import FileEntry, FileSnapshot
from preimage.snapshot_schemas.git import (
    GitConfigEntry,
    GitHead,
    GitIndexEntry,
    GitRef,
    GitReflog,
    GitSnapshot,
    load_index_listing,
)

_ORDER = ("git-config", "git-ref", "git-head", "git-index", "git-reflog")
_GIT_FILE = f"kind={dir_files.KIND}|path="
_OPERATION = ("{target}: the call started, ended or moved on a git operation (merge, rebase, "
              "cherry-pick, …), whose state only a whole restore puts back — `preimage "
              "restore` the backup instead; nothing was written")


class GitItemWriter:
    """Restores exactly ``policy.keys`` of one :class:`GitSnapshot` (see the module doc)."""

    def __init__(self, snap: GitSnapshot, blobs: BlobStore, policy: RestorePolicy) -> None:
        assert policy.keys is not None
        self.snap = snap
        self.blobs = blobs
        self.policy = policy
        self.keys = policy.keys
        self.report = RestoreReport(target=snap.target, connector="git", dry_run=policy.dry_run)

    def run(self) -> RestoreReport:
        """Plan every key, refuse what cannot be written alone, then write in order."""
        repo = locate(self.snap.root, self.snap.target)
        want: dict[str, Item] = {i.natural_key(): i for i in self.snap.items
                                 if not isinstance(i, FileEntry)}
        want.update((e.natural_key(), e)
                    for e in load_index_listing(self.blobs, self.snap.index_listing))
        have = self._live(repo)
        files = {k for k in self.keys if k.startswith("kind=file|")}
        git_files = {k.removeprefix(_GIT_FILE) for k in self.keys if k.startswith(_GIT_FILE)}
        work: dict[str, list[tuple[str, Item | None, Item | None]]] = {k: [] for k in _ORDER}
        if any(dir_files.operation_state(p) or dir_files.operation_state(
                dir_files.split_private(p, dir_files.private_prefix(self.snap)) or "")
               for p in git_files):
            raise RestoreError(_OPERATION.format(target=self.snap.target))
        for key in sorted(self.keys - files - {_GIT_FILE + p for p in git_files}):
            new, old = want.get(key), have.get(key)
            kind = (new or old).kind if (new or old) is not None else ""  # type: ignore[union-attr]
            if kind == "git-operation":
                raise RestoreError(_OPERATION.format(target=self.snap.target))
            if kind and kind not in work:
                raise RestoreError(f"{self.snap.target}: cannot write back {key} alone; "
                                   "nothing was written")
            if kind:
                work[kind].append((key, new, old))
        if not self.policy.dry_run:
            self._check_not_busy(repo)
            self._add_objects()
        writers: dict[str, Callable[[Repository, Item | None, Item | None], None]] = {
            "git-config": self._config, "git-ref": self._ref, "git-head": self._head,
            "git-index": self._index, "git-reflog": self._reflog,
        }
        for kind in _ORDER:
            for key, new, old in work[kind]:
                if new == old:
                    self.report.add(key, Outcome.UNCHANGED)
                    continue
                action = self._describe(kind, new)
                if self.policy.dry_run:
                    self.report.add(key, Outcome.PLANNED, action)
                    continue
                writers[kind](repo, new, old)
                self.report.add(key, Outcome.RESTORED, action)
        if git_files:
            self._git_dir(git_files)
        if files:
            self._worktree(files)
        return self.report

    # ------------------------------------------------------------ reading
    def _live(self, repo: Repository) -> dict[str, Item]:
        refs = state.read_refs(repo)
        items: list[Item] = [state.read_head(repo, refs), *refs, *state.read_index(repo),
                             *state.read_reflogs(repo), *state.read_config(repo)]
        stash = repo.common_dir / "logs" / "refs" / "stash"
        if stash.is_file():
            items.append(GitReflog(ref="refs/stash", entries=stash.read_bytes().decode(
                "utf-8", errors="replace").splitlines()))
        return {i.natural_key(): i for i in items}

    @staticmethod
    def _describe(kind: str, new: Item | None) -> str:
        what = kind.removeprefix("git-")
        return f"remove {what}" if new is None else f"write {what}"

    def _check_not_busy(self, repo: Repository) -> None:
        for lock in (repo.git_dir / "index.lock", repo.git_dir / "HEAD.lock"):
            if lock.exists():
                raise RestoreError(
                    f"{lock} exists: a git command is writing {repo.root} right now (or one "
                    "crashed and left its lock) — wait for it, or remove the stale lock, and "
                    "undo again; nothing was written")

    # ------------------------------------------------------------ writing
    def _add_objects(self) -> None:
        """Every object file of the before-call state that is missing, added back."""
        root = Path(self.snap.common_dir) / "objects"
        snap = FileSnapshot(target=f"file://{root}", root=str(root), root_type="dir",
                            items=load_listing(self.blobs, self.snap.object_files))
        policy = RestorePolicy(conflict=ConflictMode.MERGE)
        result = TreeRestorer(snap, self.blobs, policy, exclude=objects_exclude).run()
        failed = [i for i in result.items if i.outcome is Outcome.FAILED]
        if failed:
            raise RestoreError(f"{self.snap.target}: object files could not be added back "
                               f"({failed[0].key}: {failed[0].reason}); no ref was written")

    @staticmethod
    def _keeping_reflogs(repo: Repository, args: tuple[str, ...], *refs: str) -> None:
        """Run ``git args…`` and put back the reflogs of ``refs`` as they were (git appends
        a line to them on every update; the reflogs the plan names are written after)."""
        paths = [(repo.git_dir if r == "HEAD" else repo.common_dir) / "logs" / r for r in refs]
        before = [p.read_bytes() if p.is_file() else None for p in paths]
        repo.git(*args)
        for path, data in zip(paths, before, strict=True):
            if data is None:
                if path.is_file():
                    path.unlink()
            else:
                _write_file(path, data)

    def _config(self, repo: Repository, new: Item | None, old: Item | None) -> None:
        entry = new or old
        assert isinstance(entry, GitConfigEntry)
        if old is not None:
            repo.git("config", "--local", "--unset-all", entry.name)
        if isinstance(new, GitConfigEntry):
            for value in new.values:
                repo.git("config", "--local", "--add", new.name, value)

    def _ref(self, repo: Repository, new: Item | None, old: Item | None) -> None:
        ref = new or old
        assert isinstance(ref, GitRef)
        if new is None:
            self._keeping_reflogs(repo, ("update-ref", "--no-deref", "-d", ref.name), "HEAD")
            return
        assert isinstance(new, GitRef)
        # a branch's update is logged in HEAD's reflog too when HEAD names it
        args = (("symbolic-ref", new.name, new.symref) if new.symref else
                ("update-ref", "--no-deref", new.name, new.oid))
        self._keeping_reflogs(repo, args, new.name, "HEAD")

    def _head(self, repo: Repository, new: Item | None, old: Item | None) -> None:
        assert isinstance(new, GitHead)
        if new.symref:
            self._keeping_reflogs(repo, ("symbolic-ref", "HEAD", new.symref), "HEAD")
        elif new.oid:
            self._keeping_reflogs(repo, ("update-ref", "--no-deref", "HEAD", new.oid), "HEAD")

    def _index(self, repo: Repository, new: Item | None, old: Item | None) -> None:
        entry = new or old
        assert isinstance(entry, GitIndexEntry)
        zero = "0" * (64 if repo.object_format == "sha256" else 40)
        lines = []
        if old is not None:  # one line of mode 0 takes every stage of the path out
            lines.append(f"0 {zero}\t{entry.path}\n")
        if isinstance(new, GitIndexEntry):
            lines.append(f"{new.mode} {new.oid} {new.stage}\t{new.path}\n")
        repo.git("update-index", "--index-info", input="".join(lines).encode())
        if isinstance(new, GitIndexEntry) and new.stage == 0:
            skip = new.tag in ("S", "s")
            assumed = new.tag in ("h", "s")
            repo.git("update-index", "--skip-worktree" if skip else "--no-skip-worktree",
                     "--assume-unchanged" if assumed else "--no-assume-unchanged",
                     "--", new.path)

    def _reflog(self, repo: Repository, new: Item | None, old: Item | None) -> None:
        log = new or old
        assert isinstance(log, GitReflog)
        path = (repo.git_dir if log.ref == "HEAD" else repo.common_dir) / "logs" / log.ref
        if not isinstance(new, GitReflog):
            if path.is_file():
                path.unlink()
            return
        data = "".join(line + "\n" for line in new.entries).encode()
        _write_file(path, data)

    def _git_dir(self, paths: set[str]) -> None:
        """The git directory's own files named by the plan (hooks, ``info/exclude``,
        ``ORIG_HEAD`` …), each tree restored exactly at those paths."""
        prefix = dir_files.private_prefix(self.snap)
        common = {p for p in paths if dir_files.split_private(p, prefix) is None}
        private = {rel for p in paths if (rel := dir_files.split_private(p, prefix)) is not None}
        trees = [(Path(self.snap.common_dir), self.snap.git_files, git_dir_exclude, common,
                  ".git/")]
        if self.snap.worktree_git_files is not None and prefix is not None:
            trees.append((Path(self.snap.git_dir), self.snap.worktree_git_files,
                          private_git_dir_exclude, private, f".git/{prefix}/"))
        for root, listing, exclude, rels, shown in trees:
            if not rels:
                continue
            snap = FileSnapshot(target=f"file://{root}", root=str(root), root_type="dir",
                                items=load_listing(self.blobs, listing))
            policy = RestorePolicy(dry_run=self.policy.dry_run, conflict=ConflictMode.OVERWRITE,
                                   keys=frozenset(f"kind=file|path={r}" for r in rels))
            result = TreeRestorer(snap, self.blobs, policy, exclude=exclude).run()
            self.report.notes.extend(result.notes)
            for item in result.items:
                self.report.add(shown + item.key, item.outcome, item.action, item.reason)

    def _worktree(self, keys: set[str]) -> None:
        root = Path(self.snap.root)
        snap = FileSnapshot(target=f"file://{root}", root=str(root), root_type="dir",
                            items=list(self.snap.worktree))
        policy = RestorePolicy(dry_run=self.policy.dry_run, conflict=ConflictMode.OVERWRITE,
                               keys=frozenset(keys))
        result = TreeRestorer(snap, self.blobs, policy, exclude=worktree_exclude(root)).run()
        self.report.notes.extend(result.notes)
        for item in result.items:
            self.report.add(item.key, item.outcome, item.action, item.reason)


def _write_file(path: Path, data: bytes) -> None:
    """``data`` into ``path`` by a temporary file and a rename (never a half-written log)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.preimage-tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
