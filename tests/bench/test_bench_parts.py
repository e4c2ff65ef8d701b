"""Scenario files, coverage of target URIs and seeding: the parts users touch directly."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from preimage import UsageError
from preimage.bench.library import load_scenarios
from preimage.bench.protector import uri_covers
from preimage.bench.scenario import parse_scenario, select
from preimage.bench.systems.base import Sandbox, get_system


def test_builtin_scenarios_load_and_cover_every_category() -> None:
    """The shipped scenario files parse and span terminal and SQL at least."""
    scenarios = load_scenarios()
    ids = {s.id for s in scenarios}
    assert {"T-rm-home", "T-rm-sibling", "T-chmod-R", "T-config-overwrite", "S-sqlite-file"} <= ids
    assert {s.category for s in select(scenarios, "quick")} >= {"terminal", "sql"}


def test_bad_scenario_names_file_and_field() -> None:
    """A scenario with a wrong field is refused with the file and the field named."""
    text = "id: X-1\ntitle: t\ncategory: nowhere\nsystem: files\ncall: {input: {}}\n"
    text += "expected_lost: ['file:///x']\n"
    with pytest.raises(UsageError, match=r"mine\.yaml: category"):
        parse_scenario(text, "mine.yaml")


def test_duplicate_scenario_id_is_refused(tmp_path: Path) -> None:
    """A user scenario reusing a built-in id is an error naming both files."""
    (tmp_path / "dup.yaml").write_text(
        "id: T-chmod-R\ntitle: t\ncategory: terminal\nsystem: files\n"
        "call: {input: {command: 'true'}}\nexpected_lost: ['file:///x']\n"
    )
    with pytest.raises(UsageError, match="defined twice"):
        load_scenarios([tmp_path])


@pytest.mark.parametrize(
    ("captured", "expected", "covered"),
    [
        ("file:///h/Documents", "file:///h/Documents/keys", True),
        ("file:///h/Doc", "file:///h/Documents", False),
        ("file:///h/app", "sqlite:////h/app/shop.db", True),
        ("sqlite:////h/app/shop.db", "sqlite:////h/app/shop.db?tables=orders", True),
        ("sqlite:////h/app/shop.db?tables=orders", "sqlite:////h/app/shop.db", False),
        ("postgresql://u@127.0.0.1:5/shop?tables=a,b", "postgres://u@127.0.0.1:5/shop?tables=a", True),
        ("postgresql://u@127.0.0.1:5/shop", "postgresql://u@127.0.0.1:6/shop", False),
        ("k8s://ctx/shop", "k8s://ctx/shop/configmaps/app", True),
    ],
)
def test_uri_coverage(captured: str, expected: str, covered: bool) -> None:
    """A backup of one target holds another exactly when it contains it."""
    assert uri_covers(captured, expected) is covered


def test_seeding_sets_modes_times_and_links(tmp_path: Path) -> None:
    """setup.files makes files with the declared mode, nanosecond mtime, symlink and empty dir."""
    sc = parse_scenario(
        """
id: X-seed
title: t
category: terminal
system: files
setup:
  files:
    - {path: "{home}/k", text: "key", mode: "600", mtime: "2024-01-02T03:04:05.123456789Z"}
    - {path: "{home}/s", symlink: "k"}
    - {path: "{home}/d", dir: true, mode: "2750"}
    - {path: "{home}/b", size: 100}
call: {input: {command: "true"}}
expected_lost: ["file://{home}"]
""",
        "x.yaml",
    )
    sb = Sandbox.create(tmp_path / "sb", sc.cwd)
    get_system("files").seed(sc, sb)
    st = os.lstat(sb.home / "k")
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_mtime_ns == 1704164645123456789
    assert os.readlink(sb.home / "s") == "k"
    assert stat.S_IMODE(os.lstat(sb.home / "d").st_mode) == 0o2750
    assert (sb.home / "b").read_bytes() == (sb.home / "b").read_bytes() and (sb.home / "b").stat().st_size == 100


def test_schema_capture_covers_its_tables() -> None:
    """A capture of a PostgreSQL schema holds the tables in it, not those of another schema."""
    base = "postgresql://u@127.0.0.1:5/shop"
    assert uri_covers(f"{base}?schema=public", f"{base}?tables=public.orders,users")
    assert not uri_covers(f"{base}?schema=public", f"{base}?tables=gis.places")


def test_widening_parameters_do_not_break_coverage() -> None:
    """A recursive folder capture holds the folder; a message subset does not hold it all."""
    base = "imap://u@127.0.0.1:143"
    assert uri_covers(f"{base}/Projects?recursive=1", f"{base}/Projects")
    assert not uri_covers(f"{base}/INBOX?uids=1:5", f"{base}/INBOX")


def test_a_capture_read_to_a_depth_does_not_hold_the_tree_below() -> None:
    """file://site?depth=0 (the directory entry only) does not cover file://site; the same
    depth does, and an unnarrowed parent covers a child."""
    from preimage.bench.protector import uri_covers

    assert not uri_covers("file:///a/site?depth=0", "file:///a/site")
    assert uri_covers("file:///a/site?depth=1", "file:///a/site?depth=1")
    assert uri_covers("file:///a", "file:///a/site/index.html")
