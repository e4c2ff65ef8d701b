"""The command line's contract: exit codes, JSON shapes, one-line errors on bad input."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

import preimage
from preimage import Store
from preimage.cli.main import main
from preimage.store.snapshots import snapshot_bytes

CliResult = subprocess.CompletedProcess[str]


@dataclass
class Run:
    """One in-process CLI run: exit code, stdout, stderr."""

    code: int
    out: str
    err: str


@pytest.fixture
def run(home: Path) -> Callable[..., Run]:
    """``preimage ARGS`` in this process (an exception escaping the CLI fails the test)."""

    def invoke(*args: str) -> Run:
        runner = CliRunner(env={"PREIMAGE_HOME": str(home)})
        result = runner.invoke(main, list(args), catch_exceptions=False)
        return Run(result.exit_code, result.stdout, result.stderr)

    return invoke


def _one_line_error(r: Run, needle: str) -> None:
    assert r.code == 2, (r.out, r.err)
    assert "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert needle in r.err, r.err


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    root.mkdir()
    (root / "f").write_text("x\n")
    return root


def test_diff_exits_like_diff1(tree: Path, run: Callable[..., Run]) -> None:
    """diff: 0 when nothing differs, 1 when something does, 2 on trouble."""
    backup = run("capture", f"file://{tree}").out.strip()
    assert run("diff", backup).code == 0
    (tree / "f").write_text("changed\n")
    assert run("diff", backup).code == 1
    assert run("diff", backup, "--json").code == 1
    assert run("diff", "nosuchid").code == 2


def test_list_on_an_empty_store_exits_0(run: Callable[..., Run]) -> None:
    """An empty store is not an error: `list` exits 0, `list --json` prints []."""
    assert run("list").code == 0
    r = run("list", "--json")
    assert r.code == 0 and json.loads(r.out) == []


def test_json_times_are_iso8601_with_a_timezone(tree: Path, run: Callable[..., Run]) -> None:
    """Every time in --json output carries its timezone."""
    backup = run("capture", f"file://{tree}").out.strip()
    doc = json.loads(run("show", backup, "--json").out)
    for key in ("created_at", "finished_at"):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", doc[key]), doc[key]
    listed = json.loads(run("list", "--json").out)
    assert listed[0]["created_at"] == doc["created_at"]


def test_an_ambiguous_prefix_lists_its_candidates(tree: Path, store: Store,
                                                  run: Callable[..., Run]) -> None:
    """A prefix matching several backups says so and names them."""
    ids = [preimage.capture([f"file://{tree}"], store=store).id for _ in range(3)]
    common = ids[0][: next(i for i in range(13) if len({x[i] for x in ids}) > 1)]
    r = run("show", common)
    _one_line_error(r, "ambiguous")
    for i in ids:
        assert i in r.err


def test_only_accepts_every_target_as_the_backup_lists_it(tmp_path: Path, tree: Path,
                                                         store: Store,
                                                         run: Callable[..., Run]) -> None:
    """--only with the exact target string from `show` selects that target (sqlite://// too)."""
    import sqlite3

    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        conn.execute("INSERT INTO t VALUES (1, 'a')")
    conn.close()
    backup = preimage.capture([f"file://{tree}", f"sqlite:///{db}"], store=store)
    targets = [s["target"] for s in json.loads(run("show", backup.id, "--json").out)["snapshots"]]
    assert targets[1].startswith("sqlite:////")
    for target in targets:
        r = run("restore", backup.id, "--only", target, "--dry-run", "--json")
        assert r.code == 0, r.err
        assert [rep["target"] for rep in json.loads(r.out)["reports"]] == [target]


def test_demo_json_prints_only_json(tmp_path: Path, run: Callable[..., Run]) -> None:
    """`preimage demo --json` prints one JSON document and nothing else on stdout."""
    r = run("demo", "--json", "--dir", str(tmp_path / "demo"))
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["restorable"] == 1.0


def test_bad_inputs_get_one_line_errors(tmp_path: Path, tree: Path, store: Store,
                                        run: Callable[..., Run]) -> None:
    """Each bad input of the list exits 2 with one line saying what to do."""
    not_db = tmp_path / "notes.txt"
    not_db.write_text("this is not a database\n")
    _one_line_error(run("capture", "file:///x%00y"), "NUL")
    _one_line_error(run("capture", "file:///tmp/a\nb"), "control character")
    _one_line_error(run("capture", f"sqlite:///{not_db}"), "not a database")
    backup = preimage.capture([f"file://{tree}"], store=store)
    # a snapshot document that hashes right but does not parse
    bad = store.blobs.put_bytes(b'{"schema_version": 2, "connector": "file", "items": 7}')
    store.blobs.flush()   # where another process (the CLI) can read it
    with store.catalog._tx() as db:  # type: ignore[attr-defined]
        db.execute("UPDATE snapshots SET digest=? WHERE backup_id=?", (bad, backup.id))
        db.execute("INSERT INTO refs VALUES (?,?,?)", (backup.id, 0, bad))
    _one_line_error(run("restore", backup.id), "malformed")
    _one_line_error(run("score", backup.id), "malformed")


def test_one_bad_tool_call_row_leaves_list_usable(tree: Path, store: Store,
                                                  run: Callable[..., Run]) -> None:
    """A tool_call row that is not JSON is shown as a problem, not a crash; check names it."""
    backup = preimage.capture([f"file://{tree}"], store=store, tool_call={"tool": "Bash"})
    with store.catalog._tx() as db:  # type: ignore[attr-defined]
        db.execute("UPDATE backups SET tool_call='{not json' WHERE id=?", (backup.id,))
    assert run("list").code == 0
    assert backup.id in run("list").out
    assert "tool_call" in run("show", backup.id).out
    r = run("check")
    assert r.code == 1 and backup.id in r.out
    assert run("check", "--repair").code == 0
    assert run("check").code == 0


def test_a_full_filesystem_during_restore_is_one_line(tmp_path: Path, store: Store,
                                                      run: Callable[..., Run]) -> None:
    """The target filesystem filling during a restore gives one line and the undo backup."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        root = mnt / "t"
        root.mkdir()
        for i in range(3):
            (root / f"f{i}").write_bytes(os.urandom(300_000))
        backup = preimage.capture([f"file://{root}"], store=store)
        shutil.rmtree(root)
        (mnt / "filler").write_bytes(b"\0" * 600_000)
        r = run("restore", backup.id)
        _one_line_error(r, "full")
    finally:
        subprocess.run(["umount", "-l", str(mnt)])


def test_a_deeply_nested_hook_payload_is_answered_not_crashed(cli: Callable[..., CliResult]) -> None:
    """A 1000-deep JSON payload on the hook's stdin gets an answer and exit 0, no traceback."""
    res = cli("hook", "claude-code", input="[" * 1000 + "]" * 1000)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    json.loads(res.stdout)


def test_an_edited_document_is_refused_by_restore(tree: Path, store: Store) -> None:
    """A document that parses but names a tree elsewhere is refused (the catalog decides)."""
    backup = preimage.capture([f"file://{tree}"], store=store)
    snap = backup.snapshots[0]
    moved = snap.model_copy(update={"target": "file:///etc"})
    digest = store.blobs.put_bytes(snapshot_bytes(moved))
    with store.catalog._tx() as db:  # type: ignore[attr-defined]
        db.execute("UPDATE snapshots SET digest=? WHERE backup_id=?", (digest, backup.id))
    with pytest.raises(preimage.StoreError, match="names file:///etc"):
        preimage.restore(backup.id, store=store)


def test_names_that_look_like_markup_are_printed_as_they_are(tmp_path: Path,
                                                            run: Callable[..., Run]) -> None:
    """A file named ``a[bold]b`` and a table named ``t[/]x`` (legal names, and rich's markup
    syntax) come out of restore, score, diff and list as they are: not styled away, and
    not an error after the restore has already been done."""
    import sqlite3

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a[bold]b").write_text("x\n")
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute('CREATE TABLE "t[/]x" (id integer PRIMARY KEY, v text)')
        conn.execute("""INSERT INTO "t[/]x" VALUES (1, '[red]one[/]')""")
    backup = run("capture", f"file://{tree}", f"sqlite:///{db}").out.strip()
    (tree / "a[bold]b").unlink()
    with sqlite3.connect(db) as conn:
        conn.execute('DROP TABLE "t[/]x"')
    changed = run("diff", backup)
    assert changed.code == 1 and "a[bold]b" in changed.out, changed
    restored = run("restore", backup)
    assert restored.code == 0, restored
    assert "a[bold]b" in restored.out and "t[/]x" in restored.out, restored.out
    scored = run("score", "--show", "20", backup)
    assert scored.code == 0 and "Traceback" not in scored.err, scored
    assert run("list").code == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute('SELECT v FROM "t[/]x"').fetchall() == [("[red]one[/]",)]
