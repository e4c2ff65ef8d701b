"""Hook benchmark: what one agent tool call pays for preimage, next to what it would pay anyway.

Run: python benchmarks/bench_hook.py [--n 40] [--trash-gb 1.0] [--backupper CMD]

Prints p50/p99 wall time of whole hook *processes* (start-up included), in one
run, interleaved round-robin so machine load falls on every row alike:

* ``true`` and ``python3 -c pass`` — the floor any hook process pays;
* ``preimage hook claude-code`` answered by the decision service, and decided
  in-process (``PREIMAGE_SERVICE=off``: the fallback path), for read-only
  calls and for tier 1-2 calls with the capture's own seconds (read from the
  hook log's ``capture_seconds``) taken out — "capture I/O excluded";
* a 1 MB command, and a call no rule knows that goes to the model tier (a
  scripted OpenAI-compatible model server on loopback, through litellm);
* BackUpper's hook (``agents-backupper``) on the same payloads, when it is
  installed (``--backupper CMD`` or ``backupper`` on PATH), else says so.

Then the O(1) delete: a tree of ``--trash-gb`` GiB on the store's filesystem,
protected by ``preimage trash`` (the rewrite of ``rm -rf``) versus a capture
of the same tree (a copy into the store) and a plain ``rm -rf``.

Goals: p50 <= 50 ms and p99 <= 150 ms for read-only and tier 1-2 decisions;
the trash move <= 50 ms for 1 GiB.  The machine's load is printed with the
numbers; compare ratios, not milliseconds, across runs.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
# The console script, as a harness runs it (no runpy); `python -m preimage` where there is none.
_SCRIPT = Path(PYTHON).parent / "preimage"
PREIMAGE = [str(_SCRIPT)] if _SCRIPT.exists() else [PYTHON, "-m", "preimage"]

READ_ONLY = ["ls -la | grep x", "git status", "cat notes.txt | wc -l",
             "kubectl get pods -n shop", "grep -rn TODO src | head"]
TIER_1_2 = ["rm -rf build", "chmod -R 755 tree", "sed -i s/a/b/ notes.txt",
            "sqlite3 app.db 'DELETE FROM t WHERE id > 5'", "echo '{}' > config.json"]
UNKNOWN = "frobnicate --everything ./data"


def payload(command: str, cwd: Path) -> bytes:
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}, "cwd": str(cwd), "session_id": "bench",
                       "tool_use_id": "t", "permission_mode": "default"}).encode()


# ------------------------------------------------------------------ a scripted model server
class _Model(http.server.BaseHTTPRequestHandler):
    """Answers every chat completion with 'read only', as a model would for a harmless call."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        content = json.dumps({"read_only": True, "targets": [], "reason": "it only reads"})
        body = json.dumps({
            "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def model_server() -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


# ------------------------------------------------------------------ the world the calls see
def build_world(base: Path) -> Path:
    work = base / "project"
    (work / "tree").mkdir(parents=True)
    (work / "build").mkdir()
    (work / "src").mkdir()
    for i in range(20):
        (work / "tree" / f"f{i}.txt").write_text(f"file {i}\n" * 20)
        (work / "build" / f"o{i}.o").write_bytes(os.urandom(256))
    (work / "notes.txt").write_text("a note\n" * 50)
    (work / "config.json").write_text('{"a": 1}\n')
    import sqlite3

    with sqlite3.connect(work / "app.db") as db:
        db.execute("CREATE TABLE t (id integer primary key, v text)")
        db.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"v{i}") for i in range(50)])
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    return work


def environment(base: Path, model_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREIMAGE_SERVICE"}
    env.update(PREIMAGE_HOME=str(base / "store"), PREIMAGE_CONFIG_DIR=str(base / "config"),
               PREIMAGE_LOG=str(base / "log" / "hook.log"), PREIMAGE_RUNTIME_DIR=str(base / "rt"),
               PREIMAGE_CACHE_DIR=str(base / "cache"), PREIMAGE_SERVE_IDLE="600",
               OPENAI_BASE_URL=model_url, OPENAI_API_KEY="bench", LITELLM_LOCAL_MODEL_COST_MAP="True")
    (base / "rt").mkdir(mode=0o700, parents=True)
    return env


# ------------------------------------------------------------------ measuring
def run_once(argv: list[str], env: dict[str, str], stdin: bytes, cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, capture_output=True, env=env, cwd=cwd, timeout=600)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed: {proc.stderr.decode()[-1500:]}")
    return seconds, proc.stdout.decode()


def last_capture_seconds(env: dict[str, str]) -> float:
    """The capture time the hook log recorded for the newest decision (0 when none)."""
    try:
        lines = Path(env["PREIMAGE_LOG"]).read_text().splitlines()
    except OSError:
        return 0.0
    for line in reversed(lines):
        doc = json.loads(line)
        if doc.get("event") == "decision":
            return float(doc.get("capture_seconds") or 0.0)
    return 0.0


class Row:
    def __init__(self, name: str, measure: Callable[[int], float]) -> None:
        self.name, self.measure, self.samples = name, measure, []  # type: ignore[var-annotated]

    def p(self, q: float) -> float:
        s = sorted(self.samples)
        return s[min(len(s) - 1, round(q * (len(s) - 1)))] * 1000


def hook_row(name: str, env: dict[str, str], commands: list[str], cwd: Path,
             exclude_capture: bool = False) -> Row:
    def measure(i: int) -> float:
        seconds, _ = run_once([*PREIMAGE, "hook", "claude-code"], env,
                              payload(commands[i % len(commands)], cwd), cwd)
        return seconds - (last_capture_seconds(env) if exclude_capture else 0.0)

    return Row(name, measure)


def find_backupper(explicit: str | None, work: Path) -> list[str] | None:
    """BackUpper's PreToolUse hook as its installer writes it (``node …/dist/hook.js pre``),
    after ``backupper init`` in the benchmark's project; ``None`` when it is not installed."""
    exe = shutil.which("backupper")
    if exe:
        subprocess.run([exe, "init"], cwd=work, capture_output=True, check=False)
    if explicit:
        return shlex.split(explicit)
    if not exe:
        return None
    shebang = Path(exe).read_text().splitlines()[0].removeprefix("#!").strip()
    found = subprocess.run([shebang, "-c", "import agents_backupper, os; "
                            "print(os.path.dirname(agents_backupper.__file__))"],
                           capture_output=True, text=True, check=False)
    js = Path(found.stdout.strip()) / "_node/node_modules/agents-backupper/dist/hook.js"
    if found.returncode != 0 or not js.is_file():
        return None
    return ["node", str(js), "pre", "--agent", "claude-code"]


def hook_benchmark(args: argparse.Namespace, base: Path) -> None:
    server, url = model_server()
    work = build_world(base)
    env = environment(base, url)
    off = dict(env, PREIMAGE_SERVICE="off")
    model_env = dict(env, PREIMAGE_MODEL="openai/stub")
    model_off = dict(model_env, PREIMAGE_SERVICE="off")
    # An agent writing a 1 MB file through a quoted heredoc (tier 1: the file is captured).
    line = "print('generated line', 12345)  # a comment to make it longer\n"
    big = "cat > generated.py <<'EOF'\n" + line * ((1 << 20) // len(line)) + "EOF"
    # one service serves both settings: with and without a model (it imports the model tier
    # once a call needed it: the warm-up calls below)
    services = [subprocess.Popen([*PREIMAGE, "serve"], env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)]
    try:
        for e in (env, model_env):
            for _ in range(600):
                if subprocess.run([*PREIMAGE, "serve", "--status"], env=e,
                                  capture_output=True).returncode == 0:
                    break
                time.sleep(0.1)
        # warm every path once: bashlex table cache, page cache, litellm import in the service
        # (twice with the model: the first call's process reports it needed it)
        for e in (env, off, model_env, model_env):
            run_once([*PREIMAGE, "hook", "claude-code"], e, payload(UNKNOWN, work), work)
        rows = [
            Row("true", lambda i: run_once(["true"], env, b"", work)[0]),
            Row("python3 -c pass", lambda i: run_once([PYTHON, "-c", "pass"], env, b"", work)[0]),
            hook_row("preimage, service: read-only", env, READ_ONLY, work),
            hook_row("preimage, service: tier 1-2 (capture excl.)", env, TIER_1_2, work, True),
            hook_row("preimage, service: 1 MB command (capture excl.)", env, [big], work, True),
            hook_row("preimage, service: model tier", model_env, [UNKNOWN], work),
            hook_row("preimage, in-process: read-only", off, READ_ONLY, work),
            hook_row("preimage, in-process: tier 1-2 (capture excl.)", off, TIER_1_2, work, True),
            hook_row("preimage, in-process: 1 MB command (capture excl.)", off, [big], work, True),
        ]
        model_in_process = hook_row("preimage, in-process: model tier", model_off, [UNKNOWN], work)
        backupper = find_backupper(args.backupper, work)
        if backupper:
            rows.append(Row("BackUpper hook: read-only", lambda i: run_once(
                backupper, env, payload(READ_ONLY[i % len(READ_ONLY)], work), work)[0]))
            rows.append(Row("BackUpper hook: tier 1-2 (capture incl.)", lambda i: run_once(
                backupper, env, payload(TIER_1_2[i % len(TIER_1_2)], work), work)[0]))
        for i in range(args.n):
            for row in rows:
                row.samples.append(row.measure(i))
        for i in range(max(3, args.n // 10)):  # litellm's import makes each of these seconds long
            model_in_process.samples.append(model_in_process.measure(i))
        rows.append(model_in_process)
    finally:
        for e in (env, model_env):
            subprocess.run([*PREIMAGE, "serve", "--stop"], env=e, capture_output=True)
        for p in services:
            p.wait(timeout=120)
        server.shutdown()
    floor = statistics.median(rows[1].samples) * 1000
    bu = next((r for r in rows if r.name == "BackUpper hook: read-only"), None)
    print(f"\nhook process wall time, n={args.n} per row (model tier in-process: "
          f"{len(model_in_process.samples)}); load: {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores")
    print(f"{'':48} {'p50 ms':>8} {'p99 ms':>8} {'p50 / python -c pass':>21}"
          + (f" {'p50 / BackUpper':>16}" if bu else ""))
    for r in rows:
        line = f"{r.name:48} {r.p(0.5):8.1f} {r.p(0.99):8.1f} {r.p(0.5) / floor:21.2f}"
        if bu:
            line += f" {r.p(0.5) / bu.p(0.5):16.2f}"
        print(line)
    if not bu:
        print("BackUpper: not installed here (pip install agents-backupper, Node >= 18; or "
              "--backupper CMD) — no BackUpper row in this run")


# ------------------------------------------------------------------ the O(1) delete
def make_tree(root: Path, gib: float) -> int:
    root.mkdir(parents=True)
    size, total, chunk = 4 << 20, 0, os.urandom(4 << 20)
    i = 0
    while total < gib * (1 << 30):
        sub = root / f"d{i // 64}"
        sub.mkdir(exist_ok=True)
        (sub / f"f{i}.bin").write_bytes(chunk[i % 4096:] + chunk[:i % 4096])
        total += size
        i += 1
    return i


def trash_benchmark(args: argparse.Namespace, base: Path) -> None:
    env = environment(base / "t", "http://127.0.0.1:9/v1")
    tree = base / "t" / "project" / "big"
    files = make_tree(tree, args.trash_gb)
    subprocess.run(["sync"], check=False)
    seconds_capture, _ = run_once([*PREIMAGE, "capture", f"file://{tree}"], env, b"", base)
    start = time.perf_counter()
    run_once([*PREIMAGE, "trash", "--home", env["PREIMAGE_HOME"], "--backup", "0bench0trash1",
              "-r", "-f", "--", str(tree)], env, b"", base)
    seconds_trash = time.perf_counter() - start
    assert not tree.exists()
    from preimage.engine.trash import move_to_trash

    seconds_restore, _ = run_once([*PREIMAGE, "restore", "0bench0trash1"], env, b"", base)
    start = time.perf_counter()
    move_to_trash([str(tree)], home=Path(env["PREIMAGE_HOME"]), backup_id="0bench0trash2",
                  recursive=True, force=True)
    seconds_move = time.perf_counter() - start
    run_once([*PREIMAGE, "restore", "0bench0trash2"], env, b"", base)
    start = time.perf_counter()
    subprocess.run(["rm", "-rf", str(tree)], check=True)
    seconds_rm = time.perf_counter() - start
    print(f"\nrm -rf of a {args.trash_gb:g} GiB tree ({files} files) on the store's filesystem; "
          f"load: {os.getloadavg()[0]:.2f}")
    print(f"{'preimage trash (whole process: start-up, rename, catalog)':62} "
          f"{seconds_trash * 1000:9.1f} ms")
    print(f"{'  the move itself (rename + catalog record, in process)':62} "
          f"{seconds_move * 1000:9.1f} ms")
    print(f"{'preimage restore (rename back)':62} {seconds_restore * 1000:9.1f} ms")
    print(f"{'capture of the same tree (a copy into the store)':62} "
          f"{seconds_capture * 1000:9.1f} ms   trash / capture = "
          f"{seconds_trash / seconds_capture:.4f}")
    print(f"{'plain rm -rf of the same tree':62} {seconds_rm * 1000:9.1f} ms   "
          f"trash / rm -rf = {seconds_trash / seconds_rm:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=40, help="calls per row")
    parser.add_argument("--trash-gb", type=float, default=1.0, help="size of the rm -rf tree")
    parser.add_argument("--backupper", default=None, help="BackUpper's hook command line")
    parser.add_argument("--skip-trash", action="store_true")
    args = parser.parse_args()
    # Byte-compile first, as an installed package is: the in-process rows measure imports,
    # not the compiler (PYTHONDONTWRITEBYTECODE would otherwise make every run compile).
    import preimage

    subprocess.run([PYTHON, "-m", "compileall", "-q", str(Path(preimage.__file__).parent)],
                   capture_output=True, check=False)
    with tempfile.TemporaryDirectory(prefix="preimage-bench-hook-") as tmp:
        base = Path(tmp)
        hook_benchmark(args, base / "h")
        if not args.skip_trash:
            trash_benchmark(args, base)


if __name__ == "__main__":
    main()
