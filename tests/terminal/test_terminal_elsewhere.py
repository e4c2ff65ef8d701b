"""A git repository and a Python environment restored into another path with real git
and pip, and scored there."""

from __future__ import annotations

import json
import subprocess
import sys
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


def _pip(python: Path, *args: str) -> str:
    return subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args],
                          check=True, capture_output=True, text=True).stdout


def test_environment_restores_into_another_venv(venv_with_pip: Path, tmp_path: Path, store: Store, cli: Any) -> None:
    """`restore ID --to pip:///other-venv` into a fresh venv: the same distributions, the
    console scripts run there with its own python, `pip check` and `pip list` agree with
    the source, and `score --against` is 1.0 with the prefix and each rewritten script
    reported as mapped."""
    backup = preimage.capture([f"pip://{venv_with_pip}"], store=store)
    dest = tmp_path / "other-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    res = cli("restore", backup.id, "--to", f"pip://{dest}", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    mapped = {m["what"]: (m["old"], m["new"]) for m in doc["mapped"][f"pip://{dest}"]}
    assert mapped["prefix"] == (str(venv_with_pip), str(dest))
    assert any(w.startswith("app ") and w.endswith("bin/app") for w in mapped), mapped
    shebang = (dest / "bin" / "app").read_text().splitlines()[0]
    assert shebang == f"#!{dest}/bin/python"
    ran = subprocess.run([str(dest / "bin" / "app")], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == subprocess.run([str(venv_with_pip / "bin" / "app")],
                                        capture_output=True, text=True).stdout
    assert _pip(dest / "bin" / "python", "list", "--format=freeze") == \
        _pip(venv_with_pip / "bin" / "python", "list", "--format=freeze")
    _pip(dest / "bin" / "python", "check")
    assert (venv_with_pip / "bin" / "app").read_text().startswith(f"#!{venv_with_pip}/")
    score = json.loads(cli("score", backup.id, "--against", f"pip://{dest}", "--json",
                           check=True).stdout)
    assert score["restorable"]["score"] == 1.0, score["differences"]
    assert {"what": "prefix", "old": str(venv_with_pip), "new": str(dest), "note": ""} in \
        score["mapped"]


def test_pip_environment_into_a_missing_or_own_environment_is_refused(venv: Path, tmp_path: Path, store: Store, cli: Any) -> None:
    """A destination that is no environment, or lies inside the source, is one line,
    exit 2, nothing written."""
    backup = preimage.capture([f"pip://{venv}"], store=store)
    for dest, words in ((tmp_path / "no-venv", "pip://"), (venv / "inner", "overlaps")):
        proc = cli("restore", backup.id, "--to", f"pip://{dest}")
        assert proc.returncode == 2, proc.stdout
        assert words in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert not dest.exists()
