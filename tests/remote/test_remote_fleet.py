"""Many machines, one store: concurrent writers, restores elsewhere, the hook, copies, secrets."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fleet_world import Fleet, make_tree, tree_digest

pytestmark = [pytest.mark.s3, pytest.mark.postgres]

SHARED = os.urandom(3 << 20)   # bytes every writer's big file ends with: dedup across machines


def test_eight_writers_then_every_backup_restores_on_a_fresh_machine(fleet: Fleet, tmp_path: Path) -> None:
    """8 processes with separate homes capture at once; each backup restores, by id, byte for
    byte, on a machine with an empty cache."""
    trees, procs = [], []
    for i in range(8):
        root = tmp_path / f"work{i}"
        expected = make_tree(root, i, big=(1 + i % 3) << 20, shared=SHARED)
        home = fleet.machine(f"writer{i}")
        env = {**fleet.env(), "PREIMAGE_HOME": str(home)}
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "preimage", "capture", f"file://{root}", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
        trees.append((root, expected))
    ended = [p.communicate(timeout=600) for p in procs]   # all of them, before any assert
    ids = []
    for p, (out, errs) in zip(procs, ended, strict=True):
        fleet.outputs += [out, errs]
        assert p.returncode == 0, errs
        ids.append(json.loads(out)["id"])
    listing = json.loads(fleet.cli(fleet.machine(), "list", "--json", check=True).stdout)
    assert {b["id"] for b in listing if b["status"] == "complete"} >= set(ids)
    for backup_id, (root, expected) in zip(ids, trees, strict=True):
        shutil.rmtree(root)
        elsewhere = fleet.machine()
        fleet.cli(elsewhere, "restore", backup_id, check=True)
        assert tree_digest(root) == expected
        # the verified plaintext the restore spooled is gone with the command
        assert not [p for s in elsewhere.rglob("spool") for p in s.rglob("*") if p.is_file()]
    # A ninth machine's tree ending with the same 3 MiB stores its own 1 MiB, at most one
    # chunk (1 MiB max) across the seam, and small files: the shared bytes are found in
    # packs other machines wrote.
    ninth = tmp_path / "work8"
    make_tree(ninth, 8, big=1 << 20, shared=SHARED)
    out = fleet.cli(fleet.machine(), "capture", f"file://{ninth}", "--json", check=True).stdout
    assert json.loads(out)["stored_bytes"] < (2 << 20) + (256 << 10) < len(SHARED)
    assert_no_secret(fleet, tmp_path)


def test_hook_in_one_sandbox_restore_in_another(fleet: Fleet, tmp_path: Path) -> None:
    """The layer backs up before `rm -rf` on machine A; machine B restores by the id."""
    proj = tmp_path / "proj"
    expected = make_tree(proj, 42)
    sandbox_a = fleet.machine("a")
    payload = {"hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": f"rm -rf {proj}"}, "cwd": str(tmp_path),
               "session_id": "s1", "tool_use_id": "t1"}
    answer = json.loads(fleet.cli(sandbox_a, "hook", "claude-code", input=json.dumps(payload),
                                  check=True).stdout)
    context = answer["hookSpecificOutput"]["additionalContext"]
    backup_id = context.split("preimage backup ", 1)[1].split()[0]
    shutil.rmtree(sandbox_a)          # the sandbox is thrown away with its disk
    subprocess.run(["bash", "-c", f"rm -rf {proj}"], check=True)
    fleet.cli(fleet.machine("b"), "restore", backup_id, check=True)
    assert tree_digest(proj) == expected


def test_undo_of_a_call_from_another_sandbox(fleet: Fleet, tmp_path: Path) -> None:
    """The hook events of an edit run on machine A (pre- and post-call backups in the shared
    store); on machine B `last` names the pre-call backup, `preimage log` shows the call and
    `preimage undo` by its id reverts it while a later edit stays."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "config.ini").write_text("host = prod\n")
    (proj / "notes.md").write_text("# notes\n")
    command = "printf 'host = localhost\\n' > config.ini"
    sandbox_a = fleet.machine("a")
    for event in ("PreToolUse", "PostToolUse"):
        payload = {"hook_event_name": event, "tool_name": "Bash",
                   "tool_input": {"command": command}, "cwd": str(proj),
                   "session_id": "s-undo", "tool_use_id": "t-undo", "tool_response": {}}
        fleet.cli(sandbox_a, "hook", "claude-code", input=json.dumps(payload), check=True)
        if event == "PreToolUse":
            subprocess.run(["bash", "-c", command], cwd=proj, check=True)
    (proj / "notes.md").write_text("# notes\nwritten later\n")
    sandbox_b = fleet.machine("b")
    (entry,) = json.loads(fleet.cli(sandbox_b, "log", "--json", "--session", "s-undo",
                                    check=True).stdout)
    assert entry["post_backup"] and "config.ini" in entry["delta"]
    last = json.loads(fleet.cli(sandbox_b, "restore", "last", "--dry-run", "--json",
                                check=True).stdout)
    assert last["backup"] == entry["backup"]
    fleet.cli(sandbox_b, "undo", "t-undo", check=True)
    assert (proj / "config.ini").read_text() == "host = prod\n"
    assert (proj / "notes.md").read_text() == "# notes\nwritten later\n"


def test_copy_between_local_and_shared_store(fleet: Fleet, tmp_path: Path) -> None:
    """A backup taken locally is copied up, restored from the shared store elsewhere, and
    copied back down into a third machine's local store."""
    root = tmp_path / "work"
    expected = make_tree(root, 7, big=1 << 20)
    laptop = fleet.machine("laptop")
    local_env = {k: v for k, v in fleet.env().items() if k not in ("PREIMAGE_STORE",)}
    backup_id = fleet.cli(laptop, "capture", f"file://{root}", env=local_env,
                          check=True).stdout.strip()
    up = fleet.cli(laptop, "copy", backup_id, "--from", "local", "--to", fleet.store_url,
                   "--json", check=True)
    assert json.loads(up.stdout)["copied"] is True
    again = fleet.cli(laptop, "copy", backup_id, "--from", "local", "--to", fleet.store_url,
                      "--json", check=True)
    assert json.loads(again.stdout)["copied"] is False
    shutil.rmtree(root)
    fleet.cli(fleet.machine(), "restore", backup_id, check=True)
    assert tree_digest(root) == expected
    third = fleet.machine("third")
    fleet.cli(third, "copy", backup_id, "--to", "local", check=True)
    shutil.rmtree(root)
    fleet.cli(third, "restore", backup_id, env=local_env, check=True)
    assert tree_digest(root) == expected


def test_store_status_and_migrate(fleet: Fleet) -> None:
    """`store status` names where the store is and what it holds, never a secret; `store
    migrate` on a current catalog is a no-op that says so."""
    home = fleet.machine()
    status = json.loads(fleet.cli(home, "store", "status", "--json", check=True).stdout)
    assert status["cipher"] == "aes-256-gcm" and status["backups"] == 0
    assert status["store"] == fleet.store_url
    assert "PREIMAGE_STORE_KEY_FILE" in status["key"]
    migrated = fleet.cli(home, "store", "migrate", check=True)
    assert "catalog schema 2 → 2" in migrated.stdout


def assert_no_secret(fleet: Fleet, tmp_path: Path) -> None:
    """No secret in any object of the bucket, in the catalog's dump, in any file of any
    machine's home, or in anything the CLI printed."""
    secrets = [s.encode() for s in fleet.secrets()]
    for key, _size in fleet.objects():
        body = fleet.seaweed.get_object(fleet.bucket, key)
        for s in secrets:
            assert s not in body, f"a secret is in object {key}"
    dump = subprocess.run([fleet.pg.tool("pg_dump"), "-d", fleet.database], env=fleet.pg.env(),
                          capture_output=True, check=True).stdout
    assert b"CREATE TABLE" in dump
    for s in secrets:
        assert s not in dump, "a secret is in the catalog"
    for dirpath, _dirs, files in os.walk(tmp_path):
        for name in files:
            p = Path(dirpath) / name
            if p == fleet.key_file or p.is_symlink():
                continue
            body = p.read_bytes()
            for s in secrets:
                assert s not in body, f"a secret is in {p}"
    printed = "\n".join(fleet.outputs).encode()
    for s in secrets:
        assert s not in printed, "a secret was printed"
