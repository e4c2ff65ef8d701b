"""Finding a repository behind a ``git://`` target and running ``git`` in it.

Every command runs with ``GIT_OPTIONAL_LOCKS=0`` (``git status`` must not
refresh and rewrite the index while we read it), ``core.fsmonitor=false`` (a
repository's config must not make us run its commands), the C locale and no
terminal prompts; ``GIT_DIR``, ``GIT_WORK_TREE`` and ``GIT_INDEX_FILE`` from
the caller's environment are dropped so that they cannot redirect us.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from preimage.interface.errors import InvalidTargetError, TerminalConnectorError

# Variables that would point git at another repository, index or config.
_DROPPED_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
)


def git_env() -> dict[str, str]:
    """The environment every git command of the connector runs with."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.update(
        GIT_OPTIONAL_LOCKS="0",
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
        LANG="C",
        GIT_PAGER="cat",
        PAGER="cat",
    )
    return env


def git_binary() -> str:
    """The ``git`` executable; raise :class:`TerminalConnectorError` when it is missing."""
    found = shutil.which("git")
    if found is None:
        raise TerminalConnectorError(
            "git is not installed (no `git` on PATH) — install it (apt-get install git) "
            "and capture again"
        )
    return found


def run_git(
    cwd: Path, *args: str, input: bytes | None = None, check: bool = True, target: str = ""
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git -C cwd args…``; raise :class:`TerminalConnectorError` when it fails and ``check``."""
    cmd = [git_binary(), "-c", "core.fsmonitor=false", "-C", str(cwd), *args]
    proc = subprocess.run(cmd, input=input, capture_output=True, env=git_env(), check=False)
    if check and proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()
        if "dubious ownership" in err:
            raise TerminalConnectorError(
                f"git refuses to read {cwd}: it belongs to another user — run preimage as the "
                f"repository's owner (or mark it safe: git config --global --add "
                f"safe.directory {cwd})",
                target=target or None,
            )
        raise TerminalConnectorError(
            f"`git {' '.join(args)}` failed in {cwd}: {err or f'exit {proc.returncode}'}",
            target=target or None,
        )
    return proc


@dataclass(frozen=True)
class Repository:
    """A non-bare repository's working tree and git directories."""

    root: Path  # the working tree, as the target names it
    git_dir: Path  # this worktree's git directory
    common_dir: Path  # shared git directory (refs, objects, config)
    object_format: str  # sha1 or sha256
    target: str  # the redacted target URI, for messages

    def git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        """stdout of ``git args…`` run in the working tree."""
        return run_git(self.root, *args, input=input, check=check, target=self.target).stdout

    def git_ok(self, *args: str) -> tuple[bool, bytes]:
        """Whether ``git args…`` succeeded, and its stdout."""
        proc = run_git(self.root, *args, check=False, target=self.target)
        return proc.returncode == 0, proc.stdout

    @property
    def linked_worktree(self) -> bool:
        """True for a worktree made by ``git worktree add`` (own HEAD and index)."""
        return self.git_dir != self.common_dir


def locate(path: str, target: str) -> Repository:
    """The repository whose working tree is exactly ``path``.

    Raises :class:`InvalidTargetError` for a relative path, a missing
    directory, a directory that is not a repository, a directory inside a
    repository (name its top level), a bare repository, the inside of a git
    directory, and reftable repositories; :class:`TerminalConnectorError`
    when git is missing.
    """
    if not path.startswith("/"):
        raise InvalidTargetError(target, "the path must be absolute: git:///abs/path/to/repo")
    root = Path(os.path.normpath(path))
    if not root.is_dir():
        raise InvalidTargetError(target, f"{root} is not a directory")
    probe = run_git(root, "rev-parse", "--git-dir", check=False, target=target)
    if probe.returncode != 0:
        err = probe.stderr.decode(errors="replace").strip()
        if "dubious ownership" in err:
            run_git(root, "rev-parse", "--git-dir", target=target)  # raises the clear message
        raise InvalidTargetError(
            target, f"{root} is not a git repository — run `git init` there or name a repository"
        )
    out = run_git(
        root,
        "rev-parse",
        "--is-bare-repository",
        "--is-inside-git-dir",
        "--path-format=absolute",
        "--git-dir",
        "--git-common-dir",
        "--show-object-format",
        target=target,
    ).stdout.decode()
    bare, inside_git_dir, git_dir, common_dir, object_format = out.splitlines()[:5]
    if bare == "true":
        raise InvalidTargetError(
            target,
            f"{root} is a bare repository: it has no working tree, index or stash to capture — "
            f"capture it whole with file://{root}",
        )
    if inside_git_dir == "true":
        raise InvalidTargetError(
            target, f"{root} is inside a git directory; name the working tree instead"
        )
    top = run_git(root, "rev-parse", "--show-toplevel", target=target).stdout.decode().strip()
    if os.path.realpath(top) != os.path.realpath(root):
        raise InvalidTargetError(
            target,
            f"{root} is inside the repository at {top}; a git:// target is a whole repository — "
            f"write git://{top} (or use file://{root} for just this directory)",
        )
    storage = (
        run_git(root, "config", "--get", "extensions.refStorage", check=False, target=target)
        .stdout.decode()
        .strip()
    )
    if storage and storage != "files":
        raise InvalidTargetError(
            target,
            f"{root} keeps its refs in {storage!r} storage; only the default 'files' ref storage "
            "is supported — capture the directory with file:// instead",
        )
    return Repository(
        root=root,
        git_dir=Path(git_dir),
        common_dir=Path(common_dir),
        object_format=object_format,
        target=target,
    )
