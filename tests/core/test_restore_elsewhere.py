"""Restore anywhere, compare anything — the engine, the CLI and the file connector:
``restore ID --to``, ``score ID --against URI|ID``, ``diff ID1 ID2``, ``--junit``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

import preimage
from preimage import Store

CliResult = subprocess.CompletedProcess[str]


def build_tree(root: Path) -> None:
    """Bytes, modes, a symlink, a hardlink, an xattr and exact mtimes."""
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "tool").write_bytes(b"#!/bin/sh\necho hi\n")
    (root / "bin" / "tool").chmod(0o4755)
    (root / "secret").write_text("key\n")
    (root / "secret").chmod(0o600)
    (root / "link").symlink_to("bin/tool")
    (root / "a.txt").write_text("hard\n")
    os.link(root / "a.txt", root / "b.txt")
    os.setxattr(root / "a.txt", "user.tag", b"blue")
    for p in (root / "a.txt", root / "bin" / "tool", root / "secret", root / "bin"):
        os.utime(p, ns=(1_600_000_000_000_000_001, 1_650_000_000_123_456_789))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "data" / "work"
    build_tree(root)
    return root


def test_restore_to_another_directory_scores_one(tree: Path, tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """`restore ID --to file:///other` rebuilds the tree there, the source untouched, and
    `score ID --against file:///other` is 1.0 with the root reported as mapped."""
    backup = json.loads(cli("capture", f"file://{tree}", "--json", check=True).stdout)["id"]
    (tree / "a.txt").write_text("edited after the backup\n")
    dest = tmp_path / "staging"
    res = cli("restore", backup, "--to", f"file://{dest}", "--json", check=True)
    doc = json.loads(res.stdout)
    assert doc["ok"] and doc["undo_backup"]
    assert doc["mapped"][f"file://{dest}"][0] == {
        "what": "root", "old": str(tree), "new": str(dest), "note": ""}
    assert (tree / "a.txt").read_text() == "edited after the backup\n"
    assert (dest / "a.txt").read_text() == "hard\n"
    assert stat.S_IMODE(os.stat(dest / "bin" / "tool").st_mode) == 0o4755
    assert os.stat(dest / "a.txt").st_ino == os.stat(dest / "b.txt").st_ino
    assert os.getxattr(dest / "a.txt", "user.tag") == b"blue"
    scored = json.loads(cli("score", backup, "--against", f"file://{dest}", "--json",
                            "--min", "1.0", check=True).stdout)
    assert scored["content"] == 1.0 and scored["metadata"] == 1.0
    assert scored["mapped"] == [{"what": "root", "old": str(tree), "new": str(dest), "note": ""}]
    # the source itself changed since: the in-place score sees it, the copy does not
    assert preimage.score(backup)[0].restorable.score < 1.0


def test_undo_backup_of_restore_elsewhere_takes_the_destination_back(tree: Path, tmp_path: Path, store: Store) -> None:
    """The destination's state before the restore is its own backup: restoring it puts
    the destination back as it was (here: absent)."""
    backup = preimage.capture([f"file://{tree}"], store=store)
    dest = tmp_path / "elsewhere"
    result = preimage.restore_to(backup.id, f"file://{dest}", store=store)
    assert dest.exists() and result.undo_backup_id
    preimage.restore(result.undo_backup_id, store=store)
    assert not dest.exists()


def test_cp_r_loses_what_the_gate_names(tree: Path, tmp_path: Path, store: Store) -> None:
    """A plain `cp -r` copy keeps the bytes but not mtimes, setuid or the xattr: scored
    against the backup, content is 1.0 and every metadata field it lost is named."""
    backup = preimage.capture([f"file://{tree}"], store=store)
    dest = tmp_path / "copied"
    subprocess.run(["cp", "-r", str(tree), str(dest)], check=True)
    total, _ = preimage.score_against(backup.id, f"file://{dest}", store=store)
    assert total.score_of("content").score is not None
    lost = {(d.item, d.path.rsplit(".", 1)[-1]) for d in total.differences
            if d.fidelity == "metadata"}
    assert ("a.txt", "mtime_ns") in lost
    assert any(item == "a.txt" and "xattrs" in path for item, path in lost)
    assert ("bin/tool", "mode") in lost
    assert total.restorable.score is not None and total.restorable.score < 1.0
    # the hardlink became two files: content names it too
    assert any(d.item == "b.txt" and d.fidelity == "content" for d in total.differences)


def test_score_one_backup_against_another(tree: Path, tmp_path: Path, store: Store, cli: Callable[..., CliResult]) -> None:
    """`score ID1 --against ID2` compares two backups (of two places) after mapping the
    root; `diff ID1 ID2` names the one file that differs and exits 1."""
    first = preimage.capture([f"file://{tree}"], store=store)
    other = tmp_path / "other"
    preimage.restore_to(first.id, f"file://{other}", store=store)
    same = preimage.capture([f"file://{other}"], store=store)
    total, per_target = preimage.score_against(first.id, same.id, store=store)
    assert total.restorable.score == 1.0
    assert per_target[0][0] == f"file://{other}"
    assert [m.what for m in total.mapped] == ["root"]
    (other / "secret").write_text("changed\n")
    os.utime(other / "secret", ns=(1_600_000_000_000_000_001, 1_650_000_000_123_456_789))
    changed = preimage.capture([f"file://{other}"], store=store)
    proc = cli("diff", first.id, changed.id)
    assert proc.returncode == 1, proc.stderr
    assert "secret" in proc.stdout and "mapped   root:" in proc.stdout
    assert cli("diff", first.id, same.id).returncode == 0


def test_junit_report_names_every_lost_field(tree: Path, tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """`score --junit FILE` writes one failing test case per target below the bar, its
    failure listing the fields that differ; the exit status is 1."""
    backup = json.loads(cli("capture", f"file://{tree}", "--json", check=True).stdout)["id"]
    dest = tmp_path / "copied"
    shutil.copytree(tree, dest, symlinks=True)  # modes, times, xattrs: not the hardlink
    report = tmp_path / "fidelity.xml"
    proc = cli("score", backup, "--against", f"file://{dest}", "--min", "1.0",
               "--junit", str(report))
    assert proc.returncode == 1
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    case = suite.find("testcase")
    assert case is not None and case.get("name") == f"file://{dest}"
    failure = case.find("failure")
    assert failure is not None and "b.txt  hardlink_to" in (failure.text or "")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["mapped root"] == f"{tree} → {dest}"


@pytest.mark.parametrize("where", ["inside", "parent", "same"])
def test_destination_overlapping_the_source_is_refused(tree: Path, store: Store, where: str) -> None:
    """A destination inside the source, holding it, or the source itself is refused
    with one line, and nothing is written."""
    dest = {"inside": tree / "sub", "parent": tree.parent, "same": tree}[where]
    backup = preimage.capture([f"file://{tree}"], store=store)
    before = sorted(p.name for p in tree.iterdir())
    with pytest.raises(preimage.UsageError, match=r"own target|overlaps"):
        preimage.restore_to(backup.id, f"file://{dest}", store=store)
    assert sorted(p.name for p in tree.iterdir()) == before
    assert not (tree / "sub").exists()


def test_destination_holding_the_store_is_refused(tree: Path, store: Store, cli: Callable[..., CliResult]) -> None:
    """`--to` the store's own directory (or one holding it) is refused before writing."""
    backup = preimage.capture([f"file://{tree}"], store=store)
    proc = cli("restore", backup.id, "--to", f"file://{store.home.parent}")
    assert proc.returncode == 2
    assert "holds the backup store" in proc.stderr and "Traceback" not in proc.stderr
    assert store.home.exists() and (store.home / "catalog.sqlite").exists()


def test_sqlite_file_inside_the_store_is_refused(tmp_path: Path, store: Store) -> None:
    """A SQLite destination inside the store (its own catalog, say) is refused before writing."""
    import sqlite3

    db = tmp_path / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x int)")
    conn.close()
    backup = preimage.capture([f"sqlite:///{db}"], store=store)
    catalog = store.home / "catalog.sqlite"
    before = catalog.stat().st_size
    with pytest.raises(preimage.UsageError, match="holds the backup store or lies inside it"):
        preimage.restore_to(backup.id, f"sqlite:///{catalog}", store=store)
    assert catalog.stat().st_size == before


def test_against_a_target_of_another_kind_is_refused(tree: Path, tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """Scoring a file backup against a SQLite database is a one-line usage error."""
    backup = json.loads(cli("capture", f"file://{tree}", "--json", check=True).stdout)["id"]
    proc = cli("score", backup, "--against", f"sqlite:///{tmp_path}/x.db")
    assert proc.returncode == 2
    assert "not a file target" in proc.stderr and "Traceback" not in proc.stderr


def test_connector_that_cannot_relocate_is_refused_clearly() -> None:
    """The interface's default refuses with a sentence naming the connector and what to do."""
    from preimage.interface.connector import ConnectorBase, relocate
    from preimage.snapshot_schemas import Snapshot

    class Plain(ConnectorBase):
        scheme = "plain"

    snap = Snapshot(connector="plain", target="plain://a")
    with pytest.raises(preimage.UsageError, match="cannot restore or compare plain://a"):
        relocate(Plain(), snap, preimage.Target.parse("plain://b"))
    assert relocate(Plain(), snap, preimage.Target.parse("plain://a")).snapshot is snap


def test_several_targets_need_a_destination_each(tree: Path, tmp_path: Path, store: Store, cli: Callable[..., CliResult]) -> None:
    """A two-target backup with one --to and no --only is refused; with --only/--to
    pairs each target lands in its own destination."""
    other = tmp_path / "second"
    other.mkdir()
    (other / "f").write_text("2\n")
    backup = preimage.capture([f"file://{tree}", f"file://{other}"], store=store)
    proc = cli("restore", backup.id, "--to", f"file://{tmp_path}/x")
    assert proc.returncode == 2 and "--only URI --to URI" in proc.stderr
    cli("restore", backup.id, "--only", f"file://{tree}", "--to", f"file://{tmp_path}/d1",
        "--only", f"file://{other}", "--to", f"file://{tmp_path}/d2", check=True)
    assert (tmp_path / "d1" / "a.txt").read_text() == "hard\n"
    assert (tmp_path / "d2" / "f").read_text() == "2\n"




def test_restore_to_killed_half_way_then_run_again_resumes(tmp_path: Path, home: Path, cli: Callable[..., CliResult]) -> None:
    """`restore ID --to`, kill -9 after 150 of 600 files, the same command again: it resumes
    with the first run's undo backup and the copy scores 1.0 against the backup."""
    root = tmp_path / "many"
    root.mkdir()
    for i in range(600):
        (root / f"f{i:04}").write_bytes(os.urandom(128))
    backup = cli("capture", f"file://{root}", check=True).stdout.strip()
    dest = f"file://{tmp_path / 'copy'}"
    killed = cli("restore", backup, "--to", dest,
                 env={**os.environ, "PREIMAGE_CRASH_AT": "restore-write:150"})
    assert killed.returncode == -signal.SIGKILL
    assert not (tmp_path / "copy").exists()   # staged beside it, never published
    again = json.loads(cli("restore", backup, "--to", dest, "--json", check=True).stdout)
    with Store(home) as st:
        journal = [e for e in st.catalog.restores() if e.backup_id == backup]
    assert [e.status for e in journal] == ["done"]
    assert again["undo_backup"] == journal[0].undo_backup
    score = json.loads(cli("score", backup, "--against", dest, "--json", check=True).stdout)
    assert score["restorable"]["score"] == 1.0
    assert sorted(os.listdir(tmp_path / "copy")) == sorted(os.listdir(root))


def test_restore_to_run_again_after_the_destination_changed_takes_a_fresh_undo(tree: Path, tmp_path: Path, home: Path, cli: Callable[..., CliResult]) -> None:
    """A killed `restore --to` whose destination was edited meanwhile is not resumed: the
    old journal entry is superseded and a fresh undo backup holds the edit."""
    backup = cli("capture", f"file://{tree}", check=True).stdout.strip()
    dest = tmp_path / "staging"
    killed = cli("restore", backup, "--to", f"file://{dest}",
                 env={**os.environ, "PREIMAGE_CRASH_AT": "restore-write:2"})
    assert killed.returncode == -signal.SIGKILL
    dest.mkdir()   # the killed run left it absent; someone makes it meanwhile
    (dest / "someone-else.txt").write_text("written meanwhile\n")
    again = json.loads(cli("restore", backup, "--to", f"file://{dest}", "--json",
                           check=True).stdout)
    with Store(home) as st:
        journal = {e.status: e for e in st.catalog.restores() if e.backup_id == backup}
    assert sorted(journal) == ["done", "superseded"]
    assert again["undo_backup"] == journal["done"].undo_backup != journal["superseded"].undo_backup
    undone = preimage.restore(again["undo_backup"])
    assert undone.ok
    assert (dest / "someone-else.txt").read_text() == "written meanwhile\n"
