"""`preimage rules list|explain`: the rule table and how one call would be handled."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from layer_world import World

Cli = Callable[..., subprocess.CompletedProcess[str]]


def test_rules_list_shows_shipped_rules(cli: Cli, home: Path) -> None:
    """The listing names shipped rules with their tier."""
    rows = json.loads(cli("rules", "list", "--json", check=True).stdout)
    by_name = {r["name"]: r for r in rows}
    assert by_name["git-clean"]["tier"] == "rewrite"
    assert by_name["kubectl-delete"]["tier"] == "pair"
    assert len(rows) >= 80


def test_explain_names_tier_rule_and_targets_without_capturing(cli: Cli, home: Path,
                                                               world: World) -> None:
    """Explaining a command shows its rule and targets and takes no backup."""
    doc = json.loads(cli("rules", "explain", "git clean -fdx && rm notes.txt", "--json",
                         cwd=world.proj, env=world.env | {"PREIMAGE_HOME": str(home)},
                         check=True).stdout)
    assert doc["tier"] == "pair" and doc["rewrite"] is None   # captured; nothing rewritten
    assert doc["rules"] == ["git-clean", "rm"]
    assert f"git://{world.proj}" in doc["wanted"]
    assert not (home / "catalog.sqlite").exists()


def test_a_call_nothing_rewrote_is_not_labelled_rewrite_tier(cli: Cli, home: Path,
                                                             world: World) -> None:
    """`git reset --hard` is captured, not rewritten: its decision says the pair tier."""
    doc = json.loads(cli("rules", "explain", "git reset --hard", "--json", cwd=world.proj,
                         env=world.env | {"PREIMAGE_HOME": str(home)}, check=True).stdout)
    assert doc["rules"] == ["git-reset-hard"] and doc["rewrite"] is None
    assert doc["tier"] == "pair"
    shown = cli("rules", "explain", "git reset --hard", cwd=world.proj,
                env=world.env | {"PREIMAGE_HOME": str(home)}, check=True).stdout
    assert "rewrite" not in shown and "tier pair, rule git-reset-hard" in shown


def test_user_rule_in_rules_d_wins(cli: Cli, home: Path, world: World) -> None:
    """A rule in rules.d is used before the shipped ones and explained as the user's."""
    rules_d = home.parent / "config" / "rules.d"
    rules_d.mkdir(parents=True)
    (rules_d / "mine.yaml").write_text(
        "rules:\n  - name: my-deploy\n    tier: pair\n    impact: high\n"
        "    match: {command: [deploy], subcommand: [wipe]}\n"
        "    targets: ['file://{cwd}/data']\n")
    doc = json.loads(cli("rules", "explain", "deploy wipe --yes", "--json", cwd=world.proj,
                         env=world.env, check=True).stdout)
    assert doc["rules"] == ["my-deploy"]
    assert doc["wanted"] == [f"file://{world.proj}/data", f"file://{world.proj}?depth=0"]


def test_explain_and_guard_dry_run_name_what_widened_the_capture(cli: Cli, home: Path,
                                                                 world: World) -> None:
    """A word the layer cannot expand widens the capture, and both commands say which word."""
    env = world.env | {"PREIMAGE_HOME": str(home)}
    command = "rm -rf $(pwd)/build"
    text = cli("rules", "explain", command, "--workspace", str(world.proj), cwd=world.proj,
               env=env, check=True).stdout
    assert "widened by: word `$(pwd)/build`" in text
    assert f"-> file://{world.proj}" in text
    doc = json.loads(cli("rules", "explain", command, "--workspace", str(world.proj), "--json",
                         cwd=world.proj, env=env, check=True).stdout)
    assert [w for f in doc["findings"] for w in f["forced_by"]] == ["word `$(pwd)/build`"]
    guarded = cli("guard", "--dry-run", "--workspace", str(world.proj), "--", command,
                  cwd=world.proj, env=env, check=True)
    assert "`$(pwd)/build`" in guarded.stderr
    assert guarded.stdout.strip()            # the backup ID: the workspace was captured
    dry = cli("guard", "--dry-run", "--json", "--workspace", str(world.proj), "--", command,
              cwd=world.proj, env=env, check=True)
    decision = json.loads(dry.stderr.strip().splitlines()[-1])
    assert ["word `$(pwd)/build`"] in [f["forced_by"] for f in decision["findings"]]
