"""Reading what a user sees of a repository, as snapshot items.

Only read-only git commands run here (``GIT_OPTIONAL_LOCKS=0`` keeps
``git status`` from refreshing the index); reflogs are read from their files.
"""

from __future__ import annotations

import os
from pathlib import Path

from preimage.connectors.git.repo import Repository
from preimage.snapshot_schemas.git import (
    GitConfigEntry,
    GitHead,
    GitIndexEntry,
    GitOperation,
    GitRef,
    GitReflog,
    GitStash,
    GitStatusEntry,
)

# Files and directories of a git directory that say an operation is under way.
OPERATION_MARKERS = (
    ("MERGE_HEAD", "merge"),
    ("rebase-merge", "rebase-merge"),
    ("rebase-apply", "rebase-apply"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
    ("BISECT_LOG", "bisect"),
    ("sequencer", "sequencer"),
)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def read_refs(repo: Repository) -> list[GitRef]:
    """Every ref with its target, symbolic target and (for branches) upstream."""
    fmt = "%(refname)%00%(objectname)%00%(objecttype)%00%(symref)%00%(upstream)"
    out = repo.git("for-each-ref", f"--format={fmt}")
    refs = []
    for line in out.split(b"\n"):
        if not line:
            continue
        name, oid, otype, symref, upstream = (_text(p) for p in line.split(b"\0"))
        refs.append(
            GitRef(name=name, oid=oid, type=otype, symref=symref or None, upstream=upstream or None)
        )
    return refs


def read_head(repo: Repository, refs: list[GitRef]) -> GitHead:
    """HEAD: its branch (or detached commit) and that branch's upstream."""
    ok, sym = repo.git_ok("symbolic-ref", "-q", "HEAD")
    symref = _text(sym).strip() if ok else None
    ok, oid = repo.git_ok("rev-parse", "-q", "--verify", "HEAD")
    upstream = None
    if symref:
        upstream = next((r.upstream for r in refs if r.name == symref), None)
    return GitHead(symref=symref, oid=_text(oid).strip() if ok else None, upstream=upstream)


def read_index(repo: Repository) -> list[GitIndexEntry]:
    """The index, one entry per path and stage (``git ls-files --stage -v``)."""
    out = repo.git("ls-files", "--stage", "-v", "-z")
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        tag, rest = record.split(b" ", 1)
        meta, path = rest.split(b"\t", 1)
        mode, oid, stage = meta.split(b" ")
        entries.append(
            GitIndexEntry(
                path=_text(path), stage=int(stage), mode=_text(mode), oid=_text(oid), tag=_text(tag)
            )
        )
    return entries


def read_status(repo: Repository) -> list[GitStatusEntry]:
    """``git status`` per path: staged/unstaged codes, untracked (??) and ignored (!!)."""
    out = repo.git("status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching")
    records = out.split(b"\0")
    entries = []
    i = 0
    while i < len(records):
        record = records[i]
        i += 1
        if not record:
            continue
        code, path = _text(record[:2]), _text(record[3:])
        orig = None
        if code[0] in "RC" or code[1] in "RC":
            orig = _text(records[i])
            i += 1
        entries.append(GitStatusEntry(path=path, code=code, orig_path=orig))
    return entries


def read_stashes(repo: Repository, refs: list[GitRef]) -> list[GitStash]:
    """Every stash entry, newest first (``stash@{0}`` …)."""
    if not any(r.name == "refs/stash" for r in refs):
        return []
    out = repo.git("log", "--walk-reflogs", "--format=%H%x1f%gs%x1e", "refs/stash")
    stashes = []
    for position, record in enumerate(r for r in out.split(b"\x1e") if r.strip()):
        oid, _, message = record.strip(b"\n").partition(b"\x1f")
        stashes.append(GitStash(position=position, oid=_text(oid), message=_text(message)))
    return stashes


def read_reflogs(repo: Repository) -> list[GitReflog]:
    """Reflogs of HEAD and of every ref (the stash's is covered by the stash entries)."""
    logs: list[GitReflog] = []
    head_log = repo.git_dir / "logs" / "HEAD"
    if head_log.is_file():
        logs.append(GitReflog(ref="HEAD", entries=_lines(head_log)))
    base = repo.common_dir / "logs" / "refs"
    if base.is_dir():
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames):
                path = Path(dirpath) / name
                ref = "refs/" + path.relative_to(base).as_posix()
                if ref == "refs/stash" or name.endswith(".lock"):
                    continue
                logs.append(GitReflog(ref=ref, entries=_lines(path)))
    return logs


def _lines(path: Path) -> list[str]:
    return _text(path.read_bytes()).splitlines()


def read_config(repo: Repository) -> list[GitConfigEntry]:
    """The repository's own config (``git config --local``), values grouped per key."""
    ok, out = repo.git_ok("config", "--local", "--list", "-z")
    if not ok:
        return []
    values: dict[str, list[str]] = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        name, _, value = record.partition(b"\n")
        values.setdefault(_text(name), []).append(_text(value))
    return [GitConfigEntry(name=n, values=v) for n, v in sorted(values.items())]


def read_operations(repo: Repository) -> GitOperation:
    """Operations in progress, from their marker files in the git directory."""
    found = []
    for marker, name in OPERATION_MARKERS:
        where = repo.git_dir / marker
        if not where.exists() and marker == "sequencer":
            where = repo.common_dir / marker
        if where.exists():
            if name == "rebase-apply" and (where / "applying").exists():
                name = "am"
            found.append(name)
    return GitOperation(operations=found)
