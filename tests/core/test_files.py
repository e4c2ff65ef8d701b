"""The file connector end to end: capture, destroy, restore by ID, score — via the CLI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import preimage
from preimage import Store
from preimage.testing import ConnectorContract

CliResult = subprocess.CompletedProcess[str]


def as_json(proc: CliResult) -> Any:
    """The JSON a CLI command printed."""
    return json.loads(proc.stdout)


def build_tree(root: Path) -> None:
    """A tree with everything the issue lists: key 0600, setuid, symlink, hardlinks, …"""
    (root / ".ssh").mkdir(parents=True, mode=0o700)
    key = root / ".ssh" / "id_rsa"
    key.write_text("-----BEGIN KEY-----\nabc\n")
    key.chmod(0o600)
    suid = root / "bin" / "tool"
    suid.parent.mkdir()
    suid.write_bytes(b"\x7fELF not really")
    suid.chmod(0o4755)
    (root / "bin").chmod(0o2775)
    (root / "shared").mkdir()
    (root / "shared").chmod(0o1777)
    (root / "link").symlink_to("bin/tool")
    (root / "dangling").symlink_to("/nonexistent/target")
    (root / "a.txt").write_text("hard\n")
    os.link(root / "a.txt", root / "b.txt")
    (root / "empty" / "nested-empty").mkdir(parents=True)
    os.mkfifo(root / "pipe")
    os.setxattr(root / "a.txt", "user.tag", b"\x00\x01blue")
    os.setxattr(root / "empty", "user.dir", b"yes")
    os.utime(root / "a.txt", ns=(1_600_000_000_111_111_111, 1_650_000_000_222_222_222))
    os.utime(root / "bin" / "tool", ns=(1_600_000_001_000_000_001, 1_600_000_002_000_000_002))
    big = root / "big.bin"
    big.write_bytes(os.urandom(3 << 20))
    os.setxattr(big, "user.read", b"streamed")   # read from the file as it is streamed
    os.chown(root / "shared", 1234, 5678)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    build_tree(root)
    return root


def test_rm_rf_then_restore_by_id_scores_one(tree: Path, cli: Callable[..., CliResult]) -> None:
    """The issue's acceptance case: capture, rm -rf, restore ID, score --json 1.0."""
    before_ls = subprocess.run(["ls", "-laR", "--time-style=full-iso", str(tree)],
                               capture_output=True, text=True).stdout
    cap = cli("capture", f"file://{tree}", "--json", check=True)
    backup = as_json(cap)["id"]
    shutil.rmtree(tree)
    assert not tree.exists()
    res = cli("restore", backup, check=True)
    assert "undo this restore with" in res.stdout
    scored = as_json(cli("score", backup, "--json", check=True))
    assert scored["content"] == 1.0
    assert scored["metadata"] == 1.0
    after_ls = subprocess.run(["ls", "-laR", "--time-style=full-iso", str(tree)],
                              capture_output=True, text=True).stdout
    # ls -l shows modes, link counts, owners, sizes and ns mtimes: all back
    # (the ".." lines describe directories outside the target)
    def inside(listing: str) -> list[str]:
        return [ln for ln in listing.replace(str(tree), "").splitlines() if not ln.endswith(" ..")]

    assert inside(after_ls) == inside(before_ls)
    assert os.getxattr(tree / "a.txt", "user.tag") == b"\x00\x01blue"
    assert os.getxattr(tree / "big.bin", "user.read") == b"streamed"
    assert os.stat(tree / "a.txt").st_ino == os.stat(tree / "b.txt").st_ino
    assert stat.S_IMODE(os.stat(tree / "bin" / "tool").st_mode) == 0o4755
    assert os.readlink(tree / "dangling") == "/nonexistent/target"
    assert stat.S_ISFIFO(os.lstat(tree / "pipe").st_mode)


def test_files_created_after_capture_go_away(tree: Path, store: Store) -> None:
    """Restore removes files that appeared since the capture and reverts edits."""
    backup = preimage.capture([f"file://{tree}"], store=store)
    (tree / "new-dir" / "deep").mkdir(parents=True)
    (tree / "new-dir" / "deep" / "f").write_text("x")
    (tree / "a.txt").write_text("edited")
    preimage.restore(backup.id, store=store)
    assert not (tree / "new-dir").exists()
    total, _ = preimage.score(backup.id, store=store)
    assert total.restorable.score == 1.0, [d for d in total.differences if d.fidelity != "server"]
    assert (tree / "b.txt").read_text() == "hard\n"


def test_capture_does_not_move_access_times(tree: Path, store: Store) -> None:
    """Reading files for a capture leaves their atime where it was."""
    os.utime(tree / "a.txt", ns=(1_000_000_000, 1_650_000_000_222_222_222))
    before = os.stat(tree / "a.txt").st_atime_ns
    preimage.capture([f"file://{tree}"], store=store)
    assert os.stat(tree / "a.txt").st_atime_ns == before


def test_second_unchanged_capture_stores_almost_nothing(tree: Path, store: Store) -> None:
    """A repeated capture of an unchanged tree reuses every blob."""
    first = preimage.capture([f"file://{tree}"], store=store)
    second = preimage.capture([f"file://{tree}"], store=store)
    assert first.stored_bytes > 3 << 20 // 2
    # only the snapshot document itself is new (and identical content dedups)
    assert second.stored_bytes < 4096


def test_dry_run_prints_the_plan_and_changes_nothing(
    tree: Path, cli: Callable[..., CliResult]
) -> None:
    """--dry-run lists what would change and writes nothing."""
    backup = cli("capture", f"file://{tree}", check=True).stdout.strip()
    (tree / "a.txt").unlink()
    (tree / "intruder").write_text("x")
    res = as_json(cli("restore", backup, "--dry-run", "--json", check=True))
    actions = {(i["key"], i["action"]) for r in res["reports"] for i in r["items"]
               if i["outcome"] == "planned"}
    assert ("a.txt", "write file") in actions
    assert ("intruder", "remove") in actions
    assert not (tree / "a.txt").exists()
    assert (tree / "intruder").exists()
    assert res["undo_backup"] is None


def test_only_restores_a_part_of_the_tree(tree: Path, store: Store) -> None:
    """--only file:///…/sub restores just that subtree."""
    backup = preimage.capture([f"file://{tree}"], store=store)
    shutil.rmtree(tree / "bin")
    (tree / "a.txt").write_text("changed")
    preimage.restore(backup.id, store=store, only=[f"file://{tree}/bin"])
    assert (tree / "bin" / "tool").exists()
    assert (tree / "a.txt").read_text() == "changed"


def test_policy_refuse_stops_before_writing(tree: Path, store: Store) -> None:
    """With --policy refuse a changed tree is left alone and the error names the change."""
    backup = preimage.capture([f"file://{tree}"], store=store)
    (tree / "a.txt").write_text("changed")
    with pytest.raises(preimage.RestoreConflictError, match=r"a\.txt"):
        preimage.restore(backup.id, store=store, conflict="refuse")
    assert (tree / "a.txt").read_text() == "changed"


def test_policy_merge_only_puts_back_what_is_missing(tree: Path, store: Store) -> None:
    """--policy merge restores deleted files and keeps edits and new files."""
    backup = preimage.capture([f"file://{tree}"], store=store)
    (tree / "a.txt").write_text("changed")
    (tree / ".ssh" / "id_rsa").unlink()
    (tree / "new").write_text("mine")
    preimage.restore(backup.id, store=store, conflict="merge")
    assert (tree / ".ssh" / "id_rsa").read_text().startswith("-----BEGIN KEY")
    assert (tree / "a.txt").read_text() == "changed"
    assert (tree / "new").exists()


def test_restore_can_be_undone(tree: Path, store: Store) -> None:
    """The undo backup printed by a restore brings back the state it replaced."""
    backup = preimage.capture([f"file://{tree}"], store=store)
    (tree / "a.txt").write_text("the agent's edit")
    result = preimage.restore(backup.id, store=store)
    assert (tree / "a.txt").read_text() == "hard\n"
    assert result.undo_backup_id is not None
    preimage.restore(result.undo_backup_id, store=store)
    assert (tree / "a.txt").read_text() == "the agent's edit"


# ---------------------------------------------------------------- bad input
def test_unknown_id_malformed_uri_unknown_scheme(cli: Callable[..., CliResult]) -> None:
    """Each bad input exits 2 with a one-line reason."""
    for args, needle in [
        (("restore", "zzzzzz"), "no backup with id"),
        (("score", "nope"), "no backup with id"),
        (("capture", "not a uri"), "invalid target"),
        (("capture", "file://relative/path"), "file:///abs/path"),
        (("capture", "gopher://x/y"), "no connector for scheme 'gopher'"),
    ]:
        res = cli(*args)
        assert res.returncode == 2, (args, res.stderr)
        assert needle in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1


def test_corrupted_blob_stops_restore_before_any_write(
    tree: Path, store: Store, cli: Callable[..., CliResult]
) -> None:
    """A corrupt blob names the backup and the path and leaves the target untouched."""
    backup = preimage.capture([f"file://{tree}"], store=store)
    entry = next(e for e in backup.snapshots[0].items if e.path == ".ssh/id_rsa")
    blob = store.blobs.path(entry.digest or "")
    blob.write_bytes(b"garbage")
    shutil.rmtree(tree / ".ssh")
    (tree / "a.txt").write_text("edited")
    res = cli("restore", backup.id)
    assert res.returncode == 2
    assert "corrupt" in res.stderr and backup.id in res.stderr and "id_rsa" in res.stderr
    assert not (tree / ".ssh").exists()
    assert (tree / "a.txt").read_text() == "edited"


def test_snapshot_path_with_dotdot_is_refused(tmp_path: Path, store: Store) -> None:
    """A tampered snapshot with '..' in a path is refused and nothing is written."""
    from preimage.connectors.files import FileConnector
    from preimage.restoration import RestorePolicy
    from preimage.snapshot_schemas import FileSnapshot

    root = tmp_path / "t"
    root.mkdir()
    (root / "f").write_text("x")
    snap = FileConnector().capture(preimage.Target.parse(f"file://{root}"), store.blobs)
    bad_item = snap.items[1].model_copy(update={"path": "../escaped"})
    bad = FileSnapshot.model_validate({**snap.model_dump(), "items": [snap.items[0], bad_item]})
    with pytest.raises(preimage.UnsafePathError, match=r"\.\."):
        FileConnector().restore(bad, store.blobs, policy=RestorePolicy())
    assert not (tmp_path / "escaped").exists()
    assert (root / "f").read_text() == "x"


def test_symlinked_parent_is_replaced_not_followed(tmp_path: Path, store: Store) -> None:
    """If a directory became a symlink to elsewhere, restore never writes through it."""
    root = tmp_path / "t"
    (root / "conf").mkdir(parents=True)
    (root / "conf" / "app.ini").write_text("a=1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    backup = preimage.capture([f"file://{root}"], store=store)
    shutil.rmtree(root / "conf")
    (root / "conf").symlink_to(outside)
    preimage.restore(backup.id, store=store)
    assert list(outside.iterdir()) == []
    assert (root / "conf").is_dir() and not (root / "conf").is_symlink()
    assert (root / "conf" / "app.ini").read_text() == "a=1\n"


def test_restore_into_read_only_parent_fails_cleanly(tmp_path: Path, home: Path) -> None:
    """Without the right to override permissions, a read-only parent gives a clear error and
    no writes.  The command runs as this user with CAP_DAC_OVERRIDE dropped (setpriv), so it
    reads its own installation wherever that lives, yet cannot write into a 0555 folder."""
    base = tmp_path / "ro"
    base.mkdir()
    target = base / "proj"
    target.mkdir()
    (target / "f").write_text("data")
    env = {**os.environ, "PREIMAGE_HOME": str(home)}
    run = [sys.executable, "-m", "preimage"]
    if os.geteuid() == 0:
        run = ["setpriv", "--inh-caps=-all",
               "--bounding-set=-dac_override,-dac_read_search,-fowner", *run]
    cap = subprocess.run([*run, "capture", f"file://{target}"], capture_output=True,
                         text=True, env=env)
    assert cap.returncode == 0, cap.stderr
    shutil.rmtree(target)
    base.chmod(0o555)
    try:
        res = subprocess.run([*run, "restore", cap.stdout.strip()], capture_output=True,
                             text=True, env=env)
        assert res.returncode == 2, res.stderr
        assert "read-only" in res.stderr or "Permission denied" in res.stderr
        assert list(base.iterdir()) == []
    finally:
        base.chmod(0o755)


def test_restore_last_killed_half_way_then_run_again_finishes(tmp_path: Path, home: Path) -> None:
    """The README's recovery path: `restore last`, kill -9 after 355 files, `restore last` again;
    the killed run leaves the removed tree absent, the next leaves no staging behind."""
    root = tmp_path / "many"
    root.mkdir()
    for i in range(1500):
        (root / f"f{i:05}").write_bytes(os.urandom(256))
    env = {**os.environ, "PREIMAGE_HOME": str(home)}
    cmd = [sys.executable, "-m", "preimage"]
    backup = subprocess.run([*cmd, "capture", f"file://{root}"], capture_output=True, text=True,
                            env=env, check=True).stdout.strip()
    shutil.rmtree(root)
    killed = subprocess.run([*cmd, "restore", "last"], capture_output=True,
                            env={**env, "PREIMAGE_CRASH_AT": "restore-write:357"})
    assert killed.returncode == -signal.SIGKILL
    assert not root.exists()   # built under a hidden name, never published
    assert [n for n in os.listdir(tmp_path) if n.startswith(".preimage-tmp-")] != []
    again = subprocess.run([*cmd, "restore", "last", "--json"], env=env, check=True,
                           capture_output=True, text=True)
    assert json.loads(again.stdout)["backup"] == backup
    score = json.loads(subprocess.run([*cmd, "score", backup, "--json"], env=env, check=True,
                                      capture_output=True, text=True).stdout)
    assert score["restorable"]["score"] == 1.0
    assert len(os.listdir(root)) == 1500
    assert [n for n in os.listdir(tmp_path) if n.startswith(".preimage-tmp-")] == []


def test_target_holding_the_store_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Capturing a directory that contains the store is refused (git clean would eat it)."""
    monkeypatch.setenv("PREIMAGE_HOME", str(tmp_path / "ws" / ".preimage"))
    (tmp_path / "ws").mkdir()
    with pytest.raises(preimage.UsageError, match="PREIMAGE_HOME"):
        preimage.capture([f"file://{tmp_path / 'ws'}"])


class TestFileConnectorContract(ConnectorContract):
    """The file connector passes the conformance kit."""

    connector = "file"

    @pytest.fixture
    def observe(self) -> Callable[[str], dict[str, dict[str, Any]]]:
        """A stat walk (lstat, no connector code): every entry by absolute path with its type,
        mode, owner and link target; a file's bytes and modification time too."""
        import hashlib

        def read(uri: str) -> dict[str, dict[str, Any]]:
            root = uri.removeprefix("file://")
            if not os.path.lexists(root):
                return {}
            items: dict[str, dict[str, Any]] = {}
            paths = [root]
            for folder, dirs, files in os.walk(root):
                paths += [os.path.join(folder, n) for n in dirs + files]
            for path in paths:
                st = os.lstat(path)
                entry: dict[str, Any] = {"type": stat.S_IFMT(st.st_mode),
                                         "mode": stat.S_IMODE(st.st_mode),
                                         "owner": (st.st_uid, st.st_gid)}
                if stat.S_ISLNK(st.st_mode):
                    entry["target"] = os.readlink(path)
                elif stat.S_ISREG(st.st_mode):
                    entry["sha256"] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                    entry["mtime_ns"] = st.st_mtime_ns
                items[path] = entry
            return items

        return read

    @pytest.fixture
    def target_uri(self, tmp_path: Path) -> str:
        root = tmp_path / "contract"
        build_tree(root)
        return f"file://{root}"

    @pytest.fixture
    def mutate(self) -> Callable[[str], None]:
        def damage(uri: str) -> None:
            root = Path(uri.removeprefix("file://"))
            shutil.rmtree(root / "bin")
            (root / ".ssh" / "id_rsa").chmod(0o644)
            (root / "a.txt").write_text("overwritten")
            (root / "new.txt").write_text("added")

        return damage

    @pytest.fixture
    def malformed_uris(self) -> list[str]:
        return ["file://elsewhere/srv/app", "file://"]

    @pytest.fixture
    def elsewhere_uri(self, tmp_path: Path) -> str:
        """Another directory, not there yet."""
        return f"file://{tmp_path}/elsewhere/copy"

    @pytest.fixture
    def sub_scope(self, target_uri: str) -> str:
        """bin/, which the mutation removed; .ssh/ and a.txt stay damaged outside it."""
        return f"{target_uri}/bin"

    @pytest.fixture
    def absent_uri(self, tmp_path: Path) -> str:
        return f"file://{tmp_path}/not-yet"

    @pytest.fixture
    def create(self) -> Callable[[str], None]:
        def make(uri: str) -> None:
            root = Path(uri.removeprefix("file://"))
            (root / "sub").mkdir(parents=True)
            (root / "sub" / "f").write_text("appeared")

        return make

    @pytest.fixture
    def add_uncapturable(self, store: Store) -> Callable[[str], str]:
        """A file over the store's per-file cap: in scope, deliberately not read."""
        def over_the_cap(uri: str) -> str:
            from preimage.store import quota as _quota

            _quota.save(store, _quota.Quota(max_file_size=1024))
            (Path(uri.removeprefix("file://")) / "big.bin").write_bytes(b"x" * 4096)
            return "big.bin"

        return over_the_cap

def test_depth_zero_keeps_a_directory_entry_and_leaves_its_children_alone(
        tmp_path: Path, store: Store) -> None:
    """`?depth=0` restores a directory's times after an entry in it changed, touching no child."""
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "a").write_text("a")
    (d / "sub" / "b").write_text("b")
    os.utime(d, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_001))
    backup = preimage.capture([f"file://{d}/a", f"file://{d}?depth=0"], store=store)
    snap = [s.target for s in store.catalog.get(backup.id).snapshots]
    assert snap == [f"file://{d}/a", f"file://{d}?depth=0"]
    (d / "a").unlink()
    (d / "late").write_text("created after the capture, outside both scopes")
    preimage.restore(backup.id, store=store)
    assert sorted(os.listdir(d)) == ["a", "late", "sub"]
    assert os.stat(d).st_mtime_ns == 1_600_000_000_000_000_001
    assert (d / "sub" / "b").read_text() == "b"


def test_depth_limited_restore_removes_new_directories_whole(tmp_path: Path,
                                                             store: Store) -> None:
    """A directory created below a `?depth=1` target after its capture goes, with its content;
    deeper paths of directories that existed stay as they are."""
    d = tmp_path / "user"
    (d / ".config" / "app").mkdir(parents=True)
    (d / ".config" / "app" / "settings").write_text("kept, below the depth")
    backup = preimage.capture([f"file://{d}?depth=1"], store=store)
    (d / ".cache" / "tool" / "deep").mkdir(parents=True)
    (d / ".cache" / "tool" / "deep" / "f").write_text("new")
    (d / ".config" / "app" / "settings").write_text("changed below the depth")
    preimage.restore(backup.id, store=store)
    assert sorted(os.listdir(d)) == [".config"]
    assert (d / ".config" / "app" / "settings").read_text() == "changed below the depth"


def test_depth_limited_target_above_the_store_is_captured(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A walk that stops above the store never reads it, so it may hold the store's ancestors;
    one that reaches the store is refused."""
    user = tmp_path / "user"
    store = Store(user / ".local" / "share" / "preimage")
    (user / ".bashrc").write_text("alias ll='ls -l'\n")
    backup = preimage.capture([f"file://{user}?depth=1"], store=store)
    assert backup.id
    with pytest.raises(preimage.PreimageError, match="contains the backup store"):
        preimage.capture([f"file://{user}?depth=4"], store=store)
    store.close()


def test_a_tree_holding_the_store_is_captured_without_it(tmp_path: Path,
                                                         cli: Callable[..., CliResult]) -> None:
    """`?exclude=` leaves a path below the target out of capture and restore: a whole tree
    holding the store (`file:///home?exclude=.local/share/preimage`) comes back — a file
    removed, a file created beside the store — while the store itself is never read nor
    removed.  A bad `exclude=` is a one-line error."""
    user = tmp_path / "user"
    (user / ".local" / "share").mkdir(parents=True)
    (user / "notes.txt").write_text("mine\n")
    env_home = user / ".local" / "share" / "preimage"
    uri = f"file://{user}?exclude=.local/share/preimage"
    backup = cli("capture", "--json", uri, env={"PREIMAGE_HOME": str(env_home)})
    assert backup.returncode == 0, backup.stderr
    backup_id = json.loads(backup.stdout)["id"]
    (user / "notes.txt").unlink()
    (user / ".local" / "share" / "new.txt").write_text("made later\n")
    res = cli("restore", backup_id, env={"PREIMAGE_HOME": str(env_home)})
    assert res.returncode == 0, res.stderr
    assert (user / "notes.txt").read_text() == "mine\n"
    assert sorted(os.listdir(user / ".local" / "share")) == ["preimage"]
    for bad in ("../x", "/etc", "."):
        res = cli("capture", f"file://{user}?exclude={bad}", env={"PREIMAGE_HOME": str(env_home)})
        assert res.returncode == 2 and "exclude=" in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1


def test_files_linked_together_since_the_capture_are_separated_again(
        tmp_path: Path, store: Store) -> None:
    """`hardlink dir1 dir2` (or `cp -l`) turns equal files into one inode: editing one would
    edit the other.  Restore makes them files of their own again, as captured, and keeps a
    link that was there at capture."""
    d = tmp_path / "d"
    for sub in ("one", "two"):
        (d / sub).mkdir(parents=True)
        (d / sub / "same.txt").write_text("equal bytes\n")
    os.link(d / "one" / "same.txt", d / "one" / "kept-link.txt")
    backup = preimage.capture([f"file://{d}"], store=store)
    (d / "two" / "same.txt").unlink()
    os.link(d / "one" / "same.txt", d / "two" / "same.txt")
    assert os.stat(d / "two" / "same.txt").st_ino == os.stat(d / "one" / "same.txt").st_ino
    preimage.restore(backup.id, store=store)
    one, two = os.stat(d / "one" / "same.txt"), os.stat(d / "two" / "same.txt")
    assert one.st_ino != two.st_ino and two.st_nlink == 1
    assert os.stat(d / "one" / "kept-link.txt").st_ino == one.st_ino and one.st_nlink == 2
    assert (d / "two" / "same.txt").read_text() == "equal bytes\n"
    total, _ = preimage.score(backup.id, store=store)
    assert total.restorable.score == 1.0, total.differences[:5]
