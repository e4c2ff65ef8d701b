"""Peak memory of capture, diff, score and restore of a large tree of small files.

Usage: nice -n 19 ionice -c3 python benchmarks/bench_memory.py [--files 100000,1000000]
       [--baseline PYTHON] [--no-restore] [--no-restic] [--json]

Each step runs as its own process, measured with ``wait4`` (peak RSS in MiB,
CPU seconds user + system, wall seconds); the load average is printed with
them.  The tree is generated: N small files, a thousand per directory.  Steps,
in order: first capture, unchanged re-capture, diff and score of the unchanged
tree, then restore after ``rm -rf`` — beside restic's backup and restore of the
same tree when restic is installed.

``--baseline PYTHON`` runs every step but the first capture a second time with
another interpreter (another checkout's environment, same store format) on the
same store and backup, each pair back to back, so the two columns come from one
run on the same load.  ``--no-restore`` leaves the restore (and its pristine copy
of the tree) out.  Before a tree is generated the free disk is checked against
what the run will hold at once (the tree, its copy, the store, restic's
repository: about 4 KiB a file each, the file system's block); everything is
deleted after each size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
from bench_capture import generate

STEPS = ("capture", "re-capture", "diff", "score", "restore")
BYTES_PER_FILE = 4096   # a small file takes a block, in the tree and in each copy


def check_disk(work: Path, n: int, copies: int) -> None:
    """Stop before generating a tree the free disk cannot hold ``copies`` times over."""
    need = n * BYTES_PER_FILE * copies
    free = shutil.disk_usage(work).free
    if free < need * 1.2:
        raise SystemExit(f"{n:,} files need about {need >> 20:,} MiB free on {work} "
                         f"({copies} copies of the tree at once), {free >> 20:,} MiB are free; "
                         "free some space or run fewer files")


def _preimage(python: str, home: Path, args: list[str]) -> _common.Measured:
    env = {**os.environ, "PREIMAGE_HOME": str(home), "PREIMAGE_SERVICE": "off"}
    argv = [python, "-m", "preimage", *args]
    if args[0] == "diff":   # exits 1 when something differs; only its memory counts here
        argv = ["sh", "-c", " ".join(argv) + " >/dev/null; test $? -le 1"]
    return _common.measure(argv, env)


def one_size(n: int, work: Path, pythons: dict[str, str], *, restic: bool = True,
             restore: bool = True) -> list[dict[str, Any]]:
    """The rows for a tree of ``n`` files: one per step, a column per interpreter."""
    restic = restic and shutil.which("restic") is not None
    check_disk(work, n, 2 + restore + restic)
    root = work / f"tree-{n}"
    generate(root, n)
    pristine = work / f"pristine-{n}"
    if restore:
        subprocess.run(["cp", "-a", str(root), str(pristine)], check=True)
    steps = STEPS if restore else STEPS[:-1]
    rows: dict[str, dict[str, Any]] = {s: {"files": n, "step": s} for s in steps}
    # one store, captured once with the first interpreter: the others read the same
    # backup (the store format is the same), so each step's pair runs back to back
    home = work / f"home-{n}"
    first_label, first_python = next(iter(pythons.items()))
    first = _preimage(first_python, home, ["capture", "--json", f"file://{root}"])
    backup = json.loads(first.stdout)["id"]
    measured: dict[tuple[str, str], _common.Measured] = {("capture", first_label): first}
    for label, python in pythons.items():
        measured["re-capture", label] = _preimage(python, home, ["capture", f"file://{root}"])
    for step in ("diff", "score"):
        for label, python in pythons.items():
            measured[step, label] = _preimage(python, home, [step, backup])
    for label, python in pythons.items():
        if not restore:
            break
        shutil.rmtree(root)
        measured["restore", label] = _preimage(python, home, ["restore", "--json", backup])
        if subprocess.run(["diff", "-rq", "--no-dereference", str(pristine), str(root)],
                          capture_output=True).returncode != 0:
            raise SystemExit(f"{label}: the restored tree of {n} files differs")
    for (step, label), m in measured.items():
        rows[step][f"{label}_rss_mib"] = m.rss_mib
        rows[step][f"{label}_cpu"] = round(m.cpu, 2)
        rows[step][f"{label}_wall"] = round(m.wall, 2)
        print(f"{n} {step} {label}: {m.rss_mib} MiB, {m.cpu:.2f} s cpu", file=sys.stderr,
              flush=True)
    shutil.rmtree(home)
    if restic:
        repo = work / f"restic-{n}"
        env = {**os.environ, "RESTIC_PASSWORD": "bench"}
        subprocess.run(["restic", "init", "-q", "-r", str(repo)], env=env, check=True,
                       capture_output=True)
        backup_m = _common.measure(["restic", "-r", str(repo), "backup", "-q", str(root)], env)
        restic_rows = [("capture", backup_m)]
        out = work / f"restic-out-{n}"
        if restore:
            restic_rows.append(("restore", _common.measure(
                ["restic", "-r", str(repo), "restore", "latest", "-q", "--target", str(out)],
                env)))
        for step, m in restic_rows:
            rows[step]["restic_rss_mib"] = m.rss_mib
            rows[step]["restic_cpu"] = round(m.cpu, 2)
            print(f"{n} {step} restic: {m.rss_mib} MiB, {m.cpu:.2f} s cpu", file=sys.stderr,
                  flush=True)
        shutil.rmtree(repo)
        shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(root)
    shutil.rmtree(pristine, ignore_errors=True)
    return list(rows.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="100000")
    parser.add_argument("--baseline", help="another interpreter to run each step with")
    parser.add_argument("--no-restic", action="store_true", help="leave restic's rows out")
    parser.add_argument("--no-restore", action="store_true",
                        help="leave the restore out (its copy of the tree too)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    pythons = {"preimage": sys.executable}
    if args.baseline:
        pythons["baseline"] = args.baseline
    load = os.getloadavg()[0]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        for n in (int(x) for x in args.files.split(",")):
            rows.extend(one_size(n, Path(tmp), pythons, restic=not args.no_restic,
                                 restore=not args.no_restore))
    if args.json:
        print(json.dumps({"load": load, "rows": rows}, indent=2))
        return
    print(f"load average at start {load:.1f} on {os.cpu_count()} cores")
    for r in rows:
        cells = [f"{r['files']:>9,} files  {r['step']:<10}"]
        for label in (*pythons, "restic"):
            if f"{label}_rss_mib" in r:
                cells.append(f"{label} {r[f'{label}_rss_mib']:>5} MiB {r[f'{label}_cpu']:>7} s cpu")
        print("  ".join(cells))


if __name__ == "__main__":
    main()
