"""Restores against a tree someone tampered with: a parent swapped for a symlink, a hard
link planted to a file outside the target.  Nothing is written or deleted outside it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import preimage

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


def test_a_hard_link_planted_to_a_file_outside_never_gets_the_backups_owner_or_mode(
    tmp_path: Path, store: preimage.Store
) -> None:
    """A file replaced by a hard link to an outside 0600 file: the restore writes a file of its own, the outside file keeps its mode and owner."""
    root = tmp_path / "t"
    root.mkdir()
    tool = root / "run"
    tool.write_bytes(b"#!/bin/sh\n")
    tool.chmod(0o4755)
    backup = preimage.capture([f"file://{root}"], store=store)
    outside = tmp_path / "secret"
    outside.write_bytes(b"#!/bin/sh\n")   # the same bytes: only metadata would be set
    outside.chmod(0o600)
    os.chown(outside, 4242, 4242)
    tool.unlink()
    os.link(outside, tool)
    planted, _ = preimage.score(backup.id, store=store)
    assert planted.value() != 1.0   # the planted link shows: another mode and owner
    result = preimage.restore(backup.id, store=store)
    assert result.ok
    st_out = os.stat(outside)
    assert (st_out.st_mode & 0o7777, st_out.st_uid, st_out.st_gid) == (0o600, 4242, 4242)
    assert st_out.st_nlink == 1 and os.stat(tool).st_ino != st_out.st_ino
    assert os.stat(tool).st_mode & 0o7777 == 0o4755
    total, _ = preimage.score(backup.id, store=store)
    assert total.value() == 1.0   # the tree is the backup's again, the outside file its own
