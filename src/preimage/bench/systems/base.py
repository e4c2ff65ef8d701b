"""The system plug-in interface: what the benchmark needs from each kind of state.

A :class:`System` knows how to start (or reuse) its real server once per
benchmark run, seed one scenario's state into a fresh :class:`Sandbox`, run
an MCP call against it, and which target URIs hold its state.  Shell calls
are run the same way for every system (``bash -c`` in the sandbox, with the
sandbox's ``HOME`` and the system's client environment); MCP calls go to the
system's :meth:`System.run_mcp`, a small executor that performs the same
operation the MCP server would.

Every system seeds files too (``setup.files``, ``setup.wheels``,
``setup.run``; see :mod:`preimage.bench.systems.tree`), so a scenario can
combine a workspace with a database or a cluster.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from preimage.bench.scenario import Scenario, fill
from preimage.bench.systems.tree import apply_times, build_wheels, make_entries
from preimage.interface.errors import NoSuchConnectorError, UsageError
from preimage.interface.registry import BuiltIn, PluginLoader, get_connector

SHELL_TIMEOUT = 180.0


@dataclass
class Sandbox:
    """One scenario run's private world: a home directory, a cwd and variables."""

    root: Path
    variables: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        """The ``HOME`` of every shell command the run executes."""
        return self.root / "home"

    @property
    def cwd(self) -> Path:
        """The agent's working directory (``{cwd}``)."""
        return Path(self.variables["cwd"])

    @classmethod
    def create(cls, root: Path, cwd: str = "{home}/proj") -> Sandbox:
        """A fresh sandbox under ``root`` with ``home``, ``work`` and ``cwd`` set."""
        root.mkdir(parents=True, exist_ok=True)
        home = root / "home"
        home.mkdir(exist_ok=True)
        sb = cls(root=root)
        sb.variables = {"home": str(home), "work": str(root), "run": secrets.token_hex(3)}
        sb.variables["cwd"] = str(fill(cwd, sb.variables))
        Path(sb.variables["cwd"]).mkdir(parents=True, exist_ok=True)
        sb.env = {
            "HOME": str(home),
            "PATH": _path_with_python(),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TZ": "UTC",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Dev",
            "GIT_AUTHOR_EMAIL": "dev@example.org",
            "GIT_COMMITTER_NAME": "Dev",
            "GIT_COMMITTER_EMAIL": "dev@example.org",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_INDEX": "1",
            "PIP_NO_INPUT": "1",
        }
        return sb

    def fill(self, value: Any) -> Any:
        """``value`` with the sandbox's ``{placeholders}`` filled in."""
        return fill(value, self.variables)


@dataclass
class CallOutcome:
    """How the destructive call ran."""

    exit_code: int
    output: str = ""


def _path_with_python() -> str:
    """``PATH`` with this interpreter's directory first, so ``python3`` is the one running."""
    here = str(Path(sys.executable).parent)
    rest = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    return f"{here}:{rest}"


def run_shell(command: str, sandbox: Sandbox, cwd: str | None = None) -> CallOutcome:
    """Run ``command`` with ``bash -c`` in the sandbox (its HOME, its environment)."""
    where = cwd or str(sandbox.cwd)
    try:
        proc = subprocess.run(
            ["bash", "-c", command], cwd=where, env=sandbox.env, capture_output=True,
            text=True, errors="replace", timeout=SHELL_TIMEOUT,  # a read may print binary
        )
    except subprocess.TimeoutExpired as exc:
        return CallOutcome(124, f"timed out after {exc.timeout}s")
    return CallOutcome(proc.returncode, (proc.stdout + proc.stderr)[-2000:])


class System:
    """Base class of a benchmark system; the plain terminal/files system as is."""

    name: ClassVar[str] = "files"
    schemes: ClassVar[tuple[str, ...]] = ("file",)
    # True when everything seeding makes lives in the sandbox (no server state),
    # so a seeded sandbox can be copied for the next protector instead of re-seeded.
    files_only: ClassVar[bool] = True

    def unavailable(self, scenario: Scenario) -> str | None:
        """Why ``scenario`` cannot run here (a missing connector or server), else ``None``."""
        for scheme in (*self.schemes, *scenario.requires):
            try:
                get_connector(scheme)
            except NoSuchConnectorError as exc:
                return f"connector missing: {scheme} ({exc.hint or 'not installed'})"
        return None

    def start(self, workdir: Path) -> None:
        """Start or reuse the system's server (once per benchmark run)."""

    def stop(self) -> None:
        """Stop what :meth:`start` started."""

    def seed(self, scenario: Scenario, sandbox: Sandbox) -> None:
        """Build the scenario's state: files, wheels, then the system's own, then ``run``."""
        self.prepare(scenario.setup, sandbox)
        setup = sandbox.fill(scenario.setup)
        entries = make_entries(setup.get("files", []))
        if setup.get("wheels"):
            build_wheels(setup["wheels"], sandbox.root / "wheels")
            sandbox.variables["wheels"] = str(sandbox.root / "wheels")
            sandbox.env["PIP_FIND_LINKS"] = str(sandbox.root / "wheels")
        self.seed_system(setup, sandbox)
        script = setup.get("run")
        if script:
            outcome = run_shell(script, sandbox, str(sandbox.home))
            if outcome.exit_code != 0:
                raise UsageError(
                    f"scenario {scenario.id}: setup script failed "
                    f"(exit {outcome.exit_code}): {outcome.output.strip()[-600:]}"
                )
        apply_times(entries)

    def prepare(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """Set the system's variables (names, URIs, environment) before anything is filled in."""

    def seed_system(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """Seed the system's own state (databases, mailboxes, objects)."""

    def settle(self, sandbox: Sandbox) -> None:
        """Wait until the system's own controllers are done reacting (after seed, call, restore)."""

    def teardown(self, sandbox: Sandbox) -> None:
        """Remove what seeding put on a shared server (a database, a namespace, a user)."""

    def yield_to_harness(self, sandbox: Sandbox) -> None:
        """Let go of what a real harness's own tools open themselves (a browser profile),
        before the harness runs and after each in-process look while it runs."""

    def run_mcp(
        self, server: str, tool: str, arguments: dict[str, Any], sandbox: Sandbox
    ) -> CallOutcome:
        """Perform an MCP call the way the MCP server would; systems override it."""
        raise UsageError(f"system {self.name!r} has no executor for MCP tool {server}/{tool}")

    def mcp_servers(self, sandbox: Sandbox) -> dict[str, dict[str, Any]]:
        """MCP servers this system stands behind, for the backup layer's configuration."""
        return {}

    def layer_settings(self, sandbox: Sandbox) -> dict[str, Any]:
        """Backup-layer settings a user of this system would have (``mcp``, ``sites``, …)."""
        return {"mcp": self.mcp_servers(sandbox)}


# ------------------------------------------------------------------ registry
BUILTIN_SYSTEMS: dict[str, BuiltIn] = {
    "files": BuiltIn("preimage.bench.systems.base:System"),
    "sqlite": BuiltIn("preimage.bench.systems.sqlite:SqliteSystem"),
    "postgres": BuiltIn("preimage.bench.systems.postgres:PostgresSystem", "postgres", "psycopg"),
    "imap": BuiltIn("preimage.bench.systems.imap:ImapSystem", "email", "imapclient"),
    "kubernetes": BuiltIn("preimage.bench.systems.kubernetes:KubernetesSystem", "kubernetes",
                          "kubernetes"),
    "browser": BuiltIn("preimage.bench.systems.web:BrowserStorageSystem", "browser", "playwright"),
    "isso": BuiltIn("preimage.bench.systems.web:IssoSystem", "webapps", "isso"),
    "trac": BuiltIn("preimage.bench.systems.web:TracSystem", "webapps", "trac"),
    "copyparty": BuiltIn("preimage.bench.systems.files_app:CopypartySystem", "browser",
                         "playwright"),
}


def _no_system(name: str, known: list[str], hint: str | None) -> UsageError:
    return UsageError(f"unknown benchmark system {name!r}" + (f": {hint}" if hint else "")
                      + f"; known: {', '.join(known)}")


#: The benchmark's systems, by name (entry-point group ``preimage.bench_systems``); a new
#: instance per run, since a system starts and stops its server.
systems: PluginLoader[System] = PluginLoader(
    "benchmark system", "preimage.bench_systems", BUILTIN_SYSTEMS, miss=_no_system, cache=False
)


def get_system(name: str) -> System:
    """The system plug-in called ``name`` (a new instance)."""
    return systems.load(name)


def fixtures_dir() -> Path | None:
    """The repository's ``fixtures/`` folder (server launchers), if this is a checkout.

    ``$PREIMAGE_FIXTURES`` wins; otherwise the folder next to the sources of
    an editable install.
    """
    env = os.environ.get("PREIMAGE_FIXTURES")
    if env:
        return Path(env)
    import preimage

    candidate = Path(preimage.__file__).resolve().parents[2] / "fixtures"
    return candidate if candidate.is_dir() else None


def load_fixture(relative: str) -> ModuleType:
    """Import a launcher from ``fixtures/`` by path (they are stdlib-only scripts).

    Raises :class:`UsageError` when there is no checkout to load it from.
    """
    base = fixtures_dir()
    path = base / relative if base else None
    if path is None or not path.is_file():
        raise UsageError(
            f"server launcher fixtures/{relative} not found — run from a source checkout "
            "or set PREIMAGE_FIXTURES to its fixtures/ folder"
        )
    name = "preimage_bench_fixture_" + relative.replace("/", "_").removesuffix(".py")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
