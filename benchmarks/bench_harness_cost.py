"""Harness cost benchmark: what preimage adds to each tool call, measured inside the real
agent harnesses.

Run: python benchmarks/bench_harness_cost.py [--runs 3] [--calls 4] [--harness NAME …]
     [--in-process]

Each pinned harness binary (fixtures/harnesses.py: Claude Code, Codex, Gemini CLI,
OpenCode, Qwen Code, Kilo Code CLI) is driven by the scripted model server on loopback.  One run's script makes
``--calls`` read-only calls (``ls -la``) and as many protected ones (``echo … > f``,
which preimage captures before it runs), alternating.  The model server notes when it
sent each tool call and when the harness's next request, carrying the call's result,
arrived: that gap is the harness running the tool *and* every hook around it.  Each
harness runs without preimage and with it (``install --user``; its hooks answered by the
decision service, warmed by one unmeasured run), interleaved run by run so machine load
falls on both alike; ``--in-process`` adds a third arm with the service off (every hook
decides in its own process: the fallback).

Printed per harness and kind of call: median and p95 of the gap in ms without and with
preimage, what preimage added at the median, and the ratio.  For protected calls the
capture's own seconds (the hook log's ``capture_seconds``) are taken out of the "with"
gaps as well ("beyond capture"); a second row also takes out the capture the post-call
hook makes right after the call (``post_capture_seconds``: the state after it, which
``preimage undo`` reverts to; none when the decision service made it after answering,
``answered_first`` in the log) — both are the capture's work, the rest is the hooks'.
Goals: <= 15 ms added at the median for a read-only call, <= 40 ms beyond its capture
for a protected one.  The machine's load is printed with
the numbers; compare the added time and the ratios, not absolute milliseconds, across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fixtures"))

from harnesses import BIN, PINNED, Sandbox, preimage  # noqa: E402
from model_server import Call, ModelServer, Route, Script  # noqa: E402
from services import stop_services, wait_for_service  # noqa: E402

READ_ONLY = "ls -la"
ROUTES: dict[tuple[str, str, int], Route] = {}


def shell(harness: str, command: str) -> Call:
    """The harness's own shell tool call."""
    name, args = {
        "claude-code": ("Bash", {"command": command}),
        "codex": ("exec_command", {"cmd": command}),
        "gemini": ("run_shell_command", {"command": command}),
        "opencode": ("bash", {"command": command, "description": "scripted"}),
        "qwen": ("run_shell_command", {"command": command}),
        "kilo": ("bash", {"command": command, "description": "scripted"}),
    }[harness]
    return Call(name, args)


def script(harness: str, calls: int) -> tuple[Script, list[str]]:
    """Alternating read-only and protected calls; the kind of each."""
    out, kinds = [], []
    for i in range(calls):
        out.append(shell(harness, READ_ONLY))
        kinds.append("read-only")
        out.append(shell(harness, f"echo changed > notes{i}.txt"))
        kinds.append("protected")
    return Script(out), kinds


BASELINE: dict[str, str] = {}   # "bin": --baseline-bin, another installation's console scripts


def one_run(model: ModelServer, harness: str, root: Path, calls: int, arm: str,
            runtime: Path) -> tuple[list[tuple[str, float]], list[tuple[float, float]]]:
    """One harness run: ``(kind, gap seconds)`` per call, and the seconds of the captures
    before and after each protected call (from the hook log; empty without preimage)."""
    scr, kinds = script(harness, calls)
    # One route per harness, arm and script (each run starts it afresh).
    key = (harness, arm, calls)
    route = ROUTES.get(key) or ROUTES.setdefault(key, model.route(scr))
    route.requests.clear()
    route.tool_results.clear()
    # One store, config and log per harness and arm, as a user has; the hooks of every run
    # reach the user's one decision service (warmed by the first run).
    store = root.parent / f"{harness}-{arm}-preimage"
    extra = {"PREIMAGE_HOME": str(store / "store"), "PREIMAGE_CONFIG_DIR": str(store / "config"),
             "PREIMAGE_LOG": str(store / "hook.log"), "PREIMAGE_RUNTIME_DIR": str(runtime)}
    if arm == "in-process":
        extra["PREIMAGE_SERVICE"] = "off"
    bin_dir = BASELINE.get("bin", BIN) if arm == "baseline" else BIN
    box = Sandbox(harness, root, route.url, path_dirs=[bin_dir], extra_env=extra,
                  home_dir=root.parent / f"{harness}-{'floor' if arm == 'floor' else ''}home",
                  permission_mode="bypassPermissions" if harness == "claude-code" else None)
    for i in range(calls):
        (box.project / f"notes{i}.txt").write_text("hello\n")
    env = box.env()
    if arm == "floor":
        _floor_hooks(harness, box)
    elif arm == "baseline":
        subprocess.run([os.path.join(bin_dir, "preimage"), "install", harness, "--user"],
                       env=env, cwd=box.project, check=True, capture_output=True, timeout=600)
    elif arm != "off":
        preimage("install", harness, "--user", env=env, cwd=box.project)
    else:
        preimage("uninstall", harness, "--user", env=env, cwd=box.project, check=False)
    log = Path(extra["PREIMAGE_LOG"])
    seen = len(log.read_text().splitlines()) if log.exists() else 0
    run = box.run(label=f"bench-{arm}")
    if run.returncode != 0:
        raise SystemExit(f"{harness} ({arm}) failed: {run.stderr[-2000:]}")
    gaps = route.call_gaps()
    if len(gaps) != len(kinds):
        raise SystemExit(f"{harness} ({arm}): {len(gaps)} of {len(kinds)} calls timed")
    captures: list[tuple[float, float]] = []
    if arm != "off" and log.exists():
        events = [json.loads(line) for line in log.read_text().splitlines()[seen:]]
        before = [float(e.get("capture_seconds") or 0.0) for e in events
                  if e.get("event") == "decision" and e.get("action") != "pass"]
        # a capture made once the post-call hook had answered (`answered_first`) is not
        # part of the gap: nothing is taken out for it
        after = [0.0 if e.get("answered_first") else float(e.get("post_capture_seconds") or 0.0)
                 for e in events if e.get("event") == "completed" and e.get("backup_id")]
        after += [0.0] * (len(before) - len(after))
        captures = list(zip(before, after, strict=False))
    return list(zip(kinds, gaps, strict=True)), captures


#: The floor of a harness that takes plugins: the same two events, each answered at once
#: by a hook that does nothing — what the harness's own plugin machinery costs a call.
FLOOR_PLUGIN = """export const Floor = async () => ({
  "tool.execute.before": async (input, output) => {},
  "tool.execute.after": async (input, output) => {},
})
"""


def _floor_hooks(harness: str, box: Sandbox) -> None:
    """The same hook events and matchers as preimage's, each running a command that reads
    its payload and answers nothing (``cat``): what any command hook costs in the harness;
    for OpenCode and Kilo Code, a plugin in the user's plugin folder whose hooks return at
    once."""
    from preimage.layer.harnesses import get_harness
    from preimage.layer.harnesses.install import plan_json_install

    adapter = get_harness(harness)
    if harness in ("opencode", "kilo"):
        with mock.patch.dict(os.environ, box.env()):
            path = adapter.settings_path("user", box.project)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(FLOOR_PLUGIN)
        return
    path = box.home / {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json",
                       "gemini": ".gemini/settings.json", "qwen": ".qwen/settings.json"}[harness]
    # The install record goes to the sandbox's config folder, never the user's own.
    with mock.patch.dict(os.environ, PREIMAGE_CONFIG_DIR=box.env()["PREIMAGE_CONFIG_DIR"]):
        plan_json_install(adapter, path, "cat > /dev/null").apply()


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="measured runs per arm")
    parser.add_argument("--calls", type=int, default=4, help="read-only (and protected) calls per run")
    parser.add_argument("--harness", action="append", choices=sorted(PINNED), default=None)
    parser.add_argument("--in-process", action="store_true",
                        help="also measure hooks decided in-process (the service off)")
    parser.add_argument("--floor", action="store_true",
                        help="also measure hooks that run `cat` (what any command hook costs)")
    parser.add_argument("--json", type=Path, default=None, help="also write the samples here")
    parser.add_argument("--baseline-bin", default=None,
                        help="also measure another installation of preimage (the folder holding "
                             "its `preimage` script, e.g. an older version's virtualenv)")
    opts = parser.parse_args()
    harnesses = opts.harness or list(PINNED)
    if opts.baseline_bin:
        BASELINE["bin"] = opts.baseline_bin
    arms = ["off", "service", *(["baseline"] if opts.baseline_bin else []),
            *(["in-process"] if opts.in_process else []), *(["floor"] if opts.floor else [])]
    base = Path(tempfile.mkdtemp(prefix="bench-harness-"))
    runtime = base / "rt"
    runtime.mkdir(mode=0o700)
    samples: dict[str, dict[str, dict[str, list[float]]]] = {}
    load = os.getloadavg()
    started = time.monotonic()
    try:
        with ModelServer() as model:
            for harness in harnesses:
                # warm: the first hook starts the decision service (and a harness sets up
                # its config folder on its first start there); not measured
                for warm in ("service", *(["baseline"] if opts.baseline_bin else []),
                             *(["floor"] if opts.floor else [])):
                    one_run(model, harness, Path(tempfile.mkdtemp(dir=base)), opts.calls, warm,
                            runtime)
                wait_for_service(runtime)
                got = samples.setdefault(harness, {})
                for _ in range(opts.runs):
                    for arm in arms:
                        pairs, captures = one_run(model, harness,
                                                  Path(tempfile.mkdtemp(dir=base)),
                                                  opts.calls, arm, runtime)
                        caps = iter(captures)
                        for kind, gap in pairs:
                            got.setdefault(f"{kind}/{arm}", []).append(gap)
                            if kind == "protected" and arm != "off":
                                pre, post = next(caps, (0.0, 0.0))
                                got.setdefault(f"beyond/{arm}", []).append(gap - pre)
                                if arm != "floor":   # the cat hooks capture nothing
                                    got.setdefault(f"beyond2/{arm}", []).append(
                                        gap - pre - post)
    finally:
        stop_services(runtime)
        shutil.rmtree(base, ignore_errors=True)
    print(f"harness cost per tool call — {opts.runs} runs x {opts.calls} calls of each kind "
          f"per arm; load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at start, "
          f"{time.monotonic() - started:.0f} s")
    print("gap = model's tool call sent -> harness's next request (tool + hooks), ms")
    header = (f"{'harness':12} {'call':11} {'arm':10} {'n':>3}  {'p50 off':>8} {'p95 off':>8}"
              f"  {'p50 on':>8} {'p95 on':>8}  {'added p50':>9} {'ratio':>6}")
    print(header)
    for harness, got in samples.items():
        # label, the gaps without preimage, the gaps with it (an arm's name goes in {})
        for label, without, with_ in (("read-only", "read-only", "read-only/{}"),
                                      ("protected*", "protected", "beyond/{}"),
                                      ("protected**", "protected", "beyond2/{}")):
            off = got.get(f"{without}/off", [])
            for arm in arms[1:]:
                on = got.get(with_.format(arm), [])
                if not off or not on:
                    continue
                m_off, m_on = statistics.median(off), statistics.median(on)
                print(f"{harness:12} {label:11} {arm:10} {len(on):3d}  {m_off * 1e3:8.0f} "
                      f"{p95(off) * 1e3:8.0f}  {m_on * 1e3:8.0f} {p95(on) * 1e3:8.0f}  "
                      f"{(m_on - m_off) * 1e3:+9.0f} {m_on / m_off:6.2f}")
    print("* protected: the 'on' gaps have the capture's own seconds taken out (beyond capture)")
    print("** and the capture right after the call too (the state `preimage undo` reverts to)")
    print("goals: read-only <= +15 ms at p50; protected <= +40 ms beyond capture at p50")
    if opts.json:
        opts.json.write_text(json.dumps(samples))


if __name__ == "__main__":
    main()
