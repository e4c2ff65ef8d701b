"""Restores against a tree someone tampered with: a parent swapped for a symlink, a hard
link planted to a file outside the target.  Nothing is written or deleted outside it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

Cli = Callable[..., subprocess.CompletedProcess[str]]


def test_trash_restore_never_writes_or_deletes_through_a_parent_replaced_by_a_symlink(
    tmp_path: Path, home: Path, cli: Cli
) -> None:
    """After `rm -r proj/sub/data`, proj/sub becomes a symlink to elsewhere: the restore refuses and touches nothing there."""
    sub = tmp_path / "proj" / "sub"
    (sub / "data").mkdir(parents=True)
    (sub / "data" / "kept").write_text("mine\n")
    cli("trash", "--home", str(home), "--backup", "0000000000abd", "-r", "--",
        str(sub / "data"), check=True)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "data").mkdir(parents=True)
    (elsewhere / "data" / "victim").write_text("not yours\n")
    sub.rmdir()
    sub.symlink_to(elsewhere)
    res = cli("restore", "0000000000abd")
    assert res.returncode != 0
    assert "symlink" in res.stderr and "Traceback" not in res.stderr
    assert (elsewhere / "data" / "victim").read_text() == "not yours\n"
    assert sorted(os.listdir(elsewhere / "data")) == ["victim"]
    # the entry is still in the trash: once the parent is a directory again, it comes back
    sub.unlink()
    sub.mkdir()
    cli("restore", "0000000000abd", check=True)
    assert (sub / "data" / "kept").read_text() == "mine\n"
