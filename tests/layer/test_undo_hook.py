"""The hook flow end to end: PreToolUse backs up, PostToolUse captures the same targets
again, and `preimage undo` reverts exactly that call, keeping what changed since."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import preimage
from preimage import Store
from preimage.layer.harnesses.hook import handle


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    home = tmp_path / "home"
    monkeypatch.setenv("PREIMAGE_HOME", str(home))
    monkeypatch.setenv("PREIMAGE_LOG", str(tmp_path / "log" / "hook.log"))
    return {"PREIMAGE_HOME": str(home), "PATH": "/usr/bin:/bin"}


def hook(event: str, command: str, cwd: Path, env: dict[str, str], **extra: object) -> dict:
    payload = {"hook_event_name": event, "tool_name": "Bash", "tool_input": {"command": command},
               "cwd": str(cwd), "session_id": "sess-1", "tool_use_id": "toolu_01"} | extra
    out = handle("claude-code", [], json.dumps(payload), env=env, cwd=str(cwd))
    return json.loads(out.stdout) if out.stdout.strip() else {}


def rewritten_call(tmp_path: Path, env: dict[str, str]) -> Path:
    """`rm a.txt && echo agent > b.txt` through PreToolUse, run as rewritten (the rm into
    the trash, then the write), then PostToolUse: the project folder."""
    work = tmp_path / "proj"
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    (work / "b.txt").write_text("b\n")
    answer = hook("PreToolUse", "rm a.txt && echo agent > b.txt", work, env)
    rewritten = answer["hookSpecificOutput"]["updatedInput"]["command"]
    subprocess.run(["bash", "-c", rewritten], cwd=work, check=True,
                   env={**env, "HOME": str(tmp_path)})
    hook("PostToolUse", rewritten, work, env, tool_response={"stdout": "", "stderr": ""})
    return work


def test_post_tool_use_records_the_delta_and_undo_reverts_only_the_call(
        tmp_path: Path, env: dict[str, str]) -> None:
    """A Bash call through PreToolUse/PostToolUse: `preimage log` shows its delta, and
    undo by the harness's call id reverts it while a later edit stays."""
    work = tmp_path / "proj"
    work.mkdir()
    (work / "config.ini").write_text("[db]\nhost = prod\nport = 5432\n")
    (work / "readme.md").write_text("# app\n")
    command = "printf '[db]\\nhost = localhost\\nport = 5432\\n' > config.ini"
    answer = hook("PreToolUse", command, work, env)
    assert "preimage backup" in json.dumps(answer)
    subprocess.run(["bash", "-c", command], cwd=work, check=True)
    hook("PostToolUse", command, work, env, tool_response={"stdout": "", "stderr": ""})
    (work / "readme.md").write_text("# app\nedited later by a person\n")

    with Store() as store:
        (entry,) = preimage.timeline(store=store, session="sess-1")
        assert entry.post_id and "config.ini" in entry.delta
        result = preimage.undo("toolu_01", store=store)
    assert result.ok and result.conflicts == 0
    assert (work / "config.ini").read_text() == "[db]\nhost = prod\nport = 5432\n"
    assert (work / "readme.md").read_text() == "# app\nedited later by a person\n"


def test_sqlite_update_through_the_hook_reverted_by_row_later_insert_kept(
        tmp_path: Path, env: dict[str, str]) -> None:
    """`sqlite3 app.db "UPDATE …"` through PreToolUse/PostToolUse: undo by the call's id
    puts the updated rows back by primary key and keeps a row inserted and a column
    edited afterwards."""
    work = tmp_path / "proj"
    work.mkdir()
    db = work / "app.db"
    subprocess.run(["sqlite3", str(db),
                    "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, plan TEXT);"
                    "INSERT INTO users VALUES (1,'ann','pro'),(2,'bob','free'),(3,'cy','pro');"],
                   check=True)
    command = "sqlite3 app.db \"UPDATE users SET plan = 'free'\""
    answer = hook("PreToolUse", command, work, env, tool_use_id="toolu_sql")
    assert "preimage backup" in json.dumps(answer)
    subprocess.run(["bash", "-c", command], cwd=work, check=True)
    hook("PostToolUse", command, work, env, tool_use_id="toolu_sql",
         tool_response={"stdout": "", "stderr": ""})
    subprocess.run(["sqlite3", str(db), "INSERT INTO users VALUES (4,'dee','free');"
                    "UPDATE users SET name = 'Bob' WHERE id = 2;"], check=True)

    with Store() as store:
        result = preimage.undo("toolu_sql", store=store)
    assert result.ok and result.conflicts == 0, result.to_dict()["plans"]
    rows = subprocess.run(["sqlite3", str(db), "SELECT * FROM users ORDER BY id"],
                          capture_output=True, text=True, check=True).stdout.split()
    assert rows == ["1|ann|pro", "2|Bob|free", "3|cy|pro", "4|dee|free"]


def test_the_log_names_what_each_rm_moved_into_the_trash(
        tmp_path: Path, env: dict[str, str]) -> None:
    """Two `rm` calls rewritten into trash moves: each of the session's entries names the
    path its own call removed, and only that one."""
    work = tmp_path / "proj"
    work.mkdir()
    for name in ("a.txt", "b.txt"):
        (work / name).write_text(f"{name}\n")
    for n, name in enumerate(("a.txt", "b.txt")):
        ident = {"tool_use_id": f"toolu_rm{n}"}
        answer = hook("PreToolUse", f"rm {name}", work, env, **ident)
        rewritten = answer["hookSpecificOutput"]["updatedInput"]["command"]
        assert rewritten != f"rm {name}"
        subprocess.run(["bash", "-c", rewritten], cwd=work, check=True,
                       env={**env, "HOME": str(tmp_path)})
        hook("PostToolUse", rewritten, work, env, tool_response={"stdout": "", "stderr": ""},
             **ident)
    assert not (work / "a.txt").exists() and not (work / "b.txt").exists()

    with Store() as store:
        entries = preimage.timeline(store=store, session="sess-1")
    assert [e.delta for e in entries] == [f"removed {work / 'a.txt'}",
                                          f"removed {work / 'b.txt'}"]


def test_a_rewritten_call_is_one_line_of_the_log(tmp_path: Path, env: dict[str, str]) -> None:
    """`rm a.txt && echo agent > b.txt` leaves two backups (the trash move and the call's
    capture); the log shows the call once, naming both what it removed and what it wrote."""
    work = rewritten_call(tmp_path, env)

    with Store() as store:
        kinds = sorted(b.kind for b in store.catalog.find_backups(kinds=("layer", "trash")))
        (entry,) = preimage.timeline(store=store, session="sess-1")
    assert kinds == ["layer", "trash"]
    assert f"removed {work / 'a.txt'}" in entry.delta and "b.txt" in entry.delta


def test_a_call_s_parts_are_kept_and_forgotten_with_it(tmp_path: Path,
                                                       env: dict[str, str]) -> None:
    """A retention policy counts a rewritten call once (its trash move with it): keep-last 1
    after one such call forgets nothing; forgetting the call by its ID takes its trash
    move and post-call backup along."""
    from preimage.store.prune import forget
    from preimage.store.retention import RetentionPolicy

    rewritten_call(tmp_path, env)

    with Store() as store:
        every = store.catalog.list_backups(None)
        assert sorted(b.kind for b in every) == ["layer", "post-call", "trash"]
        assert forget(store, policy=RetentionPolicy(keep_last=1)).forgotten == []
        (call_id,) = [b.id for b in every if b.kind == "layer"]
        report = forget(store, [call_id])
        assert sorted(r.id for r in report.forgotten) == sorted(b.id for b in every)
        assert store.catalog.list_backups(None) == []


def test_restore_of_either_backup_of_a_rewritten_call_brings_back_all_of_it(
        tmp_path: Path, env: dict[str, str]) -> None:
    """`preimage restore` of the trash move's ID, not only of the call's own backup, brings
    back the removed file and the overwritten one."""
    work = rewritten_call(tmp_path, env)

    with Store() as store:
        (trash,) = store.catalog.find_backups(kinds=("trash",))
        preimage.restore(trash.id, store=store)
    assert (work / "a.txt").read_text() == "a\n"
    assert (work / "b.txt").read_text() == "b\n"
