"""Restores longer than the plan's page and the report's in-memory results: the same
outcome, every entry accounted for (the plan's rows and the report's results past
those sizes are read back from temporary files)."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from preimage.connectors.files.plan_table import PAGE
from preimage.restoration import Outcome, RestoreReport
from preimage.restoration import report as report_module

FILES = 5000   # past PAGE and SPILL_AT, in 5 directories


def _tree(root: Path) -> dict[str, bytes]:
    content: dict[str, bytes] = {}
    for i in range(FILES):
        rel = f"d{i // 1000}/f{i:05}"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        data = b"%d\n" % i * (1 + i % 7)
        (root / rel).write_bytes(data)
        content[rel] = data
    (root / "d0" / "f00001.link").hardlink_to(root / "d0" / "f00001")
    (root / "d4" / "last").symlink_to("f04999")
    return content


def _state(root: Path) -> dict[str, Any]:
    return {str(p.relative_to(root)): (p.readlink() if p.is_symlink() else
                                       None if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))}


def test_a_long_restore_after_rm_rf_lists_every_entry(tmp_path: Path,
                                                      cli: Callable[..., Any]) -> None:
    """A restore of 5,000 files after `rm -rf` puts every one back, and `--json` lists
    each entry once as restored, one to a line, with the counts the text output prints."""
    assert FILES > PAGE and FILES > report_module.SPILL_AT
    root = tmp_path / "t"
    _tree(root)
    before = _state(root)
    backup = json.loads(cli("capture", "--json", f"file://{root}", check=True).stdout)["id"]
    shutil.rmtree(root)
    printed = cli("restore", "--json", backup, check=True).stdout
    result = json.loads(printed)
    assert result["ok"] is True
    (report,) = result["reports"]
    keys = [i["key"] for i in report["items"]]
    lines = [json.loads(line.strip().rstrip(",")) for line in printed.splitlines()
             if line.lstrip().startswith('{"key": ')]
    assert lines == report["items"]   # each item whole on a line of its own: grep finds it
    assert len(keys) == len(set(keys)) == FILES + 1 + 1 + 5 + 1   # files, link, symlink, dirs, root
    assert set(keys) == {".", *before}
    assert {i["outcome"] for i in report["items"]} == {"restored"}
    assert {i["action"] for i in report["items"] if i["key"].startswith("d1/")} == {"write file"}
    assert _state(root) == before
    assert (root / "d0" / "f00001.link").stat().st_ino == (root / "d0" / "f00001").stat().st_ino
    shutil.rmtree(root)
    text = cli("restore", backup, check=True).stdout
    assert f"{len(keys)} change(s), 0 unchanged" in text
    assert "more" in text   # the table shows the first 200 changes


def test_a_long_dry_run_plans_only_what_changed(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """A dry run over a 5,000-file tree with one file changed on each side of the plan's
    page plans that file's write and its directory's metadata; every other entry is
    unchanged."""
    root = tmp_path / "t"
    _tree(root)
    backup = json.loads(cli("capture", "--json", f"file://{root}", check=True).stdout)["id"]
    (root / "d0" / "f00010").write_bytes(b"changed\n")
    (root / "d4" / "f04990").write_bytes(b"changed\n")
    plan = json.loads(cli("restore", "--dry-run", "--json", backup, check=True).stdout)
    (report,) = plan["reports"]
    planned = {i["key"]: i["action"] for i in report["items"] if i["outcome"] == "planned"}
    assert planned == {"d0/f00010": "write file", "d4/f04990": "write file",
                       "d0": "set metadata", "d4": "set metadata"}
    unchanged = [i for i in report["items"] if i["outcome"] == "unchanged"]
    assert len(unchanged) == FILES + 1 + 1 + 5 + 1 - len(planned)


def test_a_report_past_its_in_memory_results_reads_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A report with more results than it holds as objects iterates, counts, indexes,
    dumps, copies and compares as one that holds them all."""
    short = RestoreReport(target="file:///t", connector="file")
    short.add("f\udce9", Outcome.SKIPPED, "write file", "why")
    assert list(short.items.fields()) == short.model_dump(mode="json")["items"]
    monkeypatch.setattr(report_module, "SPILL_AT", 3)
    long = RestoreReport(target="file:///t", connector="file")
    expected = []
    for i in range(10):
        outcome = Outcome.RESTORED if i % 3 else Outcome.SKIPPED
        long.add(f"f\udce9{i}", outcome, "write file", "why" if i % 3 == 0 else "")
        expected.append((f"f\udce9{i}", outcome, "write file", "why" if i % 3 == 0 else ""))
    assert [(i.key, i.outcome, i.action, i.reason) for i in long.items] == expected
    assert len(long.items) == 10
    assert (long.count(Outcome.RESTORED), long.count(Outcome.SKIPPED)) == (6, 4)
    assert long.count_changes() == len(long.changes) == 6
    assert long.items[7].key == "f\udce97" and long.items[-1].key == "f\udce99"
    dumped = long.model_dump(mode="json")
    assert [d["key"] for d in dumped["items"]] == [k for k, *_ in expected]
    assert list(long.items.fields()) == dumped["items"]   # what --json prints, no model made
    again = RestoreReport.model_validate(dumped)
    assert again == long and copy.deepcopy(long) == long
    assert long.items == list(again.items)


def test_a_full_temporary_directory_stops_the_restore_before_it_writes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the plan's table cannot grow — its temporary directory is full; SQLite's own
    page limit stands in for the disk here — the restore stops before it writes anything,
    with an error that says where the table lives and what to do."""
    import preimage
    from preimage import Store
    from preimage.connectors.files import plan_table

    root = tmp_path / "t"
    _tree(root)
    store = Store(tmp_path / "home")
    backup = preimage.capture([f"file://{root}"], store=store)
    shutil.rmtree(root / "d1")
    damaged = _state(root)
    made = plan_table.PlanTable.__init__

    def small(self: plan_table.PlanTable) -> None:
        made(self)
        self._db.execute("PRAGMA max_page_count = 16")

    monkeypatch.setattr(plan_table.PlanTable, "__init__", small)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with pytest.raises(preimage.PreimageError) as raised:
        preimage.restore(backup.id, store=store)
    message = str(raised.value)
    assert str(tmp_path) in message and "TMPDIR" in message and "nothing was written" in message
    assert "\n" not in message
    assert _state(root) == damaged
    store.close()
