"""When the shared store cannot be used: one clear line, exit 2, and nothing written anywhere."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fleet_world import Fleet, make_tree, new_fleet, tree_digest

pytestmark = [pytest.mark.s3, pytest.mark.postgres]


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def one_fleet(seaweed: Any, catalog_server: Any,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """One shared store for every broken setting: each case checks that it added nothing
    to it, so the next case starts from a store no failure changed."""
    with new_fleet(seaweed, catalog_server, tmp_path_factory.mktemp("fleet")) as fleet:
        yield fleet


@pytest.mark.parametrize(("case", "expect"), [
    ("object store down", "cannot reach the object store"),
    ("catalog down", "cannot reach the catalog"),
    ("wrong key", "encryption key does not open the store"),
    ("no key", "is encrypted: set PREIMAGE_STORE_KEY"),
    ("bucket missing", "does not exist"),
    ("credentials wrong", "refused access"),
    ("catalog password wrong", "refused the login"),
])
def test_each_failure_is_one_clear_line_and_writes_nothing(
        one_fleet: Fleet, tmp_path: Path, case: str, expect: str) -> None:
    """capture and restore under a broken setting: exit 2, one line naming the cause, no
    traceback, the target untouched and no object or catalog row added."""
    fleet = one_fleet
    root = tmp_path / "work"
    make_tree(root, 1)
    home = fleet.machine()
    backup_id = fleet.cli(home, "capture", f"file://{root}", check=True).stdout.strip()
    (root / "README").write_text("changed after the backup\n")
    (root / "new.txt").write_text("made after the backup\n")
    before_tree = tree_digest(root)
    before_objects = fleet.objects()
    before_rows = fleet.pg.psql("SELECT count(*) FROM backups", fleet.database)

    bad = {
        "object store down": {"PREIMAGE_STORE": f"s3://{fleet.bucket}/fleet?endpoint="
                                                 f"http://127.0.0.1:{_closed_port()}"},
        "catalog down": {"PREIMAGE_CATALOG": f"postgresql://postgres@127.0.0.1:{_closed_port()}/x"},
        "wrong key": {"PREIMAGE_STORE_KEY_FILE": "", "PREIMAGE_STORE_KEY": "k" * 43},
        "no key": {"PREIMAGE_STORE_KEY_FILE": ""},
        "bucket missing": {"PREIMAGE_STORE": f"s3://nosuchbucket/fleet?endpoint="
                                              f"{fleet.seaweed.endpoint}"},
        "credentials wrong": {"AWS_SECRET_ACCESS_KEY": "not-the-secret-at-all"},
        "catalog password wrong": {"PGPASSWORD": "not-the-password"},
    }[case]
    env = fleet.env(**bad)
    for args in (["capture", f"file://{root}"], ["restore", backup_id], ["list"]):
        proc = fleet.cli(fleet.machine(), *args, env=env)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and expect in lines[0], (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    printed = "\n".join(fleet.outputs)
    assert not [s for s in fleet.secrets() if s in printed], "a secret was printed"
    assert tree_digest(root) == before_tree
    assert fleet.objects() == before_objects
    assert fleet.pg.psql("SELECT count(*) FROM backups", fleet.database) == before_rows


def test_store_url_with_credentials_is_refused(fleet: Fleet) -> None:
    """An s3:// URL carrying a key is refused before anything is contacted, and the key
    is not echoed."""
    env = fleet.env(PREIMAGE_STORE=f"s3://AKIDEXAMPLE:s3cr3tvalue@{fleet.bucket}/x")
    proc = fleet.cli(fleet.machine(), "list", env=env)
    assert proc.returncode == 2
    assert "must not hold credentials" in proc.stderr
    assert "s3cr3tvalue" not in proc.stderr + proc.stdout


def _drop_catalog_connections(fleet: Fleet) -> None:
    """What a server restart or a network cut does to this process's catalog session."""
    fleet.pg.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname ="
                  f" '{fleet.database}' AND application_name = 'preimage'")


def test_a_dropped_catalog_connection_fails_the_capture_and_nothing_else(
        fleet: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalog connection drops while a capture uploads (its leases lapse, so a prune
    could take it for dead): the capture fails with one clear error, its backup is marked
    failed, nothing indexes its packs, and the same process goes on working — reads run
    again on a new connection, the next capture completes and restores elsewhere."""
    import preimage
    from preimage.interface import crash as _crash
    from preimage.interface.errors import StoreError

    root = tmp_path / "work"
    make_tree(root, 7, big=24 << 20)
    home = fleet.machine()
    for key, value in {**fleet.env(), "PREIMAGE_HOME": str(home)}.items():
        monkeypatch.setenv(key, value)
    store = preimage.Store()
    try:
        real_point, dropped = _crash.point, []

        def drop_after_first_pack(name: str) -> None:
            if name == "pack" and not dropped:
                dropped.append(name)
                _drop_catalog_connections(fleet)

        monkeypatch.setattr(_crash, "point", drop_after_first_pack)
        with pytest.raises(StoreError, match="connection to the catalog dropped"):
            preimage.capture([f"file://{root}"], store=store)
        monkeypatch.setattr(_crash, "point", real_point)
        assert dropped
        assert not [k for k, _ in fleet.objects() if "/index/" in k]
        [row] = store.catalog.list_backups()
        assert row.status == "failed"
        _drop_catalog_connections(fleet)   # an idle drop: the next read just reconnects
        assert preimage.show(row.id, store=store).status == "failed"
        backup = preimage.capture([f"file://{root}"], store=store)
    finally:
        store.close()
    expected = tree_digest(root)
    shutil.rmtree(root)
    fleet.cli(fleet.machine(), "restore", backup.id, check=True)
    assert tree_digest(root) == expected
    check = fleet.cli(fleet.machine(), "check", "--read-data", "--json")
    assert check.returncode == 0, check.stdout + check.stderr
