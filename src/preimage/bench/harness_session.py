"""Running a regret task through a real harness: the pinned binary, a scripted model.

The path an agent really takes: the pinned Claude Code or Codex binary
(``fixtures/harnesses.py``) runs the task's request against a scripted model on
loopback (``fixtures/model_server.py``), which answers each turn with the task's next
step as the harness's own tool call (:mod:`preimage.bench.harness_calls`): the shell
tool for shell lines, the published MCP servers (configured in the harness's own MCP
configuration) for the rest.  The harness runs every tool itself, and the protector runs
as the hook it installed (:mod:`preimage.bench.harness_protectors`).

Per (task, protector), in a fresh sandbox:

1. the system seeds the task's state; the protector installs itself into the project;
2. the harness runs; between two tool calls the model server waits while the runner
   reads what the protector holds (and, before the first regret step, captures the
   ground truth), so each call's backups are known exactly;
3. after the harness is done, coverage, damage, restore and score are measured as the
   in-process session measures them (:func:`preimage.bench.session.finish_session`),
   and for a task with later unrelated work what the way back lost of it
   (:mod:`preimage.bench.harness_collateral`).

The time from each of the model's tool calls to the harness's next request — the tool's
run plus every hook around it — is kept per call (``call_gaps``): the time a protector
adds per call is its gap beside the unprotected run's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from preimage.bench.harness_calls import (
    HarnessCall,
    NoHarnessToolError,
    harness_calls,
    mcp_definitions,
)
from preimage.bench.harness_collateral import CollateralWatch
from preimage.bench.harness_mcp_ready import server_marker, wait_until_idle
from preimage.bench.harness_protectors import HookedProtector
from preimage.bench.protector import NotCoveredError, Protection, RunContext
from preimage.bench.results import RunResult
from preimage.bench.runner import SeedCache, capture_truth, guarded_run, seeded_sandbox
from preimage.bench.scenario import CallSpec, Scenario
from preimage.bench.session import (
    SessionAccount,
    finish_session,
    record_moment,
    session_moments,
)
from preimage.bench.systems.base import Sandbox, System, fixtures_dir
from preimage.interface.errors import UsageError
from preimage.store.store import Store

HARNESS_TIMEOUT = 900.0
# What a harness's tool result says when the harness itself refused to run the call.
_REFUSED = ("rejected: ", "not permitted", "Permission to use", "requires approval",
            "No such tool available")
TURN_TIMEOUT = 600.0
MCP_STARTUP_TIMEOUT = 120.0


def fixture_modules() -> dict[str, ModuleType]:
    """``model_server``, ``harnesses`` and ``mcp_packages`` from the checkout's fixtures/
    (stdlib-only scripts that import one another by name)."""
    import importlib

    base = fixtures_dir()
    if base is None or not (base / "harnesses.py").is_file():
        raise UsageError("the real-harness path needs the fixtures/ folder of a source "
                         "checkout (or PREIMAGE_FIXTURES): its harness and MCP server pins")
    if str(base) not in sys.path:
        sys.path.insert(0, str(base))
    return {name: importlib.import_module(name)
            for name in ("model_server", "harnesses", "mcp_packages")}


@dataclass
class HarnessRig:
    """What every run through one harness shares: the pinned binary and the model server."""

    harness: str
    fixtures: dict[str, ModuleType]
    model: Any

    @classmethod
    @contextmanager
    def opened(cls, harness: str) -> Iterator[HarnessRig]:
        """The rig of ``harness``, its model server listening on loopback until exit."""
        fixtures = fixture_modules()
        try:
            fixtures["harnesses"].binary(harness)
        except FileNotFoundError as exc:
            raise UsageError(str(exc)) from exc
        with fixtures["model_server"].ModelServer() as model:
            yield cls(harness, fixtures, model)

    def untranslatable(self, scenario: Scenario) -> str | None:
        """Why a step of ``scenario`` cannot go through this harness, else ``None``."""
        searched: set[str] = set()
        steps = [*scenario.before, scenario.call, *scenario.then]
        try:
            for step in steps:
                harness_calls(self.harness, CallSpec(tool=step.tool, input=step.input),
                              searched)
        except NoHarnessToolError as exc:
            return f"no harness path: {exc}"
        return None

    # ------------------------------------------------------------ one run's harness
    def environment(self, sandbox: Sandbox, folder: Path, model_url: str) -> dict[str, str]:
        """What the harness (and every hook and tool it runs) gets besides the sandbox's
        environment: its own configuration folder, preimage's, the model's address."""
        folder.mkdir(parents=True, exist_ok=True)
        env = {"PREIMAGE_CONFIG_DIR": str(folder / "preimage-config"),
               "PREIMAGE_LOG": str(folder / "preimage-hook.log"),
               "NO_COLOR": "1", "CI": "1"}
        if "KUBECONFIG" not in sandbox.env and os.environ.get("KUBECONFIG"):
            env["KUBECONFIG"] = os.environ["KUBECONFIG"]
        if self.harness == "claude-code":
            # IS_SANDBOX: Claude Code refuses bypassPermissions as root without it.
            env |= {"ANTHROPIC_BASE_URL": model_url, "ANTHROPIC_API_KEY": "scripted",
                    "CLAUDE_CONFIG_DIR": str(folder / "claude"),
                    "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                    "DISABLE_AUTOUPDATER": "1", "IS_SANDBOX": "1",
                    # Wait for the MCP servers before the first turn, as Codex's `required`
                    # does: by default Claude Code starts them in the background, and a
                    # slow one (postgres-mcp on a loaded machine) is not there yet when the
                    # model's first call names its tool.
                    "MCP_CONNECTION_NONBLOCKING": "0",
                    "MCP_TIMEOUT": str(int(MCP_STARTUP_TIMEOUT * 1000))}
        else:
            env |= {"CODEX_HOME": str(folder / "codex"), "SCRIPTED_KEY": "scripted"}
        return env

    def configure(self, sandbox: Sandbox, env: dict[str, str], model_url: str,
                  servers: dict[str, dict[str, Any]]) -> None:
        """The harness's settings and MCP servers, in its own documented files."""
        if self.harness == "claude-code":
            if servers:
                (sandbox.cwd / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
            return
        home = Path(env["CODEX_HOME"])
        home.mkdir(parents=True, exist_ok=True)
        lines = [
            'model = "gpt-5.5"', 'model_provider = "scripted"', 'approval_policy = "never"',
            'sandbox_mode = "danger-full-access"', "",
            "[model_providers.scripted]", 'name = "scripted"',
            f"base_url = {json.dumps(model_url + '/v1')}", 'wire_api = "responses"',
            'env_key = "SCRIPTED_KEY"', "",
            # Codex reads a project's .codex/ (its hooks) only once the project is trusted.
            f"[projects.{json.dumps(str(sandbox.cwd))}]", 'trust_level = "trusted"',
        ]
        for name, spec in servers.items():
            env_table = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}"
                                  for k, v in spec["env"].items())
            # required: Codex waits for the server before the first turn — up to its
            # startup timeout, 30 s by default, which postgres-mcp (a Python program)
            # overran on a loaded machine; the same 120 s Claude Code gets (MCP_TIMEOUT).
            lines += ["", f"[mcp_servers.{name}]", f"command = {json.dumps(spec['command'])}",
                      f"args = {json.dumps(spec['args'])}", f"env = {{ {env_table} }}",
                      "required = true", f"startup_timeout_sec = {MCP_STARTUP_TIMEOUT:.0f}"]
        (home / "config.toml").write_text("\n".join(lines) + "\n")

    def argv(self, prompt: str, servers: list[str]) -> list[str]:
        """The harness's non-interactive run of one request."""
        exe = str(self.fixtures["harnesses"].binary(self.harness))
        if self.harness == "claude-code":
            allowed = ["Bash", *(f"mcp__{n}" for n in servers)]
            return [exe, "-p", prompt, "--output-format", "json", "--allowedTools",
                    ",".join(allowed), "--permission-mode", "bypassPermissions"]
        return [exe, "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", prompt]


@dataclass
class _Plan:
    """The model's script: each harness call, and where each task step starts in it."""

    calls: list[HarnessCall] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)   # per step (before…, then moments)


def _plan(harness: str, steps: list[CallSpec]) -> _Plan:
    plan, searched = _Plan(), set[str]()
    for step in steps:
        plan.starts.append(len(plan.calls))
        plan.calls += harness_calls(harness, step, searched)
    return plan


def run_harness_session(
    scenario: Scenario, system: System, protector: HookedProtector, root: Path,
    rig: HarnessRig, *, keep: bool = False, cache: SeedCache | None = None,
) -> RunResult:
    """One task under one protector through the rig's harness (see the module)."""
    with guarded_run(scenario, system, protector, root, keep=keep) as run, ExitStack() as stack:
        result = run.result
        result.harness = rig.harness
        sandbox = seeded_sandbox(run, scenario, system, root, cache)
        truth_store = stack.enter_context(Store(root / "truth"))
        store = stack.enter_context(Store(root / "store"))
        scratch = root / "scratch"
        scratch.mkdir()
        ctx = RunContext(scenario, system, sandbox,
                         CallSpec.model_validate(sandbox.fill(scenario.call.model_dump())),
                         [str(u) for u in sandbox.fill(scenario.expected_lost)], {}, store,
                         scratch)
        result.expected = list(ctx.expected)
        moments = session_moments(ctx)
        before = [CallSpec.model_validate(sandbox.fill(b.model_dump())) for b in scenario.before]
        plan = _plan(rig.harness, [*before, *(m.call for m in moments)])
        route = rig.model.route(rig.fixtures["model_server"].Script([]))
        sandbox.env["PREIMAGE_HOME"] = str(store.home)
        sandbox.env.update(rig.environment(sandbox, root / "harness", route.url))
        names = sorted({c.mcp[0] for c in (*before, *(m.call for m in moments))
                        if not c.is_shell})
        executable = rig.fixtures["mcp_packages"].executable
        definitions = mcp_definitions(set(names), sandbox, executable)
        rig.configure(sandbox, sandbox.env, route.url, definitions)
        _site_settings(system, sandbox)
        try:
            protector.install(ctx, rig.harness, sandbox.env)
        except NotCoveredError as exc:
            result.status, result.reason = "not covered", str(exc)
            return result
        first_regret = plan.starts[len(before)]
        every = list(dict.fromkeys(u for m in moments if m.regret for u in m.lost))
        watch = CollateralWatch.for_task(system.name, sandbox, moments, truth_store.blobs)
        later = plan.starts[len(before) + watch.step] if watch is not None else None

        def at_turn(k: int) -> Any:
            """Between two tool calls: the truth and S0 before the first regret step, S1
            when the later work begins, and the protector's mark."""
            if k == first_regret:
                ctx.truth.update(capture_truth(every, truth_store))
            if watch is not None and k in (first_regret, later):
                watch.take("s0" if k == first_regret else "s1")
            system.yield_to_harness(sandbox)
            return protector.mark(ctx)

        system.yield_to_harness(sandbox)

        marks = _drive(rig, route, plan, sandbox, scenario.task or scenario.title,
                       {n: d["command"] for n, d in definitions.items()},
                       protector.launcher(sandbox.env), ctx, protector, on_turn=at_turn,
                       result=result)
        account = SessionAccount(moments, [], [], [])
        last = max(marks) if marks else 0
        ends = [*plan.starts[1:], len(plan.calls)]
        for k, moment in enumerate(moments):
            if not moment.regret:
                continue
            start, end = plan.starts[len(before) + k], ends[len(before) + k]
            step_ctx = dataclasses.replace(ctx, call=moment.call, expected=moment.lost)
            stop = min(end, last)
            protection = (protector.between(step_ctx, marks[start], marks[stop])
                          if start in marks and stop in marks else Protection())
            record_moment(result, protection)
            account.protected.append((step_ctx, protection))
            for uri in moment.lost:
                ok = protector.covers(step_ctx, protection, uri)
                account.covered.append(ok)
                if not ok:
                    account.missing.append(f"step {k + 1}: {uri}")
            result.moved_bytes += protector.moved_bytes(step_ctx, protection)
        result.calls = len(plan.calls)
        system.settle(sandbox)
        if watch is not None:
            watch.take("s2")
        finish_session(result, ctx, protector, truth_store, account)
        if watch is not None:
            watch.take("s3")
            watch.record(result, {k for _, p in account.protected for k in p.reported},
                         protector.own_paths(ctx))
    return run.result


def _site_settings(system: System, sandbox: Sandbox) -> None:
    """The web apps' origins and their site adapters in preimage's settings, as a user of a
    browser agent writes them (``sites:`` in ``config.yaml``); the browser's profile the
    hook reads from the Playwright MCP server's own ``--user-data-dir``."""
    sites = system.layer_settings(sandbox).get("sites")
    if sites:
        folder = Path(sandbox.env["PREIMAGE_CONFIG_DIR"])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.yaml").write_text(json.dumps({"sites": sites}))


def _server_of(call: HarnessCall) -> str | None:
    """The MCP server a harness call goes to (Claude Code: by name, Codex: by namespace)."""
    name = call.namespace or call.tool
    return name.split("__")[1] if name.startswith("mcp__") else None


def _drive(rig: HarnessRig, route: Any, plan: _Plan, sandbox: Sandbox, prompt: str,
           servers: dict[str, str], launcher: list[str], ctx: RunContext,
           protector: HookedProtector, *, on_turn: Any, result: RunResult) -> dict[int, Any]:
    """Run the harness once with the plan as the model's script; ``on_turn(k)`` runs on
    this thread while the model server holds turn ``k``'s answer.  The marks by turn."""
    ms = rig.fixtures["model_server"]
    starting = {name: server_marker(command) for name, command in servers.items()}
    asked: queue.Queue[tuple[int, threading.Event]] = queue.Queue()
    marks: dict[int, Any] = {}
    failures: list[BaseException] = []

    def hold(k: int) -> None:
        if k in marks or failures:
            return
        done = threading.Event()
        asked.put((k, done))
        done.wait(TURN_TIMEOUT)

    def serve(k: int, done: threading.Event) -> None:
        try:
            server = _server_of(plan.calls[k]) if k < len(plan.calls) else None
            # a model is slower than this script: the server is up by its first call
            if server in starting and not wait_until_idle(proc.pid, starting.pop(server)):
                result.notes.append(f"MCP server {server} did not go idle in time")
            if k not in marks:
                marks[k] = on_turn(k)
                wanted = plan.calls[k].resolve if k < len(plan.calls) else None
                if wanted is not None:   # read from the last answer, as a model reads it
                    seen = route.tool_results
                    route.script.calls[k].arguments = wanted(seen[k - 1] if seen else "")
        except BaseException as exc:  # re-raised below, once the harness is stopped
            failures.append(exc)
        finally:
            done.set()

    route.script = ms.Script([ms.Call(c.tool, dict(c.arguments), kind=c.kind,
                                      namespace=c.namespace) for c in plan.calls],
                             on_turn=hold)
    began = time.perf_counter()
    argv = rig.argv(prompt, sorted(servers))
    proc = subprocess.Popen([*launcher, *argv], cwd=sandbox.cwd, env=sandbox.env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace")
    out: dict[str, str] = {}
    reader = threading.Thread(target=lambda: out.update(
        zip(("stdout", "stderr"), proc.communicate(), strict=True)), daemon=True)
    reader.start()
    while reader.is_alive() or not asked.empty():
        if time.perf_counter() - began > HARNESS_TIMEOUT:
            proc.kill()
            raise UsageError(f"{rig.harness} did not finish within {HARNESS_TIMEOUT:.0f}s")
        try:
            k, done = asked.get(timeout=0.1)
        except queue.Empty:
            continue
        serve(k, done)
    reader.join()
    if failures:
        raise failures[0]
    protector.finished(ctx, argv, out.get("stdout", ""))
    result.call_gaps = [round(g, 4) for g in route.call_gaps()]
    # What the model was answered, kept with the run (--workdir) to read afterwards.
    (Path(sandbox.env["PREIMAGE_CONFIG_DIR"]).parent / "tool-results.json").write_text(
        json.dumps(route.tool_results, indent=1))
    ran = len(route.tool_results)
    if proc.returncode != 0:
        said = (out.get("stderr") or out.get("stdout") or "")[-300:]
        if ran < len(plan.calls):   # the session never happened as planned: not a measurement
            raise UsageError(f"{rig.harness} exited {proc.returncode} after {ran} of the "
                             f"{len(plan.calls)} tool calls: {said}")
        result.notes.append(f"{rig.harness} exited {proc.returncode}: {said}")
    for i, text in enumerate(route.tool_results):
        if any(sign in text for sign in _REFUSED):  # the step never ran: the damage shows it
            result.notes.append(f"{rig.harness} refused call {i + 1}: {text[:240]}")
    if ran < len(plan.calls):
        result.notes.append(f"{rig.harness} ran {ran} of the {len(plan.calls)} tool calls")
    return marks
