"""The decision service and the hook client: up, down, killed mid-call, shared by sessions.

Every test drives the real processes: ``preimage serve`` and ``preimage hook``
run as subprocesses on a private runtime directory.  Slow captures are made
slow by a PostgreSQL table lock the test holds (never by sleeping), so "the
other session was answered while this capture waited" is an ordering fact.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from services import request, running_services, stop_services


def payload(command: str, cwd: Path, session: str = "s1") -> str:
    """A Claude Code PreToolUse payload for a Bash call."""
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}, "cwd": str(cwd),
                       "session_id": session, "tool_use_id": "t1"})


def wait_for(check: Callable[[], bool], what: str, limit: float = 120.0) -> None:
    """Poll ``check`` until it holds (a readiness wait; the limit only stops a hung test)."""
    end = time.monotonic() + limit
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(0.05)


class Service:
    """A private environment for hook calls and the service they talk to."""

    def __init__(self, tmp: Path) -> None:
        rt = self.runtime = tmp / "rt"
        rt.mkdir(mode=0o700)
        self.home = tmp / "store"
        self.env = {k: v for k, v in os.environ.items() if k != "PREIMAGE_SERVICE"}
        self.env.update(PREIMAGE_HOME=str(self.home), PREIMAGE_CONFIG_DIR=str(tmp / "config"),
                        PREIMAGE_LOG=str(tmp / "log" / "hook.log"), PREIMAGE_RUNTIME_DIR=str(rt),
                        PREIMAGE_SERVE_IDLE="300")
        self.proc: subprocess.Popen[bytes] | None = None

    def cli(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "preimage", *args], capture_output=True,
                              text=True, env=self.env, timeout=300, **kw)

    def hook(self, command: str, cwd: Path, session: str = "s1",
             run_in: Path | None = None) -> subprocess.Popen[str]:
        """A hook process for a Bash call in ``cwd`` (the process itself runs in ``run_in``)."""
        proc = subprocess.Popen([sys.executable, "-m", "preimage", "hook", "claude-code"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.env, cwd=run_in)
        assert proc.stdin
        proc.stdin.write(payload(command, cwd, session))
        proc.stdin.close()
        proc.stdin = None  # sent in full; communicate() only reads
        return proc

    def status(self) -> dict[str, Any] | None:
        proc = self.cli("serve", "--status", "--json")
        doc = json.loads(proc.stdout)
        return doc if isinstance(doc, dict) else None

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "preimage", "serve"], env=self.env,
                                     cwd=self.runtime.parent, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        wait_for(lambda: self.status() is not None, "the service answers --status")

    def stop(self) -> None:
        """Stop every service of this runtime directory — started by the test or by a hook,
        listening or still starting, whatever settings it was started with."""
        stop_services(self.runtime)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    """Settings for one test's hooks; any service they start is stopped afterwards."""
    svc = Service(tmp_path)
    yield svc
    svc.stop()
    assert running_services(svc.runtime) == []


def finish(proc: subprocess.Popen[str]) -> tuple[dict[str, Any], str]:
    """Wait for a hook process; its JSON answer and its stderr."""
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out), err


def test_service_up_answers_and_backs_up(service: Service, tmp_path: Path) -> None:
    """With the service running, the hook's answers come from it, backups included."""
    service.start()
    work = tmp_path / "w"
    (work / "build").mkdir(parents=True)
    (work / "build" / "out.o").write_bytes(b"\x7fELF")
    answer, err = finish(service.hook("ls -la", work))
    assert answer == {} and "in-process" not in err
    answer, err = finish(service.hook("truncate -s 0 build/out.o", work))
    assert "in-process" not in err
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "preimage backup " in context
    backup_id = context.split("preimage backup ", 1)[1].split()[0]
    (work / "build" / "out.o").write_bytes(b"")
    service.cli("restore", backup_id).check_returncode()
    assert (work / "build" / "out.o").read_bytes() == b"\x7fELF"
    answer, err = finish(service.hook("rm -r build", work))
    assert " trash " in answer["hookSpecificOutput"]["updatedInput"]["command"]
    status = service.status()
    assert status is not None and status["served"]["hook"] == 3


def test_the_service_s_warm_up_capture_leaves_nothing_behind(service: Service,
                                                             tmp_path: Path) -> None:
    """The service backs up a scratch folder before its first call (so call processes
    start with a capture's first-use costs paid): nothing of it stays in the temporary
    directory, nothing reaches the user's store, and the first protected call is served."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    service.env["TMPDIR"] = str(scratch)
    service.start()
    assert list(scratch.iterdir()) == []
    assert not service.home.exists()
    work = tmp_path / "w"
    work.mkdir()
    (work / "notes.txt").write_text("hello\n")
    answer, err = finish(service.hook("truncate -s 0 notes.txt", work))
    assert "in-process" not in err
    assert "preimage backup " in answer["hookSpecificOutput"]["additionalContext"]
    listed = json.loads(service.cli("list", "--json").stdout)
    (backup,) = listed   # the call's: none of the warm-up's
    assert f"file://{work}/notes.txt" in backup["targets"]
    assert all(t.startswith(f"file://{work}") for t in backup["targets"])


def test_service_down_decides_in_process_and_starts_one(service: Service, tmp_path: Path) -> None:
    """No service: the call is still protected, the answer says it was decided in-process,
    and a service is started for the next call."""
    work = tmp_path / "w"
    work.mkdir()
    (work / "notes.txt").write_text("mine")
    answer, err = finish(service.hook("truncate -s 0 notes.txt", work))
    assert "decided in-process" in err and "not reachable" in err
    assert "preimage backup " in answer["hookSpecificOutput"]["additionalContext"]
    wait_for(lambda: service.status() is not None, "the hook started a service")
    answer, err = finish(service.hook("cat notes.txt", work))
    assert answer == {} and "in-process" not in err


def test_service_carries_the_home_the_hook_was_given(service: Service, tmp_path: Path) -> None:
    """A relative PREIMAGE_HOME means the store beside the hook process, not beside the
    service: the capture goes there and the `rm` rewrite names it with `--home`, absolute."""
    work = tmp_path / "w"
    (work / "build").mkdir(parents=True)
    (work / "notes.txt").write_text("mine")
    service.env["PREIMAGE_HOME"] = "rel-store"
    service.start()   # in tmp_path; the hooks run in `work`
    answer, err = finish(service.hook("truncate -s 0 notes.txt", work, run_in=work))
    assert "in-process" not in err
    backup_id = answer["hookSpecificOutput"]["additionalContext"].split("preimage backup ")[1]
    answer, err = finish(service.hook("rm -r build", work, run_in=work))
    command = answer["hookSpecificOutput"]["updatedInput"]["command"]
    assert f" trash --home {work / 'rel-store'} " in command and "in-process" not in err
    absolute = dict(service.env, PREIMAGE_HOME=str(work / "rel-store"))
    listed = subprocess.run([sys.executable, "-m", "preimage", "list", "--json"], env=absolute,
                            capture_output=True, text=True, timeout=300, check=True).stdout
    assert backup_id.split()[0] in listed
    assert not (tmp_path / "rel-store").exists()


def test_service_sees_an_edited_rule(service: Service, tmp_path: Path) -> None:
    """The service validates the user's rules once per version of each file: a rule added
    to rules.d while it runs applies to the next call, and its removal to the one after."""
    service.start()
    work = tmp_path / "w"
    (work / "data").mkdir(parents=True)
    (work / "data" / "rows.csv").write_text("1,tea\n")
    def context() -> str:
        answer, err = finish(service.hook("deploy wipe --yes", work))
        assert "in-process" not in err
        return str(answer["hookSpecificOutput"]["additionalContext"])

    assert "(workspace tier)" in context()      # no rule knows `deploy`: the workspace is kept
    rules_d = tmp_path / "config" / "rules.d"
    rules_d.mkdir(parents=True)
    (rules_d / "mine.yaml").write_text(
        "rules:\n  - name: my-deploy\n    tier: pair\n    impact: high\n"
        "    match: {command: [deploy], subcommand: [wipe]}\n"
        "    targets: ['file://{cwd}/data']\n")
    got = context()
    # the rule's target, and the entry of the directory holding it (its times change)
    assert "(pair tier)" in got and f"{(work / 'data').as_uri()}, {work.as_uri()}?depth=0." in got
    (rules_d / "mine.yaml").unlink()
    assert "(workspace tier)" in context()


def test_service_off_decides_in_process(service: Service, tmp_path: Path) -> None:
    """PREIMAGE_SERVICE=off keeps every decision in the hook process and starts nothing."""
    service.env["PREIMAGE_SERVICE"] = "off"
    answer, err = finish(service.hook("ls", tmp_path))
    assert answer == {} and "PREIMAGE_SERVICE is off" in err
    assert service.status() is None


def test_serve_status_and_stop(service: Service) -> None:
    """`serve --status` names the running service; `--stop` ends it and status says so."""
    service.start()
    proc = service.cli("serve", "--status")
    assert proc.returncode == 0 and "decision service pid" in proc.stdout
    assert service.proc is not None and str(service.proc.pid) in proc.stdout
    stopped = service.cli("serve", "--stop")
    assert f"pid {service.proc.pid}" in stopped.stdout
    assert service.proc.wait(timeout=60) == 0
    proc = service.cli("serve", "--status")
    assert proc.returncode == 1 and "no decision service is running" in proc.stdout


def test_idle_service_exits_and_cleans_up(service: Service, tmp_path: Path) -> None:
    """A service with nothing to do exits on its own after listening, removing its socket."""
    service.env["PREIMAGE_SERVE_IDLE"] = "1"
    proc = subprocess.run([sys.executable, "-m", "preimage", "serve"], env=service.env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in (service.runtime / "serve.log").read_text().splitlines()]
    assert [e["event"] for e in events] == ["start", "exit"]
    assert events[1]["reason"] == "idle"
    assert not Path(events[0]["socket"]).exists()


def test_any_home_and_config_reach_the_one_service(service: Service, tmp_path: Path) -> None:
    """A hook with another PREIMAGE_HOME and config is answered by the same service, and its
    backup lands in its own store, under its own rules."""
    service.start()
    status = service.status()
    assert status is not None
    work = tmp_path / "w"
    work.mkdir()
    (work / "notes.txt").write_text("mine")
    other_home, other_config = tmp_path / "other-store", tmp_path / "other-config"
    (other_config / "rules.d").mkdir(parents=True)
    (other_config / "rules.d" / "mine.yaml").write_text(
        "rules:\n  - name: my-deploy\n    tier: pair\n    impact: high\n"
        "    match: {command: [deploy], subcommand: [wipe]}\n"
        "    targets: ['file://{cwd}/notes.txt']\n")
    first = dict(service.env)
    service.env.update(PREIMAGE_HOME=str(other_home), PREIMAGE_CONFIG_DIR=str(other_config))
    answer, err = finish(service.hook("deploy wipe --yes", work))
    assert "in-process" not in err
    assert "(pair tier)" in answer["hookSpecificOutput"]["additionalContext"]
    service.env = first
    answer, err = finish(service.hook("deploy wipe --yes", work))
    assert "in-process" not in err     # the first config knows no `deploy`: the workspace
    assert "(workspace tier)" in answer["hookSpecificOutput"]["additionalContext"]
    after = service.status()
    assert after is not None and after["pid"] == status["pid"]
    assert after["served"]["hook"] == status["served"]["hook"] + 2
    with sqlite3.connect(other_home / "catalog.sqlite") as db:
        assert db.execute("SELECT count(*) FROM backups").fetchone()[0] == 1
    with sqlite3.connect(service.home / "catalog.sqlite") as db:
        assert db.execute("SELECT count(*) FROM backups").fetchone()[0] == 1


def test_scratch_homes_leave_one_pair_holding_none_of_them(service: Service,
                                                           tmp_path: Path) -> None:
    """Many short hook calls and commands, each with its own scratch HOME, store and
    config, leave exactly one decision service and one warm process; once the scratch
    folders are deleted, neither process holds a file, folder or variable of them."""
    work = tmp_path / "w"
    work.mkdir()
    (work / "notes.txt").write_text("mine")
    base = dict(service.env)
    scratch = [tmp_path / f"scratch{i}" for i in range(6)]
    for i, home in enumerate(scratch):
        home.mkdir()
        service.env = dict(base, HOME=str(home), PREIMAGE_HOME=str(home / "store"),
                           PREIMAGE_CONFIG_DIR=str(home / "config"),
                           PREIMAGE_LOG=str(home / "log" / "hook.log"),
                           PGPASSWORD=f"secret-{i}")
        answer, _ = finish(service.hook("truncate -s 0 notes.txt", work))
        assert "preimage backup " in answer["hookSpecificOutput"]["additionalContext"]
        service.cli("list").check_returncode()
        (work / "notes.txt").write_text("mine")
        wait_for(lambda: service.status() is not None and _warm_pid(service) is not None,
                 "the first calls started the pair")
    service.env = base
    for home in scratch:
        shutil.rmtree(home)
    locks = sorted(p.name.split("-")[0] for p in service.runtime.glob("*.lock"))
    assert locks == ["cli", "serve"]
    assert len(running_services(service.runtime)) == 1
    pids = [service.status()["pid"], _warm_pid(service)]  # type: ignore[index]
    for pid in pids:
        held = [os.readlink(f"/proc/{pid}/cwd")]
        held += [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        assert not [h for h in held if h.startswith(str(tmp_path / "scratch"))], held
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        assert b"secret-" not in environ and str(tmp_path / "scratch").encode() not in environ


def _warm_pid(service: Service) -> int | None:
    """The warm process's pid, from ``serve --status --json`` (``None``: none runs)."""
    doc = service.status()
    warm = doc.get("warm") if doc else None
    return int(warm["pid"]) if isinstance(warm, dict) else None


def test_unknown_protocol_version_is_refused(service: Service) -> None:
    """A request in another protocol version gets an error naming the version spoken."""
    service.start()
    status = service.status()
    assert status is not None
    reply = request(status["socket"], {"v": 99, "op": "status"})
    assert reply is not None and reply["event"] == "error" and "speaks 1" in reply["error"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another user")
def test_other_users_are_refused(service: Service) -> None:
    """A process of another uid is refused even when the socket's mode would let it in."""
    service.start()
    status = service.status()
    assert status is not None
    sock_path = status["socket"]
    os.chmod(Path(sock_path).parent, 0o755)
    os.chmod(sock_path, 0o666)
    code = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX); s.settimeout(60); s.connect(sys.argv[1])\n"
        "print(s.recv(4096).decode())\n"   # refused at once, before any request is read
    )
    # The child changes into the socket's folder while still root, then drops to uid 65534
    # and connects by the relative name (the test's temp folders are closed to others), with
    # an interpreter any user may run.
    python = shutil.which("python3", path="/usr/bin:/usr/local/bin") or sys.executable
    proc = subprocess.run([python, "-I", "-c", code, Path(sock_path).name], capture_output=True,
                          text=True, user=65534, group=65534, extra_groups=[],
                          cwd=Path(sock_path).parent, timeout=120)
    assert "refused" in proc.stdout, proc.stderr
    assert "pid" not in json.loads(proc.stdout.splitlines()[0])


def test_a_sandboxed_hook_is_not_served_with_the_services_rights(service: Service,
                                                                 tmp_path: Path) -> None:
    """A hook in a mount namespace where the store is read-only is refused by the service
    (which would capture with its own rights) and decides in its own process, where the
    sandbox holds: the call is NOT backed up and the store gets nothing."""
    service.start()
    work = tmp_path / "w"
    work.mkdir()
    (work / "notes.txt").write_text("mine")
    answer, err = finish(service.hook("truncate -s 0 notes.txt", work))
    assert "in-process" not in err and "preimage backup " in json.dumps(answer)
    with sqlite3.connect(service.home / "catalog.sqlite") as db:
        before = db.execute("SELECT count(*) FROM backups").fetchone()[0]
    user = () if os.geteuid() == 0 else ("-r",)
    box = ("unshare", *user, "-m", "sh", "-c",
           f'mount --bind -o ro {service.home} {service.home} && exec "$@"', "sandbox")
    proc = subprocess.run([*box, sys.executable, "-m", "preimage", "hook", "claude-code"],
                          input=payload("truncate -s 0 notes.txt", work), env=service.env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "refused" in proc.stderr and "confined differently" in proc.stderr
    assert "decided in-process" in proc.stderr
    assert "NOT backed up" in json.loads(proc.stdout)["systemMessage"]
    with sqlite3.connect(service.home / "catalog.sqlite") as db:
        assert db.execute("SELECT count(*) FROM backups").fetchone()[0] == before
    events = [json.loads(line) for line in (service.runtime / "serve.log").read_text().splitlines()]
    assert [e for e in events if e["event"] == "refused"][-1]["why"].startswith(
        "a process confined differently")


def test_hook_client_imports_only_the_standard_library(service: Service, tmp_path: Path) -> None:
    """The whole hook process, answered by the service, imports nothing outside the standard
    library but its own few modules."""
    service.start()
    env = dict(service.env, PYTHONPROFILEIMPORTTIME="1")
    baseline = subprocess.run([sys.executable, "-c", "pass"], capture_output=True, text=True,
                              env=env, timeout=120).stderr
    proc = subprocess.run([sys.executable, "-m", "preimage", "hook", "claude-code"],
                          input=payload("git status", tmp_path), capture_output=True, text=True,
                          env=env, timeout=120)
    assert json.loads(proc.stdout) == {}

    def modules(text: str) -> set[str]:
        return {line.rsplit("|", 1)[1].strip() for line in text.splitlines()
                if line.startswith("import time:") and "|" in line} - {"imported package"}

    own = {"preimage", "preimage._entry", "preimage.layer", "preimage.services",
           "preimage.services.hook_client",
           "preimage.services.wire", "preimage.services.lean_json"}
    extra = modules(proc.stderr) - modules(baseline) - own
    foreign = sorted(m for m in extra if m.split(".")[0] not in sys.stdlib_module_names)
    assert foreign == []


# ------------------------------------------------------------------ slow captures


class LockedTable:
    """A table whose capture blocks until the test lets it go."""

    def __init__(self, server: Any, name: str) -> None:
        import psycopg

        self.server = server
        self.name = name
        server.psql(f"CREATE DATABASE {name}")
        server.psql("CREATE TABLE orders (id int primary key, item text);"
                    "INSERT INTO orders VALUES (1, 'tea'), (2, 'cake');", name)
        self.uri = server.uri(name)
        self.holder = psycopg.connect(server.uri(name, password=True))
        self.holder.execute("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE")
        self.watch = psycopg.connect(server.uri(name, password=True), autocommit=True)

    def capture_waiting(self) -> bool:
        """Whether some session (the capture) waits for the lock the test holds."""
        row = self.watch.execute("SELECT count(*) FROM pg_locks WHERE NOT granted AND "
                                 "relation = 'orders'::regclass").fetchone()
        return bool(row and row[0])

    def release(self) -> None:
        self.holder.rollback()

    def close(self) -> None:
        self.holder.close()
        self.watch.close()
        self.server.psql(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")


@pytest.fixture
def locked(pg_server: Any, service: Service, request: pytest.FixtureRequest) -> Iterator[LockedTable]:
    """`orders` locked by the test; the service's settings carry the server's password."""
    service.env["PREIMAGE_POSTGRESQL_PASSWORD"] = pg_server.password
    table = LockedTable(pg_server, f"svc_{request.node.name[-20:].lower()}".replace("-", "_"))
    yield table
    table.close()


def test_slow_capture_does_not_delay_another_session(service: Service, locked: LockedTable,
                                                     tmp_path: Path) -> None:
    """While one session's capture waits on a locked table, another session's read-only
    call is answered by the same service; the first finishes once the lock is released."""
    service.start()
    slow = service.hook(f'psql "{locked.uri}" -c "DROP TABLE orders"', tmp_path, session="A")
    wait_for(locked.capture_waiting, "the capture waits on the table lock")
    answer, err = finish(service.hook("git log --oneline", tmp_path, session="B"))
    assert answer == {} and "in-process" not in err
    assert slow.poll() is None  # still waiting: it cannot finish while the lock is held
    locked.release()
    answer, err = finish(slow)
    assert "in-process" not in err
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "preimage backup " in context and "orders" in context


def test_call_killed_mid_capture_says_not_backed_up(service: Service, locked: LockedTable,
                                                    tmp_path: Path) -> None:
    """The process answering a call, killed while capturing, leaves its backup open and the
    hook says NOT backed up; the service itself goes on answering."""
    service.start()
    slow = service.hook(f'psql "{locked.uri}" -c "DROP TABLE orders"', tmp_path)
    wait_for(locked.capture_waiting, "the capture waits on the table lock")
    status = service.status()
    assert status is not None and status["in_flight"] == 1
    os.kill(status["calls"][0], signal.SIGKILL)
    answer, err = finish(slow)
    assert "NOT backed up" in answer["systemMessage"]
    assert "stopped mid-call" in err
    # on_failure is `ask` unless set: the user decides whether the call runs unprotected
    assert answer["hookSpecificOutput"]["permissionDecision"] == "ask"
    locked.release()
    with sqlite3.connect(service.home / "catalog.sqlite") as db:
        statuses = [r[0] for r in db.execute("SELECT status FROM backups")]
    assert statuses == ["open"]
    answer, err = finish(service.hook("git status", tmp_path))
    assert answer == {} and "in-process" not in err
    after = service.status()
    assert after is not None and after["pid"] == status["pid"]


def test_a_hook_that_fails_inside_keeps_the_on_failure_rule(home: Path, tmp_path: Path) -> None:
    """An error inside the hook client itself is answered as a failed backup: with
    ``--on-failure deny`` the call is denied and says why, never passed silently."""
    payload = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "rm -rf build"}, "cwd": str(tmp_path),
                          "session_id": "s1"})
    script = ("import preimage.services.hook_client as h\n"
              "def broken(*a):\n    raise RuntimeError('a bug in the hook')\n"
              "h.run = broken\n"
              "h.main(['claude-code', '--on-failure', 'deny'])\n")
    proc = subprocess.run([sys.executable, "-c", script], input=payload, capture_output=True,
                          text=True, timeout=120)
    answer = json.loads(proc.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert "NOT backed up" in answer["permissionDecisionReason"]
    assert "a bug in the hook" in answer["permissionDecisionReason"]
