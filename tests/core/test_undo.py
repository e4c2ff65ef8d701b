"""Undo one call on a file tree: revert exactly its delta, keep every later change."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import preimage
from preimage import Store
from preimage.connectors.files.apply import entry_key
from preimage.connectors.files.revert import merge_lines
from preimage.engine.undo import capture_after
from preimage.snapshot_schemas.files import FileEntry

LINES = "".join(f"line {i}\n" for i in range(1, 21))


def call(store: Store, uri: str, command: str, run: object) -> str:
    """A protected call as the layer records it: a pre-call backup, the call, a
    post-call backup.  Returns the pre-call backup's ID."""
    pre = preimage.capture([uri], store=store, kind="layer", tier="pair", session="s1",
                           tool_call={"tool": "Bash", "input": {"command": command}},
                           label=command)
    run()  # type: ignore[operator]
    post = capture_after(pre.id, store=store)
    assert post is not None
    return pre.id


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text(LINES)
    (root / "src" / "util.py").write_text("def util():\n    return 1\n")
    (root / "notes.md").write_text("# notes\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    return root


@pytest.fixture
def store(tmp_path: Path) -> Store:
    st = Store(tmp_path / "home")
    yield st  # type: ignore[misc]
    st.close()


def uri(root: Path) -> str:
    return f"file://{root}"


def test_entry_key_is_the_natural_key() -> None:
    """The file restorer's exact-key check spells keys as the schema does."""
    entry = FileEntry(path="a/b c", type="file", mode=0o644, uid=0, gid=0, mtime_ns=1,
                      atime_ns=1, inode=1, ctime_ns=1)
    assert entry_key("a/b c") == entry.natural_key()


def test_undo_without_later_changes_equals_the_state_before_the_call(
        tree: Path, store: Store) -> None:
    """With nobody touching anything since, undo brings back exactly the pre-call state."""
    def damage() -> None:
        (tree / "src" / "util.py").unlink()
        (tree / "notes.md").write_text("# overwritten\n")
        (tree / "run.sh").chmod(0o644)
        (tree / "new.txt").write_text("the agent's file\n")

    pre = call(store, uri(tree), "damage", damage)
    result = preimage.undo(pre, store=store)
    assert result.ok and result.conflicts == 0
    total, _ = preimage.score(pre, store=store)
    assert total.restorable.score == 1.0, total.differences[:5]
    verdicts = {p.label: p.verdict.value for p in result.plans[0].items}
    assert verdicts["new.txt"] == "revert" and verdicts["src/util.py"] == "revert"


def test_undo_of_one_file_leaves_its_directory_s_times(tree: Path, store: Store) -> None:
    """A call that overwrote one file (``cp defaults app.yaml``) and its directory, captured
    as the layer does (the file, and the directory at depth 0): undo writes the file back
    and the directory keeps the mtime it had — the write beside the file does not leak
    into it, so the whole state scores 1.0."""
    folder = tree / "config"
    folder.mkdir()
    target = folder / "app.yaml"
    target.write_text("port: 8443\n")
    old = 1_700_000_000_000_000_000
    os.utime(folder, ns=(old, old))
    uris = [f"file://{target}", f"file://{folder}?depth=0"]
    pre = preimage.capture(uris, store=store, kind="layer", tier="pair", session="s1",
                           tool_call={"tool": "Bash", "input": {"command": "cp"}}, label="cp")
    with target.open("w") as out:   # overwritten in place: the directory does not move
        out.write("port: 8080\n")
    assert capture_after(pre.id, store=store) is not None
    result = preimage.undo(pre.id, store=store)
    assert result.ok and target.read_text() == "port: 8443\n"
    assert folder.stat().st_mtime_ns == old
    total, _ = preimage.score(pre.id, store=store)
    assert total.restorable.score == 1.0, total.differences[:5]


def test_later_changes_survive_and_the_call_is_reverted(tree: Path, store: Store) -> None:
    """A person's edits after the call — other files, a new sibling, other lines of a
    file the call edited — are all kept; the call's own changes are reverted."""
    def agent() -> None:
        (tree / "src" / "util.py").unlink()
        text = LINES.replace("line 2\n", "line 2 (agent)\n")
        (tree / "src" / "main.py").write_text(text)
        (tree / "run.sh").chmod(0o600)

    pre = call(store, uri(tree), "agent", agent)
    # the person, after the agent
    (tree / "notes.md").write_text("# notes\nwritten by a person\n")
    (tree / "src" / "helper.py").write_text("HELP = True\n")
    text = (tree / "src" / "main.py").read_text().replace("line 18\n", "line 18 (person)\n")
    (tree / "src" / "main.py").write_text(text)
    os.setxattr(tree / "run.sh", "user.reviewed", b"yes")

    result = preimage.undo(pre, store=store)
    assert result.ok and result.conflicts == 0, result.to_dict()
    assert (tree / "src" / "util.py").read_text() == "def util():\n    return 1\n"
    main = (tree / "src" / "main.py").read_text()
    assert "line 2\n" in main and "(agent)" not in main and "line 18 (person)\n" in main
    assert (tree / "notes.md").read_text() == "# notes\nwritten by a person\n"
    assert (tree / "src" / "helper.py").read_text() == "HELP = True\n"
    assert (tree / "run.sh").stat().st_mode & 0o777 == 0o755
    assert os.getxattr(tree / "run.sh", "user.reviewed") == b"yes"
    written = {i.key for r in result.reports for i in r.changes}
    assert entry_key("notes.md") not in written and entry_key("src/helper.py") not in written


def test_a_conflict_is_reported_and_left_alone(tree: Path, store: Store) -> None:
    """The same line edited by the call and again later: reported with both versions,
    the file left as it is; --take-backup then writes the pre-call version."""
    pre = call(store, uri(tree), "edit",
               lambda: (tree / "src" / "main.py").write_text(LINES.replace("line 5", "agent 5")))
    (tree / "src" / "main.py").write_text(LINES.replace("line 5", "person 5"))
    (tree / "notes.md").unlink()  # an unrelated later change, kept
    result = preimage.undo(pre, store=store)
    assert result.conflicts == 1
    (conflict,) = result.plans[0].conflicts
    assert conflict.label == "src/main.py" and conflict.conflicts
    assert "person 5" in (tree / "src" / "main.py").read_text()
    again = preimage.undo(pre, store=store, resolution="take-backup")
    assert again.conflicts == 0
    assert (tree / "src" / "main.py").read_text() == LINES
    assert not (tree / "notes.md").exists()


def test_keep_live_decides_the_conflict_without_writing(tree: Path, store: Store) -> None:
    """--keep-live keeps the later version and counts no unresolved conflict."""
    pre = call(store, uri(tree), "rm", (tree / "notes.md").unlink)
    (tree / "notes.md").write_text("a new notes file\n")
    result = preimage.undo(pre, store=store, resolution="keep-live")
    assert result.conflicts == 0
    assert result.plans[0].conflicts[0].note.startswith("kept")
    assert (tree / "notes.md").read_text() == "a new notes file\n"


def test_a_directory_the_call_created_keeps_files_added_since(
        tree: Path, store: Store) -> None:
    """Undoing a call that created a directory removes its files, but never a file
    someone added inside it later (the directory stays for it)."""
    def agent() -> None:
        (tree / "build").mkdir()
        (tree / "build" / "out.o").write_text("object\n")

    pre = call(store, uri(tree), "make", agent)
    (tree / "build" / "keep.txt").write_text("mine\n")
    result = preimage.undo(pre, store=store)
    assert result.ok
    assert not (tree / "build" / "out.o").exists()
    assert (tree / "build" / "keep.txt").read_text() == "mine\n"


def test_dry_run_writes_nothing_and_undo_backup_undoes_the_undo(
        tree: Path, store: Store) -> None:
    """A dry run plans only; the undo backup restores the state the undo replaced."""
    pre = call(store, uri(tree), "rm", (tree / "src" / "util.py").unlink)
    (tree / "notes.md").write_text("later\n")
    plan = preimage.undo(pre, store=store, dry_run=True)
    assert plan.dry_run and any(r.changes for r in plan.reports)
    assert not (tree / "src" / "util.py").exists()
    done = preimage.undo(pre, store=store)
    assert (tree / "src" / "util.py").exists() and done.undo_backup_id
    preimage.restore(done.undo_backup_id, store=store)
    assert not (tree / "src" / "util.py").exists()
    assert (tree / "notes.md").read_text() == "later\n"


def test_restore_policy_revert_is_the_same_undo(tree: Path, store: Store) -> None:
    """preimage.restore(ID, conflict="revert") undoes the call instead of the whole target."""
    pre = call(store, uri(tree), "rm", (tree / "src" / "util.py").unlink)
    (tree / "notes.md").write_text("later\n")
    result = preimage.restore(pre, store=store, conflict="revert")
    assert isinstance(result, preimage.UndoResult)
    assert (tree / "src" / "util.py").exists() and (tree / "notes.md").read_text() == "later\n"


def test_undo_needs_a_post_call_backup(tree: Path, store: Store) -> None:
    """A backup with no after-state cannot be undone call-wise: a one-line error."""
    backup = preimage.capture([uri(tree)], store=store)
    with pytest.raises(preimage.UsageError, match="no post-call backup"):
        preimage.undo(backup.id, store=store)


def test_last_never_names_a_post_call_backup(tree: Path, store: Store) -> None:
    """`restore last` after a protected call restores the state before it."""
    pre = call(store, uri(tree), "rm", (tree / "notes.md").unlink)
    assert store.catalog.resolve("last") == pre


def test_cli_undo_and_log(tree: Path, tmp_path: Path) -> None:
    """`preimage log` lists the session's calls with their delta; `preimage undo` reverts
    a range newest first and exits 0; --json gives the plan."""
    env = {**os.environ, "PREIMAGE_HOME": str(tmp_path / "clihome")}
    st = Store(tmp_path / "clihome")
    try:
        first = call(st, uri(tree), "rm util", (tree / "src" / "util.py").unlink)
        second = call(st, uri(tree), "edit notes",
                      lambda: (tree / "notes.md").write_text("# agent\n"))
    finally:
        st.close()
    cli = [sys.executable, "-m", "preimage"]
    shown = subprocess.run([*cli, "log", "--json"], env=env, capture_output=True, text=True,
                           check=True)
    entries = json.loads(shown.stdout)
    assert [e["backup"] for e in entries] == [first, second]
    assert "1 removed" in entries[0]["delta"] and "src/util.py" in entries[0]["delta"]
    plan = subprocess.run([*cli, "undo", f"{first}..{second}", "--dry-run", "--json"], env=env,
                          capture_output=True, text=True)
    assert plan.returncode == 0, plan.stderr
    assert [p["backup"] for p in json.loads(plan.stdout)] == [second, first]
    done = subprocess.run([*cli, "undo", f"{first}..{second}"], env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert (tree / "src" / "util.py").exists() and (tree / "notes.md").read_text() == "# notes\n"
    bad = subprocess.run([*cli, "undo", "zzzzzz"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(shutil.which("git") is None, reason="git is the oracle")
def test_line_merge_agrees_with_git_merge_file(tmp_path: Path) -> None:
    """Random edits merged by merge_lines match `git merge-file` wherever git merges cleanly,
    and merge_lines never merges what git calls a conflict."""
    rng = random.Random(7)
    agree = 0
    for n in range(150):
        base = [f"l{i}\n" for i in range(rng.randint(3, 25))]

        def edit(lines: list[str], tag: str) -> list[str]:
            out = list(lines)
            for _ in range(rng.randint(1, 3)):
                i = rng.randrange(len(out) + 1)
                op = rng.choice(["change", "insert", "delete"])
                if op == "insert" or not out or i == len(out):
                    out.insert(i, f"{tag}{rng.randint(0, 99)}\n")
                elif op == "change":
                    out[i] = f"{tag}{rng.randint(0, 99)}\n"
                else:
                    del out[i]
            return out

        ours, theirs = edit(base, "a"), edit(base, "b")
        files = {}
        for name, lines in (("ours", ours), ("base", base), ("theirs", theirs)):
            files[name] = tmp_path / f"{n}-{name}"
            files[name].write_text("".join(lines))
        git = subprocess.run(["git", "merge-file", "-p", str(files["ours"]), str(files["base"]),
                              str(files["theirs"])], capture_output=True, text=True)
        mine = merge_lines(base, ours, theirs)
        if git.returncode != 0:
            assert mine is None, (base, ours, theirs)
        elif mine is not None:
            assert "".join(mine) == git.stdout
            agree += 1
    assert agree > 30


def test_a_connector_without_item_writes_is_refused_before_anything(
        tree: Path, store: Store) -> None:
    """A target whose connector restores only whole targets (the file connector registered
    again without its undo granularity) is refused in one line, before any capture or
    write — an undo never falls back to a whole-target restore."""
    import dataclasses

    from preimage.connectors.files import FileConnector

    class WholeTargetsOnly(FileConnector):
        capabilities = dataclasses.replace(FileConnector.capabilities, undo=None)

    preimage.register_connector("wholefile", WholeTargetsOnly)
    try:
        pre = call(store, f"wholefile://{tree}", "edit",
                   lambda: (tree / "notes.md").write_text("b\n"))
        count = len(store.catalog.list_backups(None))
        with pytest.raises(preimage.UsageError, match="cannot yet write back single items"):
            preimage.undo(pre, store=store)
        assert len(store.catalog.list_backups(None)) == count
        assert (tree / "notes.md").read_text() == "b\n"
    finally:
        preimage.interface.registry.unregister_connector("wholefile")


def test_forget_keeps_and_forgets_a_call_s_two_backups_together(
        tree: Path, store: Store) -> None:
    """A retention policy counts a call once: keep-last 1 keeps the newest call's pre- and
    post-call backups and forgets the older call's pair; forgetting a pre-call backup by
    its ID takes its post-call backup along, so undo never finds half a pair."""
    from preimage.store.prune import forget
    from preimage.store.retention import RetentionPolicy

    first = call(store, uri(tree), "rm util", (tree / "src" / "util.py").unlink)
    second = call(store, uri(tree), "edit notes",
                  lambda: (tree / "notes.md").write_text("# agent\n"))
    posts = {r.parent_id: r.id for r in store.catalog.list_backups(None) if r.kind == "post-call"}
    report = forget(store, policy=RetentionPolicy(keep_last=1))
    assert sorted(r.id for r in report.forgotten) == sorted([first, posts[first]])
    left = {r.id for r in store.catalog.list_backups(None)}
    assert left == {second, posts[second]}
    report = forget(store, [second])
    assert sorted(r.id for r in report.forgotten) == sorted([second, posts[second]])
    assert store.catalog.list_backups(None) == []


def test_splice_recreates_every_item_when_live_kept_none_of_them() -> None:
    """All of a target's items were removed by the call (and live holds only what came
    after): every written item is re-created, in the order the state before had them."""
    from dataclasses import dataclass

    from preimage.restoration.revert import splice

    @dataclass
    class Entry:
        key: str

        def natural_key(self) -> str:
            return self.key

    base = [Entry(k) for k in ("a", "b", "c", "d")]
    live = [Entry("new")]
    writes: dict[str, Any] = {e.key: e for e in base} | {"new": None}
    assert [e.key for e in splice(live, base, writes)] == ["a", "b", "c", "d"]
    kept = splice([Entry("b"), Entry("new")], base, {"a": base[0], "c": base[2], "d": base[3]})
    assert [e.key for e in kept] == ["a", "b", "c", "d", "new"]


def test_connectors_lists_how_finely_each_one_undoes(tmp_path: Path) -> None:
    """`preimage connectors` names each connector's undo granularity, and says so for the
    ones that restore whole targets only."""
    env = {**os.environ, "PREIMAGE_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-m", "preimage", "connectors", "--json"], env=env,
                          capture_output=True, text=True, check=True)
    undo = {r["scheme"]: r["undo"] for r in json.loads(proc.stdout)}
    assert undo["file"].startswith("file by path")
    assert undo["sqlite"].startswith("row by primary key")
    assert undo["git"].startswith("work-tree file by path")
    assert undo["pip"].startswith("no (")
