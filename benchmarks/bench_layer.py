"""Backup-layer benchmark: decision latency per tier, capture latency per tier, tokens, routing.

Run: python benchmarks/bench_layer.py [--n 200]

Prints, for tiers 1-3 (and read-only calls for reference):
* decision latency p50/p99 (reading the call and choosing targets, in process);
* capture latency (first capture, then a repeated capture of unchanged state);
* model tokens spent (0: no model is involved in tiers 1-3);
* the wall time of one `preimage hook claude-code` process (start-up included);
* routing precision/recall over the test corpora.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fixtures"))

from layer_world import IMAP, PG, build_world  # noqa: E402

from preimage import Store  # noqa: E402
from preimage.layer import BackupLayer, LayerConfig, McpServer, ToolCall  # noqa: E402

CALLS = {
    "read-only": ["ls -la | grep x", "git status", "kubectl get pods -n shop",
                  "psql shop -c 'SELECT count(*) FROM orders'", "cat notes.txt | wc -l"],
    "rewrite": ["rm -rf ~/Documents ~/Downloads", "chmod -R 777 tree", "git clean -fdx",
                "sed -i s/a/b/ notes.txt", "echo '{}' > config.yaml"],
    "pair": ['psql shop -c "DELETE FROM orders WHERE id > 5"', "kubectl delete namespace shop",
             "pip install -U traitlets", "sqlite3 app.db 'DELETE FROM t'",
             "helm uninstall shop -n shop"],
    "workspace": ["make build", "npm install", "cargo build", "pytest -q", "go mod tidy"],
}
MCP_CALLS = [("postgres", "execute_sql", {"sql": "DROP TABLE executives, companies"}),
             ("email", "move_emails", {"folder": "INBOX", "uids": [1, 2], "destination": "Trash"})]
CAPTURE_CALLS = {
    "rewrite": "rm -rf ~/Documents ~/Downloads",
    "pair": "sqlite3 app.db 'DELETE FROM t WHERE id = 1'",
    "workspace": "make build",
}


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200, help="decisions per tier")
    ap.add_argument("--hook-runs", type=int, default=5)
    opts = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-layer-"))
    world = build_world(tmp / "w")
    store = Store(tmp / "store")
    cfg = LayerConfig(workspace=str(world.proj), mcp={
        "postgres": McpServer(kind="postgres", target=PG),
        "email": McpServer(kind="email", target=IMAP + "/")})
    layer = BackupLayer(store=store, config=cfg, env=world.env)
    print(f"decision latency over {opts.n} calls per tier (in process, no capture):")
    print(f"{'tier':10} {'p50 ms':>9} {'p99 ms':>9} {'tokens':>7}")
    for tier, commands in CALLS.items():
        times, tokens = [], 0
        for i in range(opts.n):
            call = ToolCall.shell(commands[i % len(commands)], cwd=str(world.proj), env=world.env)
            plan = layer.plan(call)
            times.append(plan.seconds)
            tokens += plan.model_tokens
            got = plan.tier.value if plan.tier else "read-only"
            assert got == tier or tier == "pair", (commands[i % len(commands)], got)
        print(f"{tier:10} {pct(times, .5) * 1e3:9.2f} {pct(times, .99) * 1e3:9.2f} {tokens:7d}")
    times = []
    for i in range(opts.n):
        server, tool, args = MCP_CALLS[i % len(MCP_CALLS)]
        times.append(layer.plan(ToolCall.mcp(server, tool, args, cwd=str(world.proj))).seconds)
    print(f"{'pair (MCP)':10} {pct(times, .5) * 1e3:9.2f} {pct(times, .99) * 1e3:9.2f} {0:7d}")

    print("\ncapture latency per tier (before() with the file connector; repeated = unchanged "
          "state, stat cache):")
    print(f"{'tier':10} {'first ms':>9} {'repeat ms':>10} {'stored KiB':>11}  targets")
    for tier, command in CAPTURE_CALLS.items():
        call = ToolCall.shell(command, cwd=str(world.proj), env=world.env)
        first = layer.before(call)
        repeats = [layer.before(call).capture_seconds for _ in range(5)]
        row = store.catalog.get(first.backup_id or "last")
        print(f"{tier:10} {first.capture_seconds * 1e3:9.1f} {statistics.median(repeats) * 1e3:10.1f}"
              f" {row.stored_bytes / 1024:11.1f}  {', '.join(first.targets)}")

    print(f"\nhook process wall time ({opts.hook_runs} runs, python start-up and imports included):")
    env = {**os.environ, **world.env, "PREIMAGE_HOME": str(tmp / "store"),
           "PREIMAGE_CONFIG_DIR": str(tmp / "config"), "PREIMAGE_LOG": str(tmp / "hook.log")}
    for label, command in (("read-only", "ls -la"), ("rewrite", "chmod -R 777 tree")):
        payload = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                              "tool_input": {"command": command}, "cwd": str(world.proj)})
        walls = []
        for _ in range(opts.hook_runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "preimage", "hook", "claude-code"],
                           input=payload, capture_output=True, text=True, env=env, check=True)
            walls.append(time.perf_counter() - t0)
        print(f"{label:10} p50 {pct(walls, .5) * 1e3:7.0f} ms   max {max(walls) * 1e3:7.0f} ms")

    corpus = ROOT / "tests" / "layer" / "corpus"
    ro = [ln for ln in (corpus / "read_only.txt").read_text().splitlines()
          if ln.strip() and not ln.startswith("#")]
    rows = [ln.split("\t") for ln in (corpus / "state_changing.tsv").read_text().splitlines()
            if ln.strip() and not ln.startswith("#")]

    def schemes(cmd: str) -> set[str]:
        plan = layer.plan(ToolCall.shell(cmd, cwd=str(world.proj), env=world.env))
        return {t.scheme for t in plan.wanted}

    false_alarms = sum(1 for c in ro if schemes(c))
    hits = wrong = 0
    for cmd, want in rows:
        got = schemes(cmd)
        hits += got == set(want.split(","))
        wrong += bool(got) and got != set(want.split(","))
    captures = hits + wrong + false_alarms
    print(f"\nrouting: {len(ro)} read-only commands -> {false_alarms} captures; "
          f"{len(rows)} state-changing -> precision {hits / captures:.3f}, "
          f"recall {hits / len(rows):.3f}")
    store.close()


if __name__ == "__main__":
    main()
