"""`preimage list`: the newest backups, and a word when more exist than it shows."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def test_list_says_when_more_backups_exist(cli: Callable[..., Any], tmp_path: Path) -> None:
    """With more backups than --limit, list says how many exist and how to see them all;
    --json stays one list, and --limit 0 lists every backup."""
    for i in range(3):
        f = tmp_path / f"f{i}.txt"
        f.write_text(str(i))
        cli("capture", f.as_uri(), check=True)
    cut = cli("list", "--limit", "2", "--json", check=True)
    assert len(json.loads(cut.stdout)) == 2
    assert "2 newest of 3 backups shown" in cut.stderr and "--limit 0" in cut.stderr
    whole = cli("list", "--limit", "0", "--json", check=True)
    assert len(json.loads(whole.stdout)) == 3 and whole.stderr == ""
    plain = cli("list", check=True)
    assert "newest of" not in plain.stderr and plain.stdout.count("f") >= 3
