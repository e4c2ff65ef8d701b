"""The git connector: read-only capture, hard cases of repository state, and bad targets."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from terminal_kit import as_json, git, git_views, seed_repository, sh

import preimage
from preimage import InvalidTargetError, RestoreConflictError, RestoreError, Store
from preimage.restoration import Outcome
from preimage.snapshot_schemas.git import GitOperation, GitSnapshot

CliResult = subprocess.CompletedProcess[str]


def _stat_tree(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """mode, size, mtime and atime of every path under ``root`` (symlinks not followed)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            out[os.path.relpath(path, root)] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_atime_ns)
    return out


def _capture(repo: Path, store: Store) -> preimage.Backup:
    return preimage.capture([f"git://{repo}"], store=store)


def _assert_restored(backup_id: str, store: Store) -> None:
    total, _ = preimage.score(backup_id, store=store)
    assert total.classes["content"].score == 1.0, total.differences[:10]
    assert total.classes["metadata"].score == 1.0, total.differences[:10]


# ---------------------------------------------------------------- capture is read-only


def test_capture_leaves_no_trace(repo: Path, store: Store) -> None:
    """A capture changes no file, mode, mtime or atime anywhere in the repository, .git included."""
    views = git_views(repo)
    _stat_tree(repo)  # listing a directory moves its atime once (relatime); settle that first
    before = _stat_tree(repo)
    _capture(repo, store)
    assert _stat_tree(repo) == before
    assert git_views(repo) == views
    assert git(repo, "for-each-ref", "refs/preimage") == ""


def test_second_capture_of_an_unchanged_repository_stores_almost_nothing(
    repo: Path, store: Store
) -> None:
    """Unchanged files, objects and listings are not stored again: only the snapshot itself is new."""
    _capture(repo, store)
    written = store.blobs.blobs_written
    _capture(repo, store)
    assert store.blobs.blobs_written - written == 1


# ---------------------------------------------------------------- objects


def test_stashes_and_lost_commits_survive_gc_prune(repo: Path, store: Store) -> None:
    """Dropped stashes and reset-away commits come back even after reflog expiry and gc --prune=now."""
    before = git_views(repo)
    backup = _capture(repo, store)
    sh(
        "git stash clear && git reset -q --hard HEAD~1 && git reflog expire --expire=now --all "
        "&& git gc -q --prune=now",
        cwd=repo,
    )
    assert git(repo, "stash", "list") == ""
    preimage.restore(backup.id, store=store)
    _assert_restored(backup.id, store)
    assert git_views(repo) == before
    assert git(repo, "fsck", "--no-progress", "--no-dangling") == ""


def test_deleted_repository_comes_back_whole(repo: Path, store: Store) -> None:
    """`rm -rf` of the whole repository: the restore rebuilds .git, history, index and files."""
    before = git_views(repo)
    backup = _capture(repo, store)
    shutil.rmtree(repo)
    result = preimage.restore(backup.id, store=store)
    assert result.ok
    assert git_views(repo) == before
    assert git(repo, "fsck", "--no-progress") == ""
    # the undo backup recorded "nothing here": undoing the restore deletes it again
    assert result.undo_backup_id is not None
    preimage.restore(result.undo_backup_id, store=store)
    assert not repo.exists()


# ---------------------------------------------------------------- operations in progress


def _conflicting_branches(repo: Path) -> None:
    git(repo, "stash", "-q", "--include-untracked")
    git(repo, "checkout", "-q", "-b", "topic")
    (repo / "README.md").write_text("# project\n\ntopic version\n")
    git(repo, "commit", "-q", "-am", "topic edit")
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("# project\n\nmain version\n")
    git(repo, "commit", "-q", "-am", "main edit")


def test_mid_merge_conflict_is_captured_and_restored_faithfully(repo: Path, store: Store) -> None:
    """A conflicted merge (MERGE_HEAD, index stages 1-3) comes back after `git merge --abort`."""
    _conflicting_branches(repo)
    git(repo, "merge", "topic", check=False)
    assert (repo / ".git" / "MERGE_HEAD").exists()
    before = git_views(repo)
    backup = _capture(repo, store)
    snap = backup.snapshots[0]
    assert isinstance(snap, GitSnapshot)
    operation = next(i for i in snap.items if isinstance(i, GitOperation))
    assert operation.operations == ["merge"]
    git(repo, "merge", "--abort")
    preimage.restore(backup.id, store=store)
    _assert_restored(backup.id, store)
    assert git_views(repo) == before
    stages = {line.split()[2] for line in git(repo, "ls-files", "--unmerged").splitlines()}
    assert stages == {"1", "2", "3"}
    # the restored merge can be finished as if nothing happened
    (repo / "README.md").write_text("# project\n\nresolved\n")
    git(repo, "commit", "-q", "-am", "merge topic")
    assert git(repo, "log", "-1", "--format=%P").count(" ") == 1


def test_mid_rebase_conflict_is_captured_and_can_be_continued(repo: Path, store: Store) -> None:
    """A rebase stopped on a conflict comes back after `git rebase --abort`, and continues."""
    _conflicting_branches(repo)
    git(repo, "checkout", "-q", "topic")
    git(repo, "rebase", "main", check=False)
    assert (repo / ".git" / "rebase-merge").is_dir()
    before = git_views(repo)
    backup = _capture(repo, store)
    git(repo, "rebase", "--abort")
    assert not (repo / ".git" / "rebase-merge").exists()
    preimage.restore(backup.id, store=store)
    _assert_restored(backup.id, store)
    assert git_views(repo) == before
    (repo / "README.md").write_text("# project\n\nrebased\n")
    git(repo, "add", "README.md")
    subprocess.run(
        ["git", "-C", str(repo), "-c", "core.editor=true", "rebase", "--continue"],
        check=True,
        capture_output=True,
    )
    assert git(repo, "log", "-2", "--format=%s").split("\n")[:2] == ["topic edit", "main edit"]


def test_detached_head_comes_back_detached(repo: Path, store: Store) -> None:
    """A detached HEAD is restored detached at the same commit, not as a branch."""
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    git(repo, "stash", "-q", "--include-untracked")
    git(repo, "checkout", "-q", first)
    backup = _capture(repo, store)
    git(repo, "checkout", "-q", "main")
    preimage.restore(backup.id, store=store)
    assert git(repo, "rev-parse", "HEAD").strip() == first
    assert git(repo, "symbolic-ref", "-q", "HEAD", check=False) == ""


# ---------------------------------------------------------------- worktrees and submodules


def test_linked_worktree_is_restored_without_touching_the_main_one(
    repo: Path, store: Store, tmp_path: Path
) -> None:
    """A `git worktree add` checkout keeps its own index and HEAD; both come back."""
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(wt))
    (wt / "side.txt").write_text("staged in the worktree\n")
    git(wt, "add", "side.txt")
    (wt / "README.md").write_text("edited in the worktree\n")
    main_views = git_views(repo)
    before = git_views(wt)
    backup = preimage.capture([f"git://{wt}"], store=store)
    sh("git reset -q --hard && git clean -fdxq", cwd=wt)
    preimage.restore(backup.id, store=store)
    _assert_restored(backup.id, store)
    assert git_views(wt) == before
    assert git_views(repo) == main_views


def test_submodule_checkout_is_a_target_of_its_own(
    tmp_path: Path, git_config: Path, store: Store
) -> None:
    """A submodule is captured through its own git:// target; the superproject's capture leaves it out."""
    lib, _ = seed_repository(tmp_path / "lib")
    git(lib, "stash", "-q", "--include-untracked")
    sup = tmp_path / "super"
    sup.mkdir()
    git(sup, "init", "-q")
    (sup / "main.txt").write_text("super\n")
    git(sup, "add", "main.txt")
    git(sup, "submodule", "add", "-q", str(lib), "vendor/lib")
    git(sup, "commit", "-q", "-m", "with submodule")
    sub = sup / "vendor" / "lib"
    (sub / "src" / "app.py").write_text("print('edited inside the submodule')\n")

    whole = preimage.capture([f"git://{sup}"], store=store).snapshots[0]
    assert isinstance(whole, GitSnapshot)
    assert whole.nested_repositories == ["vendor/lib"]
    assert any("vendor/lib is a repository of its own" in n for n in whole.notes)

    before = git_views(sub)
    backup = preimage.capture([f"git://{sub}"], store=store)
    git(sub, "checkout", "-q", "--", ".")
    preimage.restore(backup.id, store=store)
    _assert_restored(backup.id, store)
    assert git_views(sub) == before
    # restoring the superproject leaves the submodule's edit alone
    preimage.restore(preimage.capture([f"git://{sup}"], store=store).id, store=store)
    assert "edited inside" in (sub / "src" / "app.py").read_text()


# ---------------------------------------------------------------- policies


def test_dry_run_plans_and_writes_nothing(repo: Path, store: Store) -> None:
    """A dry run lists the files and git state it would write and changes nothing."""
    backup = _capture(repo, store)
    sh("git reset -q --hard && git clean -fdxq", cwd=repo)
    damaged = git_views(repo)
    result = preimage.restore(backup.id, store=store, dry_run=True)
    planned = {i.key for r in result.reports for i in r.items if i.outcome is Outcome.PLANNED}
    assert {".env.local", "notes/todo.txt", ".git/index"} <= planned
    assert git_views(repo) == damaged
    assert not (repo / ".env.local").exists()


def test_refuse_policy_stops_before_writing(repo: Path, store: Store) -> None:
    """With conflict=refuse a changed repository raises and nothing is written."""
    backup = _capture(repo, store)
    sh("git clean -fdxq", cwd=repo)
    with pytest.raises(RestoreConflictError):
        preimage.restore(backup.id, store=store, conflict="refuse")
    assert not (repo / ".env.local").exists()


def test_restore_waits_for_a_running_git_command(repo: Path, store: Store) -> None:
    """While index.lock exists the restore refuses with a clear message and writes nothing."""
    backup = _capture(repo, store)
    sh("git clean -fdxq", cwd=repo)
    (repo / ".git" / "index.lock").write_text("")
    with pytest.raises(RestoreError, match=r"index\.lock exists"):
        preimage.restore(backup.id, store=store)
    assert not (repo / ".env.local").exists()


def test_only_a_path_restores_just_that_path(repo: Path, store: Store) -> None:
    """--only git:///repo/.env.local brings back that file and leaves the index as it is now."""
    backup = _capture(repo, store)
    sh("git reset -q && git clean -fdxq", cwd=repo)
    index_now = git(repo, "ls-files", "--stage")
    preimage.restore(backup.id, store=store, only=[f"git://{repo}/.env.local"])
    assert (repo / ".env.local").read_text() == "API_KEY=s3cret\n"
    assert not (repo / "notes").exists()
    assert git(repo, "ls-files", "--stage") == index_now


def test_diff_names_what_the_call_changed(repo: Path, cli: Callable[..., CliResult]) -> None:
    """`preimage diff` after `git clean -fdx` names the deleted ignored and untracked files."""
    backup_id = cli("capture", f"git://{repo}", check=True).stdout.strip()
    sh("git clean -fdxq", cwd=repo)
    res = cli("diff", backup_id, "--json")
    assert res.returncode == 1, res.stderr   # like diff(1): 1 when something differs
    diffs = as_json(res)
    removed = {c["key"] for d in diffs for c in d["changes"] if c["change"] == "removed"}
    assert "kind=file|path=.env.local" in removed
    assert "kind=git-status|path=notes/todo.txt" in removed


# ---------------------------------------------------------------- bad targets


def test_plain_directory_is_refused(tmp_path: Path, store: Store, git_config: Path) -> None:
    """A directory that is not a repository is refused with a message saying so."""
    (tmp_path / "plain").mkdir()
    with pytest.raises(InvalidTargetError, match="is not a git repository"):
        preimage.capture([f"git://{tmp_path / 'plain'}"], store=store)


def test_bare_repository_is_refused(tmp_path: Path, store: Store, git_config: Path) -> None:
    """A bare repository has no working state: refused, pointing at file://."""
    git(tmp_path, "init", "-q", "--bare", "b.git")
    with pytest.raises(InvalidTargetError, match=r"bare repository.*file://"):
        preimage.capture([f"git://{tmp_path / 'b.git'}"], store=store)


def test_subdirectory_is_refused_naming_the_top_level(repo: Path, store: Store) -> None:
    """A directory inside a repository is refused; the message names the repository root."""
    with pytest.raises(InvalidTargetError, match=f"inside the repository at {repo}"):
        preimage.capture([f"git://{repo / 'src'}"], store=store)


def test_file_path_is_refused_through_the_cli(
    tmp_path: Path, cli: Callable[..., CliResult], git_config: Path
) -> None:
    """The CLI exits 2 with a clear message for a path that is a file, not a repository."""
    (tmp_path / "notes.txt").write_text("x")
    proc = cli("capture", f"git://{tmp_path / 'notes.txt'}")
    assert proc.returncode == 2
    assert "is not a directory" in proc.stderr
