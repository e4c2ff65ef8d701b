"""The workspace-only baseline: a shadow-git snapshot of the working directory.

What agent harnesses' checkpoints do: before the call, commit the working
directory into a git repository kept elsewhere
(``git --git-dir=<shadow> --work-tree=<cwd> add -A && commit``); to restore,
``checkout`` that commit back into the working directory.  By construction it
covers only files under the cwd, minus what ``.gitignore`` excludes and minus
any ``.git`` directory (git never adds one), and git keeps only bytes, the
executable bit and symlinks — no other mode bits, no times, no empty
directories.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import ClassVar

from preimage.bench.protector import Protection, Protector, RunContext
from preimage.interface.sizes import tree_bytes
from preimage.interface.target import Target
from preimage.snapshot_schemas.files import FileSnapshot

_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "checkpoint",
    "GIT_AUTHOR_EMAIL": "checkpoint@localhost",
    "GIT_COMMITTER_NAME": "checkpoint",
    "GIT_COMMITTER_EMAIL": "checkpoint@localhost",
}


def _git(shadow: Path, work: Path, *args: str) -> str:
    env = {**os.environ, **_ENV}
    proc = subprocess.run(
        ["git", f"--git-dir={shadow}", f"--work-tree={work}", "-c", "core.hooksPath=/dev/null",
         *args],
        cwd=work, env=env, capture_output=True, text=True, timeout=120,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()[-400:]}")
    return proc.stdout


class WorkspaceOnly(Protector):
    """Shadow-git checkpoint of the cwd before every call; checkout to restore."""

    name: ClassVar[str] = "workspace"
    label: ClassVar[str] = "workspace-only (shadow git)"

    def before(self, ctx: RunContext) -> Protection:
        """Commit the whole working directory into a shadow repository."""
        shadow = ctx.scratch / "shadow.git"
        work = ctx.sandbox.cwd
        subprocess.run(["git", "init", "-q", "--bare", str(shadow)], check=True,
                       capture_output=True, env={**os.environ, **_ENV})
        _git(shadow, work, "add", "-A", ".")
        _git(shadow, work, "commit", "-q", "--allow-empty", "--no-verify", "-m", "checkpoint")
        commit = _git(shadow, work, "rev-parse", "HEAD").strip()
        tracked = set(_git(shadow, work, "ls-tree", "-r", "--name-only", commit).splitlines())
        return Protection(
            backup_id=commit if tracked else None,  # an empty checkpoint holds nothing
            targets=[f"file://{work}"],
            stored_bytes=tree_bytes(shadow),
            tier="checkpoint",
            handle=(shadow, work, tracked),
        )

    def covers(self, ctx: RunContext, protection: Protection, uri: str) -> bool:
        """A file target is covered when every file and symlink under it is in the commit."""
        _shadow, work, tracked = protection.handle
        target = Target.parse(uri)
        path = target.path if target.scheme == "file" else None
        if target.scheme == "sqlite":
            path = target.path[1:] if target.path.startswith("/") else target.path
        if path is None:
            return False  # git refs/index, packages, servers: not in a working-tree snapshot
        root = str(work).rstrip("/")
        if not (path == root or path.startswith(root + "/")):
            return False
        rel = os.path.relpath(path, root)
        snap = ctx.truth.get(uri)
        if isinstance(snap, FileSnapshot):
            wanted = [
                os.path.normpath(os.path.join(rel, e.path))
                for e in snap.items if e.type in ("file", "symlink")
            ]
            return bool(wanted) and all(w in tracked for w in wanted)
        return rel in tracked

    def restore(self, ctx: RunContext, protection: Protection) -> list[str]:
        """``git checkout <commit> -- .`` into the working directory (re-made if deleted)."""
        shadow, work, _tracked = protection.handle
        work.mkdir(parents=True, exist_ok=True)
        try:
            _git(shadow, work, "checkout", "-f", str(protection.backup_id), "--", ".")
        except RuntimeError as exc:
            return [str(exc)]
        return []
