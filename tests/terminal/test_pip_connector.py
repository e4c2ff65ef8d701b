"""The pip connector: exact package sets, installer metadata, environments without pip, bad targets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from terminal_kit import wheels

import preimage
from preimage import InvalidTargetError, RestoreConflictError, Store
from preimage.restoration import Outcome
from preimage.snapshot_schemas.pip import PipDistribution, PipSnapshot


def outer_pip(venv: Path, *args: str) -> None:
    """Run preimage's own pip against ``venv`` (the environment has none)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            *args,
            "--disable-pip-version-check",
        ],
        check=True,
        capture_output=True,
    )


def freeze(venv: Path) -> list[str]:
    """name==version of everything installed in ``venv``."""
    return list(wheels.pip_freeze(venv / "bin" / "python"))


def _assert_restored(backup_id: str, store: Store) -> None:
    total, _ = preimage.score(backup_id, store=store)
    assert total.classes["content"].score == 1.0, total.differences[:10]
    assert total.classes["metadata"].score == 1.0, total.differences[:10]


def test_environment_without_pip_is_restored_with_preimages_pip(
    venv: Path, wheelhouse: Path, store: Store
) -> None:
    """Removed, added and upgraded packages all come back in a venv that has no pip of its own."""
    before = freeze(venv)
    scripts = {name: (venv / "bin" / name).read_bytes() for name in ("app", "app-data")}
    backup = preimage.capture([f"pip://{venv}"], store=store)
    outer_pip(venv, "uninstall", "-y", "app")
    outer_pip(venv, "install", "--no-index", "--find-links", str(wheelhouse), "-U", "liba")
    assert "app==1.0" not in freeze(venv) and "libb==1.0" in freeze(venv)
    result = preimage.restore(backup.id, store=store)
    assert result.ok, [i for r in result.reports for i in r.items if i.outcome is Outcome.FAILED]
    assert freeze(venv) == before
    assert not any(line.startswith("pip==") for line in freeze(venv))
    for name, data in scripts.items():
        assert (venv / "bin" / name).read_bytes() == data
        assert os.access(venv / "bin" / name, os.X_OK)
    out = subprocess.run([str(venv / "bin" / "app")], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "app 1.0"
    _assert_restored(backup.id, store)


def test_edited_package_file_is_reinstalled_byte_for_byte(venv: Path, store: Store) -> None:
    """A file edited inside site-packages (same version) gets its captured bytes back."""
    config = next((venv / "lib").glob("python*/site-packages/liba/config.py"))
    original = config.read_bytes()
    backup = preimage.capture([f"pip://{venv}"], store=store)
    config.write_text("PINNED = 'tampered'\n")
    result = preimage.restore(backup.id, store=store)
    actions = {i.key: i.action for r in result.reports for i in r.items}
    assert actions["liba"] == "reinstall 5.9.0 (installed files changed)"
    assert config.read_bytes() == original
    _assert_restored(backup.id, store)


def test_installer_metadata_comes_back(venv: Path, wheelhouse: Path, store: Store) -> None:
    """direct_url.json and REQUESTED of a package installed from a wheel path are restored exactly."""
    outer_pip(
        venv,
        "install",
        "--no-index",
        "--force-reinstall",
        "--no-deps",
        str(next(wheelhouse.glob("app-1.0-*.whl"))),
    )
    dist_info = next((venv / "lib").glob("python*/site-packages/app-1.0.dist-info"))
    direct_url = (dist_info / "direct_url.json").read_bytes()
    backup = preimage.capture([f"pip://{venv}"], store=store)
    snap = backup.snapshots[0]
    assert isinstance(snap, PipSnapshot)
    app = next(i for i in snap.items if isinstance(i, PipDistribution) and i.name == "app")
    assert app.direct_url is not None and "archive_info" in app.direct_url
    assert app.requested and app.installer == "pip"
    # reinstalled from the index-like wheelhouse: no direct_url.json any more
    outer_pip(
        venv,
        "install",
        "--no-index",
        "--find-links",
        str(wheelhouse),
        "--force-reinstall",
        "--no-deps",
        "app",
    )
    assert not (dist_info / "direct_url.json").exists()
    preimage.restore(backup.id, store=store)
    assert (dist_info / "direct_url.json").read_bytes() == direct_url
    _assert_restored(backup.id, store)


def test_second_capture_of_an_unchanged_environment_stores_almost_nothing(
    venv: Path, store: Store
) -> None:
    """Installed files already in the store are not stored again: only the snapshot is new."""
    preimage.capture([f"pip://{venv}"], store=store)
    written = store.blobs.blobs_written
    preimage.capture([f"pip://{venv}"], store=store)
    assert store.blobs.blobs_written - written == 1


def test_interpreter_path_is_a_target_too(venv: Path, store: Store) -> None:
    """pip:///venv/bin/python captures the same set as pip:///venv."""
    by_dir = preimage.capture([f"pip://{venv}"], store=store).snapshots[0]
    by_python = preimage.capture([f"pip://{venv / 'bin' / 'python'}"], store=store).snapshots[0]
    assert by_dir.items == by_python.items


def test_dry_run_changes_nothing(venv: Path, wheelhouse: Path, store: Store) -> None:
    """A dry run plans the downgrade and the removal but installs and removes nothing."""
    backup = preimage.capture([f"pip://{venv}"], store=store)
    outer_pip(venv, "install", "--no-index", "--find-links", str(wheelhouse), "-U", "liba")
    damaged = freeze(venv)
    result = preimage.restore(backup.id, store=store, dry_run=True)
    planned = {i.key: i.action for r in result.reports for i in r.items if i.outcome is Outcome.PLANNED}
    assert planned == {"liba": "install 5.9.0 (now 5.10.0)", "libb": "remove 1.0"}
    assert freeze(venv) == damaged


def test_refuse_policy_stops_before_changing_anything(
    venv: Path, wheelhouse: Path, store: Store
) -> None:
    """With conflict=refuse a changed environment raises and stays as it is."""
    backup = preimage.capture([f"pip://{venv}"], store=store)
    outer_pip(venv, "install", "--no-index", "--find-links", str(wheelhouse), "-U", "liba")
    damaged = freeze(venv)
    with pytest.raises(RestoreConflictError, match="liba"):
        preimage.restore(backup.id, store=store, conflict="refuse")
    assert freeze(venv) == damaged


def test_directory_without_python_is_refused(tmp_path: Path, store: Store) -> None:
    """A directory with no bin/python is refused as 'not a Python environment'."""
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidTargetError, match="not a Python environment"):
        preimage.capture([f"pip://{tmp_path / 'empty'}"], store=store)


def test_missing_path_is_refused(tmp_path: Path, store: Store) -> None:
    """A path that does not exist is refused and names the path."""
    with pytest.raises(InvalidTargetError, match="does not exist"):
        preimage.capture([f"pip://{tmp_path / 'nope'}"], store=store)


def test_executable_that_is_not_python_is_refused(tmp_path: Path, store: Store) -> None:
    """An executable that is not a Python interpreter is refused with its error."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho not python >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(InvalidTargetError, match="not a working Python interpreter"):
        preimage.capture([f"pip://{fake}"], store=store)
