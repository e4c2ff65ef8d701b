"""Fixtures every test area shares: a private store and the CLI in a real process.

No test ever reaches the user's own store, layer config, hook log or service
sockets.  Every test runs with its own ``PREIMAGE_HOME``, ``PREIMAGE_CONFIG_DIR`` and
``PREIMAGE_LOG`` (the autouse ``home`` fixture).  Behind that, each test process points
the places preimage falls back to when nothing is set (``XDG_DATA_HOME``,
``XDG_CONFIG_HOME``, ``XDG_STATE_HOME``, ``XDG_RUNTIME_DIR``) at a private directory
and clears the ``PREIMAGE_*`` settings a developer's shell may carry; a test that
leaves anything in one of those fallbacks (a session fixture, a process started with an
environment built by hand) fails at teardown naming the place, and a run after which
the user's real defaults changed says so with the paths (and fails under CI).

An area's own ``conftest.py`` wraps ``cli`` when its commands need other defaults
(mail tests check the exit code by default).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))

from preimage import Store

CliResult = subprocess.CompletedProcess[str]

#: The fixture that starts each real server, and the marker every test using it carries.
SERVER_MARKERS = {
    "pg_server": "postgres", "mariadb_server": "mariadb", "dovecot": "imap",
    "dovecot_minimal": "imap", "control_plane": "kubernetes", "chromium": "browser",
    "isso_server": "webapp", "trac_server": "webapp", "copyparty": "webapp",
}


#: Areas whose tests share session servers: under pytest-xdist (``-n 3``) all the tests
#: of one run on one worker, so each server starts once.  Every other module is a unit of
#: its own (a benchmark module shares one bench run, the real-harness module one run per
#: harness, the layer audit one audited sample), so its module fixtures run once.  The
#: browser and remote areas take minutes and their servers seconds: their modules are
#: units of their own, and a worker starts those servers the first time it needs them.
GROUPED_AREAS = ("email", "k8s", "sql")

#: Benchmark modules that run against an area's session server, and so in its unit (the
#: undo suite's full run uses the session's Kubernetes control plane).
JOINS_AREA = {"tests/bench/test_bench_undo.py": "k8s"}

#: Modules of a grouped area that make a unit of their own with each other: the MariaDB
#: tests (and the contract kit, which runs on both servers) share the MariaDB server, and
#: run beside the PostgreSQL tests instead of after them.
SPLIT_UNITS = {"tests/sql/test_mariadb.py": "sql-mariadb",
               "tests/sql/test_sql_contract.py": "sql-mariadb"}

#: Units that take minutes, handed out first and longest first, so that no worker is left
#: waiting on one at the end; the rest follow by number of tests, as xdist orders them.
LONG_UNITS = (
    "tests/layer/test_layer_audit_sql.py", "tests/layer/test_layer_audit.py", "sql",
    "tests/harness/test_real_harnesses.py", "sql-mariadb", "k8s",
    "tests/bench/test_bench_browser.py", "tests/browser/test_web_contract.py",
    "tests/browser/test_browser_scenarios.py", "tests/remote/test_remote_lifecycle.py",
    "tests/remote/test_remote_documents.py",
)


def _unit(nodeid: str) -> str:
    """The unit of work a test belongs to (see :data:`GROUPED_AREAS`): its area, or its
    module."""
    path = nodeid.split("::", 1)[0]
    if path in JOINS_AREA:
        return JOINS_AREA[path]
    if path in SPLIT_UNITS:
        return SPLIT_UNITS[path]
    parts = path.split("/")
    if len(parts) > 2 and parts[0] == "tests" and parts[1] in GROUPED_AREAS:
        return parts[1]
    return path


def _long_first(units: list[tuple[str, dict[str, bool]]]) -> list[tuple[str, dict[str, bool]]]:
    """``units`` (name, tests) in the order they are handed out: :data:`LONG_UNITS` first,
    then the others by number of tests, most first."""
    def rank(unit: tuple[str, dict[str, bool]]) -> tuple[int, int]:
        name, tests = unit
        return (LONG_UNITS.index(name) if name in LONG_UNITS else len(LONG_UNITS), -len(tests))

    return sorted(units, key=rank)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Schedule by :func:`_unit`, longest units first (:func:`_long_first`): xdist's own
    ``loadgroup`` reads a group from a suffix it writes into node ids, which pytest 9 no
    longer lets a plugin change."""
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):  # type: ignore[misc]
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            if not self.ordered:  # the queue is complete before the first unit goes out
                queue = _long_first(list(self.workqueue.items()))
                self.workqueue.clear()
                self.workqueue.update(queue)
                self.ordered = True
            super()._assign_work_unit(node)

    return UnitScheduling(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that starts (or shares) a real server carries that server's marker, even when
    its module forgot it, so ``-m "not kubernetes"`` and friends select exactly."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for fixture, marker in SERVER_MARKERS.items():
            if fixture in used and item.get_closest_marker(marker) is None:
                item.add_marker(getattr(pytest.mark, marker))


@pytest.fixture(scope="session", autouse=True)
def _hook_decides_in_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Hook processes decide in-process unless a test starts a decision service itself
    (a service per test's store would outlive the test).  Any service still starts in a
    runtime directory of the session's own, never the user's, and the session ends by
    stopping whatever is left there — and failing, since a test left it."""
    from services import stop_services

    runtime = tmp_path_factory.mktemp("runtime")
    runtime.chmod(0o700)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREIMAGE_SERVICE", "off")
        mp.setenv("PREIMAGE_RUNTIME_DIR", str(runtime))
        yield
    left = stop_services(runtime)
    assert not left, f"decision services left running by the tests: pids {left}"


#: What preimage falls back to when no ``PREIMAGE_*`` setting names a place:
#: (environment variable, what preimage keeps under ``$VAR/preimage``).
FALLBACKS = (
    ("XDG_DATA_HOME", "the default store"),
    ("XDG_CONFIG_HOME", "the default layer config"),
    ("XDG_STATE_HOME", "the default hook log"),
    ("XDG_RUNTIME_DIR", "the default service sockets"),
)

#: Settings that point preimage at a user's own state or change its behaviour: a test
#: sets the ones it means, so none is inherited from the shell that runs pytest.
USER_SETTINGS = (
    "PREIMAGE_HOME", "PREIMAGE_STORE", "PREIMAGE_CATALOG", "PREIMAGE_STORE_KEY",
    "PREIMAGE_STORE_KEY_FILE", "PREIMAGE_CHUNK_CACHE_MB", "PREIMAGE_CONFIG_DIR",
    "PREIMAGE_LOG", "PREIMAGE_RUNTIME_DIR", "PREIMAGE_SERVE_IDLE", "PREIMAGE_MODEL",
    "PREIMAGE_MODE", "PREIMAGE_POLICY", "PREIMAGE_WORKSPACE", "PREIMAGE_BROWSER_PROFILE",
    "PREIMAGE_CRASH_AT", "PREIMAGE_DEBUG",
)


Fingerprint = tuple[tuple[str, int, int], ...] | None


def _user_defaults() -> list[Path]:
    """The user's real default store, layer config and hook log directories (as the
    environment of the shell running pytest names them)."""
    import platformdirs

    return [
        Path(platformdirs.user_data_dir("preimage", appauthor=False)),
        Path(platformdirs.user_config_dir("preimage", appauthor=False)),
        Path(platformdirs.user_log_dir("preimage", appauthor=False)),
    ]


def _fingerprint(places: list[Path]) -> dict[Path, Fingerprint]:
    """(name, mtime, size) of every entry one level down in each place, or None when the
    place does not exist: enough to see that something opened a store or wrote a log."""
    out: dict[Path, Fingerprint] = {}
    for place in places:
        try:
            entries = [(e.name, e.stat(follow_symlinks=False)) for e in os.scandir(place)]
        except FileNotFoundError:
            out[place] = None
            continue
        except OSError:
            continue
        out[place] = tuple(sorted((n, st.st_mtime_ns, st.st_size) for n, st in entries))
    return out


def pytest_configure(config: pytest.Config) -> None:
    """Give this process private fallback locations and a clean ``PREIMAGE_*`` slate.

    The controller of an xdist run fingerprints the user's real defaults first (see
    :func:`pytest_sessionfinish`); each worker makes fallbacks of its own, so a test that
    uses one is caught on the worker that ran it.
    """
    if not hasattr(config, "workerinput"):
        config.stash[_REAL_DEFAULTS] = _fingerprint(_user_defaults())
    for name in USER_SETTINGS:
        os.environ.pop(name, None)
    sandbox = Path(tempfile.mkdtemp(prefix="preimage-tests-"))
    config.stash[_SANDBOX] = sandbox
    for var, _ in FALLBACKS:
        place = sandbox / var.lower()
        place.mkdir(mode=0o700)
        os.environ[var] = str(place)


def pytest_unconfigure(config: pytest.Config) -> None:
    sandbox = config.stash.get(_SANDBOX, None)
    if sandbox is not None:
        shutil.rmtree(sandbox, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Report, loudly, when the user's own default store, config or log changed during the
    run; under CI (``CI`` set: nothing else runs there) the run fails.  On a developer's
    machine their own agents' hooks may write there meanwhile, so it is a warning."""
    before = session.config.stash.get(_REAL_DEFAULTS, None)
    if before is None:
        return
    after = _fingerprint(list(before))
    changed = [str(place) for place, print_ in before.items() if after.get(place) != print_]
    if not changed:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_sep("=", "default home touched", red=True, bold=True)
        reporter.write_line(
            f"the user's default preimage locations changed during the tests: "
            f"{', '.join(changed)} — a test (or a process it started with an environment "
            "built by hand) ran without the `home` fixture's settings, or something outside "
            "the tests wrote there meanwhile", red=True)
    if os.environ.get("CI"):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_SANDBOX = pytest.StashKey[Path]()
_REAL_DEFAULTS = pytest.StashKey[dict[Path, Fingerprint]]()


@pytest.fixture(autouse=True)
def _no_default_locations(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that left anything where preimage falls back to without a setting,
    and clear it so the next test starts clean."""
    yield
    used = []
    for var, what in FALLBACKS:
        place = Path(os.environ.get(var, "")) / "preimage"
        if os.environ.get(var) and os.path.lexists(place):
            used.append(f"{what} ({place})")
            shutil.rmtree(place, ignore_errors=True)
    if used:
        pytest.fail(
            f"{request.node.nodeid} used {', '.join(used)}: every test uses the `home` "
            "fixture (PREIMAGE_HOME, PREIMAGE_CONFIG_DIR, PREIMAGE_LOG) or sets its own",
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private store (PREIMAGE_HOME), layer config dir and hook log for every test,
    outside the trees it protects; a test asks for it by name to know where they are."""
    h = tmp_path / "store"
    monkeypatch.setenv("PREIMAGE_HOME", str(h))
    monkeypatch.setenv("PREIMAGE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("PREIMAGE_LOG", str(tmp_path / "hook.log"))
    return h


@pytest.fixture
def store(home: Path) -> Iterator[Store]:
    """The store at the test's PREIMAGE_HOME."""
    st = Store(home)
    yield st
    st.close()


@pytest.fixture
def cli(home: Path) -> Callable[..., CliResult]:
    """Run ``preimage ARGS`` in a real process with the test's store.

    ``check=True`` raises with the command's stderr when it exits non-zero;
    ``input``, ``cwd`` and other keywords go to :func:`subprocess.run`.
    """

    def run(*args: str, check: bool = False, env: dict[str, str] | None = None,
            input: str | None = None, cwd: Path | None = None, **kw: Any) -> CliResult:
        full_env = {**os.environ, "PREIMAGE_HOME": str(home), **(env or {})}
        proc = subprocess.run(
            [sys.executable, "-m", "preimage", *args],
            capture_output=True, text=True, env=full_env, input=input, cwd=cwd,
            timeout=600, **kw,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"preimage {' '.join(args)} failed ({proc.returncode}): {proc.stderr}"
            )
        return proc

    return run


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that refuses every connection for the whole test: bound
    but never listening, so no other process can start listening on it meanwhile."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield int(sock.getsockname()[1])
    finally:
        sock.close()


def _bin_dir() -> str:
    """The folder of the cached Kubernetes control plane binaries (fixtures/kubernetes)."""
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        ["bash", str(root / "fixtures" / "kubernetes" / "build.sh"), "--cached"],
        capture_output=True, text=True,
    )
    if proc.returncode != 0:
        pytest.fail(
            "the Kubernetes control plane binaries are missing — run `bash fixtures/setup.sh` "
            f"(or `bash fixtures/kubernetes/build.sh`) first: {proc.stderr.strip()}"
        )
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def control_plane() -> Iterator[Any]:
    """One throw-away Kubernetes control plane (etcd, kube-apiserver, controller manager)
    for the whole session, shared by the k8s tests and the benchmark runs that need a
    cluster (startup costs ~10 s)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "fixtures" / "kubernetes" / "control_plane.py"
    spec = importlib.util.spec_from_file_location("_preimage_fixture_k8s", path)
    assert spec and spec.loader
    cp_fixture = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = cp_fixture
    spec.loader.exec_module(cp_fixture)
    # the claim binder re-checks Lost claims every 2 s instead of every 15 s
    cp = cp_fixture.ControlPlane(
        _bin_dir(), extra_controller_manager_args=("--pvclaimbinder-sync-period=2s",)
    )
    try:
        cp.start()
    except cp_fixture.ControlPlaneError as exc:
        pytest.fail(f"the Kubernetes control plane did not start: {exc}")
    try:
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def isso_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real isso comment server (admin interface on, moderation off), shared by the
    browser tests and the benchmark runs that need one (``PREIMAGE_BENCH_ISSO``)."""
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    from fixtures.isso import IssoServer

    srv = IssoServer(tmp_path_factory.mktemp("isso")).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def trac_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real Trac (tracd) with milestones and tickets that have authored, dated changes,
    shared by the browser tests and the benchmark runs that need one
    (``PREIMAGE_BENCH_TRAC``)."""
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    from fixtures.trac import TracServer

    srv = TracServer(tmp_path_factory.mktemp("trac")).start()
    srv.seed()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def bench_web_servers(isso_server: Any, trac_server: Any) -> dict[str, str]:
    """The settings that point `preimage bench` at the session's isso and Trac."""
    return {"PREIMAGE_BENCH_ISSO": isso_server.url, "PREIMAGE_BENCH_TRAC": trac_server.url,
            "PREIMAGE_BENCH_TRAC_ENV": str(trac_server.env)}
