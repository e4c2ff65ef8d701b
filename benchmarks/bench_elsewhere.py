"""Restoring elsewhere and scoring against another target, side by side with the tools a team
would otherwise use for the same drill.

Usage: python benchmarks/bench_elsewhere.py [--files N] [--sample pagila] [--repeat R] [--json]

Files (a tree of N small files with modes, times and an xattr each ~10th file):
  restore --to DIR     vs  cp -a SRC DIR            (a copy that keeps metadata)
  score --against DIR  vs  diff -r SRC DIR          (a check of content only)
PostgreSQL (a public sample database on a throw-away server):
  restore --to DB      vs  pg_dump -Fc | pg_restore -d DB
  score --against DB   vs  pg_dump DB and pg_dump SRC, compared with cmp

Every preimage command runs as the user runs it: `python -m preimage …` in its own process.
Medians of --repeat runs; CPU seconds (user + system, children included) are printed beside
wall seconds, since the machine may be shared.
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

from _common import Measured, load_fixture, measure


def _median(runs: list[Measured]) -> Measured:
    runs = sorted(runs, key=lambda m: m.wall)
    return runs[len(runs) // 2]


def _row(res: dict[str, Any], label: str, ours: list[Measured], theirs: list[Measured]) -> None:
    o, t = _median(ours), _median(theirs)
    res[label] = {"preimage_s": round(o.wall, 3), "tool_s": round(t.wall, 3),
                  "ratio": round(o.wall / t.wall, 2) if t.wall else None,
                  "preimage_cpu_s": round(o.cpu, 3), "tool_cpu_s": round(t.cpu, 3)}


def make_tree(root: Path, n: int) -> None:
    for i in range(n):
        d = root / f"d{i // 100:03}"
        d.mkdir(parents=True, exist_ok=True)
        f = d / f"f{i:05}.txt"
        f.write_bytes(os.urandom(64) + (f"line {i}\n" * (i % 50 + 1)).encode())
        f.chmod(0o600 if i % 7 == 0 else 0o644)
        if i % 10 == 0:
            os.setxattr(f, "user.tag", str(i).encode())
        os.utime(f, ns=(1_600_000_000_000_000_000 + i, 1_650_000_000_000_000_000 + i))


def bench_files(work: Path, n: int, repeat: int, env: dict[str, str]) -> dict[str, Any]:
    src = work / "src"
    make_tree(src, n)
    cli = [sys.executable, "-m", "preimage"]
    backup = subprocess.run([*cli, "capture", f"file://{src}"], env=env, check=True,
                            capture_output=True, text=True).stdout.split()[-1]
    res: dict[str, Any] = {"files": n}
    ours, theirs, scored, diffed = [], [], [], []
    for i in range(repeat):
        dest = work / f"restored-{i}"
        ours.append(measure([*cli, "restore", backup, "--to", f"file://{dest}"], env))
        theirs.append(measure(["cp", "-a", str(src), str(work / f"copied-{i}")]))
        scored.append(measure([*cli, "score", backup, "--against", f"file://{dest}", "--min",
                               "1.0", "--json"], env))
        diffed.append(measure(["diff", "-r", str(src), str(work / f"copied-{i}")]))
    _row(res, "files: restore --to / cp -a", ours, theirs)
    _row(res, "files: score --against / diff -r", scored, diffed)
    res["files restorable"] = json.loads(scored[-1].stdout)["restorable"]["score"]
    return res


def bench_postgres(work: Path, sample: str, repeat: int, env: dict[str, str]) -> dict[str, Any]:
    pg = load_fixture("postgres.py")
    samples = load_fixture("sql_samples.py")
    server = pg.PostgresServer.start()
    try:
        src = samples.load_postgres(server, sample)
        penv = {**env, **server.env(), "PREIMAGE_POSTGRESQL_PASSWORD": server.password}
        cli = [sys.executable, "-m", "preimage"]
        backup = subprocess.run([*cli, "capture", server.uri(src)], env=penv, check=True,
                                capture_output=True, text=True).stdout.split()[-1]
        res: dict[str, Any] = {"sample": sample}
        ours, theirs, scored, dumped = [], [], [], []
        dump, restore = server.tool("pg_dump"), server.tool("pg_restore")
        for i in range(repeat):
            mine, copy = f"mine_{i}", f"copy_{i}"
            ours.append(measure([*cli, "restore", backup, "--to", server.uri(mine)], penv))
            theirs.append(measure([f"{dump} -Fc {src} > {work}/d.dump && createdb {copy} "
                                   f"&& {restore} -d {copy} {work}/d.dump"], penv, shell=True))
            scored.append(measure([*cli, "score", backup, "--against", server.uri(mine),
                                   "--json"], penv))
            # pg_dump's \\restrict lines carry a random key on every run: left out
            noise = "grep -v -e '^.restrict ' -e '^.unrestrict '"
            dumped.append(measure([f"{dump} {src} | {noise} > {work}/a.sql && {dump} {mine} | "
                                   f"{noise} > {work}/b.sql; cmp -s {work}/a.sql {work}/b.sql; "
                                   "echo $?"], penv, shell=True))
        _row(res, f"{sample}: restore --to / pg_dump|pg_restore", ours, theirs)
        _row(res, f"{sample}: score --against / 2x pg_dump+cmp", scored, dumped)
        res[f"{sample} pg_dump identical after restore --to"] = dumped[-1].stdout.strip() == "0"
        doc = json.loads(scored[-1].stdout)
        res[f"{sample} restorable"] = doc["restorable"]["score"]
        copy_scored = json.loads(subprocess.run(
            [*cli, "score", backup, "--against", server.uri("copy_0"), "--json"], env=penv,
            capture_output=True, text=True, check=False).stdout)
        res[f"{sample} pg_dump|pg_restore restorable"] = copy_scored["restorable"]["score"]
        res[f"{sample} pg_dump|pg_restore lost"] = sorted(
            {f"{d['item']} {d['path']}" for d in copy_scored["differences"]
             if d["fidelity"] in ("content", "metadata")})[:10]
        return res
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--sample", default="pagila")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-elsewhere-"))
    env = {**os.environ, "PREIMAGE_HOME": str(work / "home"), "PREIMAGE_SERVICE": "off"}
    try:
        res = bench_files(work / "files", args.files, args.repeat, env)
        res |= bench_postgres(work, args.sample, args.repeat, env)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(f"restore elsewhere and score against, medians of {args.repeat} (own processes)")
    print(f"{'':48}{'preimage s':>11}{'tool s':>8}{'ratio':>7}{'cpu s':>8}{'tool cpu':>9}")
    for label, r in res.items():
        if isinstance(r, dict):
            print(f"{label:48}{r['preimage_s']:11.2f}{r['tool_s']:8.2f}{r['ratio']:7.2f}"
                  f"{r['preimage_cpu_s']:8.2f}{r['tool_cpu_s']:9.2f}")
        else:
            print(f"{label}: {r}")


if __name__ == "__main__":
    main()
