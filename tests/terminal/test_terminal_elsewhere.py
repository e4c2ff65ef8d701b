"""A git repository restored into another path with real git, and scored there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from terminal_kit import git

import preimage
from preimage import Store


def test_repository_restores_into_another_path(repo: Path, tmp_path: Path, store: Store) -> None:
    """`restore ID --to git:///other` rebuilds refs, index, stashes, untracked and ignored
    files there: git sees the same status and log, and the score is 1.0 with the root
    mapped."""
    backup = preimage.capture([f"git://{repo}"], store=store)
    dest = tmp_path / "elsewhere" / "clone"
    result = preimage.restore_to(backup.id, f"git://{dest}", store=store)
    assert result.ok
    assert [(m.what, m.old, m.new) for m in result.mappings[f"git://{dest}"]] == [
        ("root", str(repo), str(dest))]
    for args in (("status", "--porcelain", "--ignored"), ("log", "--all", "--format=%H %s"),
                 ("stash", "list"), ("diff", "--cached")):
        assert git(dest, *args) == git(repo, *args), args
    total, _ = preimage.score_against(backup.id, f"git://{dest}", store=store)
    assert total.restorable.score == 1.0, [d for d in total.differences
                                           if d.fidelity in ("content", "metadata")]


def test_repository_into_itself_is_refused(repo: Path, store: Store) -> None:
    """A destination inside the repository is refused before anything is written."""
    backup = preimage.capture([f"git://{repo}"], store=store)
    with pytest.raises(preimage.UsageError, match="overlaps"):
        preimage.restore_to(backup.id, f"git://{repo}/sub", store=store)
    assert not (repo / "sub").exists()


def test_pip_environment_elsewhere_is_refused_clearly(venv: Path, tmp_path: Path, store: Store, cli: Any) -> None:
    """pip does not restore into another environment yet: one line naming the connector,
    exit 2, nothing written."""
    backup = preimage.capture([f"pip://{venv}"], store=store)
    other = tmp_path / "other-venv"
    proc = cli("restore", backup.id, "--to", f"pip://{other}")
    assert proc.returncode == 2
    assert "the pip connector cannot restore or compare" in proc.stderr
    assert "Traceback" not in proc.stderr and not other.exists()
