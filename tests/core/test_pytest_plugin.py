"""The pytest plugin (``pytest11`` entry point): capture fixtures, the fidelity gate with a
bar per class, and failure messages that name every differing field — used here, in the
project's own suite, on file trees restored by preimage and by `cp -r`."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

import preimage
from preimage.pytest_plugin import FidelityGateError, parse_bar


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small tree with a setuid file, exact mtimes and an xattr."""
    root = tmp_path / "app"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "run").write_text("#!/bin/sh\n")
    (root / "bin" / "run").chmod(0o4755)
    (root / "notes.txt").write_text("keep me\n")
    os.setxattr(root / "notes.txt", "user.origin", b"plugin")
    for p in (root / "notes.txt", root / "bin" / "run"):
        os.utime(p, ns=(1_600_000_000_000_000_000, 1_650_000_000_000_000_001))
    return root


@pytest.fixture
def preimage_targets(tree: Path) -> list[str]:
    """The plugin's declared targets, built from another fixture."""
    return [f"file://{tree}"]


def test_plugin_is_registered_through_pytest11(pytestconfig: pytest.Config) -> None:
    """Installing preimage is enough: pytest loads the plugin by its entry point."""
    names = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert names.get("preimage") == "preimage.pytest_plugin"
    assert pytestconfig.pluginmanager.has_plugin("preimage")


def test_restore_elsewhere_passes_the_gate(preimage_backup: preimage.Backup, preimage_gate: Callable[..., Any], preimage_store: preimage.Store, tmp_path: Path) -> None:
    """The declared target, captured before the body, restored into another directory:
    the gate passes and reports the root as mapped."""
    dest = tmp_path / "restored"
    preimage.restore_to(preimage_backup.id, f"file://{dest}", store=preimage_store)
    report = preimage_gate(preimage_backup, f"file://{dest}")
    assert report.restorable.score == 1.0
    assert [m.what for m in report.mapped] == ["root"]


def test_gate_names_every_field_cp_r_loses(preimage_backup: preimage.Backup, preimage_gate: Callable[..., Any], tree: Path, tmp_path: Path) -> None:
    """`cp -r` keeps bytes, not the setuid bit, mtimes or the xattr: the gate fails
    naming each of those fields; with a content-only bar it passes."""
    dest = tmp_path / "copied"
    subprocess.run(["cp", "-r", str(tree), str(dest)], check=True)
    with pytest.raises(FidelityGateError) as failed:
        preimage_gate(preimage_backup, f"file://{dest}")
    text = str(failed.value)
    assert "restorable" in text.splitlines()[0]
    for field in ("bin/run  mode: 0o4755 → 0o755", "notes.txt  mtime_ns",
                  "bin/run  mtime_ns", "notes.txt  xattrs"):
        assert field in text, text
    preimage_gate(preimage_backup, f"file://{dest}", bar={"content": 1.0})


def test_capture_fixture_and_bars(preimage_capture: Callable[..., preimage.Backup], preimage_gate: Callable[..., Any], tree: Path) -> None:
    """preimage_capture takes a backup on demand; the gate against the backup's own
    target passes until the target changes, and a lower bar tolerates the change."""
    backup = preimage_capture(f"file://{tree}")
    preimage_gate(backup)
    (tree / "notes.txt").chmod(0o600)
    with pytest.raises(FidelityGateError, match=r"notes.txt  mode: 0o644 → 0o600"):
        preimage_gate(backup)
    preimage_gate(backup, bar=0.5)


def test_bar_grammar() -> None:
    """A bar is CLASS=MIN pairs or one number (the restorable minimum); junk is a usage error."""
    assert parse_bar("content=1.0 metadata=0.99") == {"content": 1.0, "metadata": 0.99}
    assert parse_bar("0.9") == {"restorable": 0.9}
    assert parse_bar("") == {"restorable": 1.0}
    with pytest.raises(pytest.UsageError, match="CLASS=MIN"):
        parse_bar("content=high")
