"""The user's rules are validated once per version of each file, never once per call.

A resident decision service answers every call through :func:`load_rules`; re-reading
and re-validating ``rules.d`` each time would cost every call the YAML parse.  Each
file is read again exactly when it changed — edited, replaced, added or removed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from preimage.layer.deciding import rules as rules_mod
from preimage.layer.deciding.rules import load_rules

RULE = ("rules:\n  - name: {name}\n    tier: pair\n    impact: high\n"
        "    match: {{command: [deploy], subcommand: [wipe]}}\n"
        "    targets: ['file://{{cwd}}/data']\n")
LONG_AGO = 1_600_000_000   # a write this old cannot be followed by one with the same stamp


def write(path: Path, name: str) -> None:
    path.write_text(RULE.format(name=name))
    os.utime(path, (LONG_AGO, LONG_AGO))


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the user's rule files read from disk (and validated) from now on."""
    seen: list[str] = []
    rules_mod.builtin_rules()   # the shipped rules: read once per process, not counted
    real = rules_mod._load_file

    def spy(path: Path, source: str) -> tuple[list[rules_mod.Rule], list[str]]:
        if source == "user":
            seen.append(Path(str(path)).name)
        return real(path, source)

    monkeypatch.setattr(rules_mod, "_load_file", spy)
    return seen


def names(folder: Path) -> list[str]:
    return [r.name for r in load_rules(folder).rules if r.source == "user"]


def test_unchanged_rules_are_not_read_again(tmp_path: Path, reads: list[str]) -> None:
    """Calls after the first get the same validated table without touching the YAML."""
    write(tmp_path / "mine.yaml", "my-deploy")
    first = load_rules(tmp_path)
    assert [r.name for r in first.rules if r.source == "user"] == ["my-deploy"]
    assert reads == ["mine.yaml"]
    for _ in range(3):
        assert load_rules(tmp_path) is first
    assert reads == ["mine.yaml"]


def test_an_edit_a_new_file_and_a_removal_are_seen(tmp_path: Path, reads: list[str]) -> None:
    """Only the file that changed is read again; a new file is read, a removed one is gone."""
    write(tmp_path / "a.yaml", "rule-a")
    write(tmp_path / "b.yaml", "rule-b")
    assert names(tmp_path) == ["rule-a", "rule-b"]
    reads.clear()
    write(tmp_path / "b.yaml", "rule-b2")          # same size class, new content and inode times
    assert names(tmp_path) == ["rule-a", "rule-b2"]
    assert reads == ["b.yaml"]
    reads.clear()
    write(tmp_path / "c.yaml", "rule-c")
    assert names(tmp_path) == ["rule-a", "rule-b2", "rule-c"]
    assert reads == ["c.yaml"]
    (tmp_path / "a.yaml").unlink()
    assert names(tmp_path) == ["rule-b2", "rule-c"]


def test_a_file_written_just_now_is_read_on_every_call(tmp_path: Path, reads: list[str]) -> None:
    """A file whose last write is too recent to be told apart from a next one is not
    cached: a second write in the same timestamp tick is still seen."""
    path = tmp_path / "fresh.yaml"
    path.write_text(RULE.format(name="one"))
    assert names(tmp_path) == ["one"]
    path.write_text(RULE.format(name="two"))      # same size, possibly the same mtime
    assert names(tmp_path) == ["two"]
    assert reads == ["fresh.yaml", "fresh.yaml"]


def test_a_broken_file_is_reported_each_call_and_fixed_when_edited(tmp_path: Path) -> None:
    """A file's problems stay reported while it is unchanged; a fix clears them."""
    path = tmp_path / "bad.yaml"
    path.write_text("rules:\n  - name: x\n    tier: nonsense\n    match: {command: [x]}\n")
    os.utime(path, (LONG_AGO, LONG_AGO))
    assert load_rules(tmp_path).problems and load_rules(tmp_path).problems
    write(path, "fixed")
    fixed = load_rules(tmp_path)
    assert fixed.problems == [] and [r.name for r in fixed.rules if r.source == "user"] == ["fixed"]
