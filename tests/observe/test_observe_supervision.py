"""The supervisor itself: a killed supervisor, processes left running, the Python API,
the syscalls it refuses, the command and its fallback when supervision is off."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import preimage
from preimage import Store
from preimage.observe import run_command, run_function, unavailable_reason

pytestmark = pytest.mark.skipif(unavailable_reason() is not None,
                                reason=f"no supervision here: {unavailable_reason()}")

CliResult = subprocess.CompletedProcess[str]


def _wait_for(path: Path, what: str, seconds: float = 120.0) -> None:
    """Poll until ``path`` exists (a generous bound: this waits, it does not time)."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: {path} never appeared")
        time.sleep(0.02)


def _observed(store: Store) -> list[preimage.BackupRow]:
    return [r for r in store.catalog.list_backups(None) if r.kind == "observed"]


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "PREIMAGE_HOME": str(home), "PREIMAGE_SERVICE": "off"}


@pytest.mark.usefixtures("loop")
def test_killed_supervisor_lets_nothing_through_and_what_it_recorded_restores(
        tmp_path: Path, home: Path, store: Store) -> None:
    """kill -9 of the supervisor: the call's next change fails; its earlier one restores."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a").write_text("first\n")
    (work / "b").write_text("second\n")
    script = ("rm a && touch ready; while [ ! -e go ]; do sleep 0.02; done; "
              "rm b; echo \"rm b: $?\"")
    sup = subprocess.Popen([sys.executable, "-m", "preimage", "run", "--no-post", "--",
                            "bash", "-c", script], cwd=work, env=_env(home),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    _wait_for(work / "ready", "the call's first change")
    os.kill(sup.pid, signal.SIGKILL)
    sup.wait()
    (work / "go").touch()        # by the test, unsupervised: the call may go on
    assert sup.stdout is not None
    with sup.stdout:
        output = sup.stdout.read()   # EOF once the call's shell has exited
    assert "rm b: 1" in output and "Function not implemented" in output
    assert (work / "b").read_text() == "second\n"
    assert not (work / "a").exists()
    [row] = _observed(store)
    preimage.restore(row.id, store=store)
    assert (work / "a").read_text() == "first\n"
    assert not (work / "ready").exists()


@pytest.mark.usefixtures("loop")
def test_process_left_running_keeps_working_and_is_recorded(tmp_path: Path, home: Path,
                                                            store: Store) -> None:
    """A child started with & outlives the call: its later write succeeds and is recorded."""
    work = tmp_path / "work"
    work.mkdir()
    script = ("(while [ ! -e go ]; do sleep 0.02; done; echo later > bg) "
              ">/dev/null 2>&1 & echo now > fg")
    ran = subprocess.run([sys.executable, "-m", "preimage", "run", "--no-post", "--", "bash",
                          "-c", script], cwd=work, env=_env(home), capture_output=True,
                         text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    assert "left running stay watched" in ran.stderr
    (work / "go").touch()
    _wait_for(work / "bg", "the background child's write")
    deadline = time.monotonic() + 120
    while (work / "bg").read_text() != "later\n" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (work / "bg").read_text() == "later\n"
    rows = {r.label.split(":", 1)[0]: r for r in _observed(store)}
    assert "background of" in rows
    targets = [s.target for s in rows["background of"].snapshots]
    assert f"file://{work}/bg" in targets


def _children() -> set[int]:
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            pids.update(int(p) for p in (task / "children").read_text().split())
    return pids


def test_process_left_running_is_not_the_callers_child(tmp_path: Path, store: Store) -> None:
    """The process that keeps answering a call's leftovers is not the caller's child and
    holds none of its pipes: a long-lived caller collects no zombie, and whoever reads the
    caller's output is not kept waiting for the leftovers."""
    work = tmp_path / "work"
    work.mkdir()
    before = _children()
    read_end, write_end = os.pipe()

    def tool() -> None:
        subprocess.Popen(["sh", "-c", "while [ ! -e go ]; do sleep 0.02; done; echo later > bg"],
                         cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    try:
        outcome = run_function(tool, store=store, log=None)
        os.close(write_end)
        assert outcome.background
        assert _children() - before == set()
        os.set_blocking(read_end, False)
        assert os.read(read_end, 1) == b""    # EOF: no process holds the write end
    finally:
        os.close(read_end)
        (work / "go").touch()
    _wait_for(work / "bg", "the background child's write")


def test_python_function_under_supervision(tmp_path: Path, store: Store) -> None:
    """run_function returns the function's value; its writes restore like any call's."""
    target = tmp_path / "settings.json"
    target.write_text('{"a": 1}')

    def tool(path: str) -> int:
        Path(path).write_text('{"a": 2}')
        (Path(path).parent / "new.txt").write_text("x")
        return 42

    outcome = run_function(tool, str(target), store=store, log=None)
    assert outcome.value == 42
    assert outcome.backup_id is not None
    preimage.restore(outcome.backup_id, store=store)
    assert target.read_text() == '{"a": 1}'
    assert not (tmp_path / "new.txt").exists()


def test_python_function_exception_is_raised_here(store: Store) -> None:
    """An exception the supervised function raises reaches the caller."""

    def tool() -> None:
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        run_function(tool, store=store, log=None)


def _syscall(nr: int, *args: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    return -ctypes.get_errno() if result < 0 else int(result)


def _in_child(fn: Callable[[], int], store: Store) -> int:
    value = run_function(fn, store=store, log=None).value
    assert isinstance(value, int)
    return value


def test_io_uring_is_refused(store: Store) -> None:
    """io_uring_setup fails with ENOSYS under supervision (its submissions bypass seccomp)."""
    params = ctypes.create_string_buffer(120)
    assert _in_child(lambda: _syscall(425, 4, ctypes.addressof(params)), store) \
        == -errno.ENOSYS


@pytest.mark.usefixtures("loop")
def test_openat2_creation_is_recorded(tmp_path: Path, store: Store) -> None:
    """A file created through openat2 (flags in memory, not registers) is recorded."""
    made = tmp_path / "via-openat2"
    path = ctypes.create_string_buffer(str(made).encode())
    how = ctypes.create_string_buffer(bytes(24))
    ctypes.memmove(how, (os.O_CREAT | os.O_WRONLY).to_bytes(8, "little")
                   + (0o644).to_bytes(8, "little"), 16)

    def create() -> int:
        fd = _syscall(437, -100, ctypes.addressof(path), ctypes.addressof(how), 24)
        if fd >= 0:
            os.close(fd)
        return fd

    outcome = run_function(create, store=store, log=None)
    assert outcome.value >= 0 and made.exists()
    assert outcome.backup_id is not None
    preimage.restore(outcome.backup_id, store=store)
    assert not made.exists()


def test_run_command_exit_status_and_missing_program(tmp_path: Path,
                                                     cli: Callable[..., CliResult]) -> None:
    """`preimage run` exits with the command's status; a missing program is one line."""
    assert cli("run", "--", "bash", "-c", "exit 7", cwd=tmp_path).returncode == 7
    missing = cli("run", "--", "no-such-program-here", "arg", cwd=tmp_path)
    assert missing.returncode == 127
    assert missing.stderr.strip().count("\n") == 0
    assert "cannot run no-such-program-here" in missing.stderr


def test_run_says_what_it_observed(tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """`preimage run` names the observed backup, and restore brings the file back."""
    (tmp_path / "f").write_text("keep")
    ran = cli("run", "--", "rm f", cwd=tmp_path, env={"PREIMAGE_SERVICE": "off"})
    assert ran.returncode == 0 and "observed: " in ran.stderr
    backup = ran.stderr.split(" in ", 1)[1].split()[0]
    cli("restore", backup, check=True, env={"PREIMAGE_SERVICE": "off"})
    assert (tmp_path / "f").read_text() == "keep"


def test_fallback_reads_the_command_line_and_says_so(tmp_path: Path,
                                                     cli: Callable[..., CliResult]) -> None:
    """Without supervision `run` goes through guard's reading, saying why, and still backs up."""
    (tmp_path / "f").write_text("keep")
    env = {"PREIMAGE_OBSERVE": "off", "PREIMAGE_SERVICE": "off"}
    ran = cli("run", "--", "rm f", cwd=tmp_path, env=env)
    assert ran.returncode == 0
    assert "supervision unavailable (turned off (PREIMAGE_OBSERVE=off))" in ran.stderr
    assert not (tmp_path / "f").exists()
    listing = cli("install", "--list", cwd=tmp_path, env=env)
    assert "read from the command line — supervision unavailable" in listing.stdout
    observed = cli("install", "--list", cwd=tmp_path, env={"PREIMAGE_SERVICE": "off"})
    assert "file changes: observed" in observed.stdout


def test_observing_context_keeps_one_backup_per_changing_call(tmp_path: Path,
                                                              store: Store) -> None:
    """`observing()` supervises each tool call; calls that change nothing leave no backup."""
    from preimage.observe import observing

    notes = tmp_path / "notes.txt"
    notes.write_text("v1")
    with observing(store=store, session="s-1") as watch:
        assert watch.call(notes.read_text) == "v1"
        watch.call(notes.write_text, "v2")
        watch.run(["rm", str(notes)], log=None)
    assert len(watch.backups) == 2
    assert {store.catalog.get(b).session for b in watch.backups} == {"s-1"}
    for backup in reversed(watch.backups):
        preimage.restore(backup, store=store)
    assert notes.read_text() == "v1"


@pytest.mark.usefixtures("loop")
def test_paths_through_proc_self_fd_are_the_callers(tmp_path: Path, store: Store) -> None:
    """/proc/self/fd/N/… names the caller's directory (as Bun's file writes do), not ours."""
    folder = tmp_path / "p"
    folder.mkdir()

    def write() -> None:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        os.close(os.open(f"/proc/self/fd/{fd}/b.tmp", os.O_CREAT | os.O_WRONLY, 0o644))
        os.rename(f"/proc/self/fd/{fd}/b.tmp", f"/proc/thread-self/fd/{fd}/c.txt")

    outcome = run_function(write, store=store, log=None, post_call=False)
    assert outcome.backup_id is not None
    targets = {s.target for s in store.catalog.get(outcome.backup_id).snapshots}
    assert {f"file://{folder}/b.tmp", f"file://{folder}/c.txt"} <= targets
    preimage.restore(outcome.backup_id, store=store)
    assert list(folder.iterdir()) == []


def test_nested_supervision_says_the_tree_is_already_watched(
        tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """`preimage run` inside a supervised tree refuses in one line, naming why."""
    inner = shlex.join([sys.executable, "-m", "preimage", "run", "--", "touch", "x"])
    ran = cli("run", "--", "bash", "-c", f"{inner}; echo inner=$?", cwd=tmp_path,
              env={"PREIMAGE_SERVICE": "off"})
    assert "inner=2" in ran.stdout
    assert "this process tree is already supervised" in ran.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.usefixtures("loop")
def test_unix_socket_bound_to_a_path_is_recorded(tmp_path: Path, store: Store) -> None:
    """bind() of an AF_UNIX socket creates a file: it is recorded, and a restore removes it."""
    import socket

    where = tmp_path / "server.sock"

    def serve() -> bool:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.bind(str(where))
        return where.exists()

    outcome = run_function(serve, store=store, log=None, post_call=False)
    assert outcome.value is True and outcome.backup_id is not None
    preimage.restore(outcome.backup_id, store=store)
    assert not where.exists()


@pytest.mark.usefixtures("loop")
def test_a_write_refused_by_a_read_only_mount_records_nothing(tmp_path: Path,
                                                               store: Store) -> None:
    """Inside a sandbox whose tree is bound read-only, creating and removing files fails
    with EROFS and leaves no backup; the same calls where the bind is writable are kept."""
    (tmp_path / "f").write_text("keep\n")
    script = f"touch {tmp_path}/new; rm -f {tmp_path}/f; true"
    sandbox = ["bwrap", "--die-with-parent", "--unshare-user", "--unshare-pid",
               "--dev", "/dev", "--proc", "/proc"]
    read_only = run_command([*sandbox, "--ro-bind", "/", "/", "--", "bash", "-c", script],
                            store=store, log=None, post_call=False)
    assert read_only.returncode == 0
    assert (tmp_path / "f").exists() and not (tmp_path / "new").exists()
    assert read_only.backup_id is None
    writable = run_command([*sandbox, "--bind", "/", "/", "--", "bash", "-c", script],
                           store=store, log=None, post_call=False)
    assert not (tmp_path / "f").exists() and (tmp_path / "new").exists()
    assert writable.backup_id is not None
    preimage.restore(writable.backup_id, store=store)
    assert (tmp_path / "f").read_text() == "keep\n" and not (tmp_path / "new").exists()


@pytest.mark.usefixtures("loop")
def test_calls_that_fail_for_a_missing_directory_or_a_file_record_nothing(
        tmp_path: Path, store: Store) -> None:
    """rmdir of a file (ENOTDIR), and creating a file or directory where the directory is
    missing (ENOENT) or a file (ENOTDIR), change nothing and leave no backup."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "file").write_text("x\n")
    script = ("rmdir file; echo x > missing/f; mkdir missing/d; echo x > file/f; "
              "ln -s t missing/l; sqlite3 missing/db.sqlite3 'select 1'; true")
    outcome = run_command(["bash", "-c", script], store=store, cwd=str(work), log=None,
                          post_call=False, stderr=subprocess.DEVNULL)
    assert outcome.returncode == 0
    assert sorted(p.name for p in work.iterdir()) == ["file"]
    assert outcome.backup_id is None
