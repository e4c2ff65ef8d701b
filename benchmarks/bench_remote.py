"""The shared store side by side with restic, both writing to the same SeaweedFS.

Usage: python benchmarks/bench_remote.py [--size-mb 1024] [--own-process] [--json]

Starts SeaweedFS and PostgreSQL on loopback and, in one run, for preimage
(PREIMAGE_STORE=s3://…, catalog in PostgreSQL, AES-GCM) and restic (its S3
backend, its own encryption and compression), measures:

  tree, first backup    a SIZE tree: a few large files and many small ones,
                        half random, half text (compressible)
  tree, second backup   the same tree unchanged
  1% change             a SIZE file backed up, then 1% of its bytes rewritten
                        in 100 scattered runs, backed up again: bytes added
  tree restore          into an empty directory, from an empty cache

and prints seconds, MB/s and bytes stored, with preimage/restic ratios (> 1
means preimage is faster or smaller where that is better), and the load.

preimage's commands after its first are served by its warm process, as a session's later
commands are (docs/layer.md); ``--own-process`` runs each in a process of its own
(``PREIMAGE_SERVICE=off``: interpreter start and imports on every step, as restic's).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_fixture

MB = 1 << 20


def make_tree(root: Path, size: int, rng: random.Random) -> None:
    """~60% in 8 large files, the rest in 64 KiB to 512 KiB files; half random, half text."""
    text = (b"2026-11-30T10:00:00Z INFO request served path=/api/items status=200 in 12ms\n"
            * 8192)
    def body(n: int) -> bytes:
        half = n // 2
        rep = (text * (half // len(text) + 1))[:half]
        return rng.randbytes(n - half) + rep
    large = size * 6 // 10
    for i in range(8):
        (root / "large").mkdir(parents=True, exist_ok=True)
        (root / "large" / f"blob{i}.bin").write_bytes(body(large // 8))
    left, i = size - large, 0
    while left > 0:
        n = min(left, rng.randint(64 << 10, 512 << 10))
        d = root / "small" / f"d{i // 200:03}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:05}.dat").write_bytes(body(n))
        left -= n
        i += 1


def scatter_change(path: Path, rng: random.Random, share: float = 0.01, runs: int = 100) -> None:
    """Rewrite ``share`` of the file's bytes in ``runs`` runs at random offsets."""
    size = path.stat().st_size
    run = int(size * share / runs)
    with open(path, "r+b") as f:
        for _ in range(runs):
            f.seek(rng.randrange(0, size - run))
            f.write(rng.randbytes(run))


def bucket_bytes(s3: Any, bucket: str) -> int:
    return sum(size for _k, size in s3.list_keys(bucket))


def timed(args: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    start = time.perf_counter()
    proc = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])} failed: {proc.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=128)
    ap.add_argument("--own-process", action="store_true",
                    help="every preimage command in its own process, none served warm")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    size = args.size_mb * MB
    rng = random.Random(17)
    sw, pg = load_fixture("seaweedfs.py"), load_fixture("postgres.py")
    work = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    results: dict[str, dict[str, float]] = {"preimage": {}, "restic": {}}
    try:
        with sw.SeaweedServer.start() as s3, pg.PostgresServer.start() as db:
            for b in ("pi-tree", "pi-file", "rs-tree", "rs-file"):
                s3.create_bucket(b)
            for name in ("tree", "file"):
                db.psql(f"CREATE DATABASE {name}")
            key = work / "key"
            key.write_text(os.urandom(32).hex())
            # As installed from a wheel, Python reads compiled bytecode; a development
            # shell's PYTHONDONTWRITEBYTECODE would recompile preimage on every run.
            environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            if args.own_process:
                environ["PREIMAGE_SERVICE"] = "off"
            base = {**environ, **s3.env(), "PGPASSWORD": db.password,
                    "PREIMAGE_STORE_KEY_FILE": str(key), "RESTIC_PASSWORD": "bench-password",
                    "RESTIC_CACHE_DIR": str(work / "restic-cache")}
            preimage = [sys.executable, "-m", "preimage"]

            def pi_env(kind: str, home: str) -> dict[str, str]:
                return {**base, "PREIMAGE_HOME": str(work / home),
                        "PREIMAGE_STORE": f"s3://pi-{kind}/p?endpoint={s3.endpoint}",
                        "PREIMAGE_CATALOG": db.uri(kind)}

            def rs_env(kind: str) -> dict[str, str]:
                return {**base, "RESTIC_REPOSITORY": f"s3:{s3.endpoint}/rs-{kind}"}

            tree = work / "tree"
            make_tree(tree, size, rng)
            big = work / "file" / "big.bin"
            big.parent.mkdir()
            with open(big, "wb") as fh:
                for off in range(0, size, 64 * MB):
                    fh.write(rng.randbytes(min(64 * MB, size - off)))
            for kind in ("tree", "file"):
                timed([*preimage, "store", "init"], pi_env(kind, "h-init"))
                timed(["restic", "init"], rs_env(kind))
            r_pi, r_rs = results["preimage"], results["restic"]
            # tree: first and second backup
            for label in ("first", "second"):
                b0 = bucket_bytes(s3, "pi-tree")
                r_pi[f"tree {label} s"] = timed([*preimage, "capture", f"file://{tree}"],
                                                pi_env("tree", "h1"))
                r_pi[f"tree {label} stored MB"] = (bucket_bytes(s3, "pi-tree") - b0) / MB
                b0 = bucket_bytes(s3, "rs-tree")
                r_rs[f"tree {label} s"] = timed(["restic", "backup", "-q", str(tree)],
                                                rs_env("tree"))
                r_rs[f"tree {label} stored MB"] = (bucket_bytes(s3, "rs-tree") - b0) / MB
            # 1% scattered change in one large file
            timed([*preimage, "capture", f"file://{big.parent}"], pi_env("file", "h2"))
            timed(["restic", "backup", "-q", str(big.parent)], rs_env("file"))
            scatter_change(big, rng)
            b0 = bucket_bytes(s3, "pi-file")
            timed([*preimage, "capture", f"file://{big.parent}"], pi_env("file", "h2"))
            r_pi["1% change stored MB"] = (bucket_bytes(s3, "pi-file") - b0) / MB
            b0 = bucket_bytes(s3, "rs-file")
            timed(["restic", "backup", "-q", str(big.parent)], rs_env("file"))
            r_rs["1% change stored MB"] = (bucket_bytes(s3, "rs-file") - b0) / MB
            # restore the tree into an empty directory, from an empty cache
            shutil.rmtree(tree)
            r_pi["tree restore s"] = timed([*preimage, "restore", "last"], pi_env("tree", "h3"))
            shutil.rmtree(tree)
            shutil.rmtree(work / "restic-cache", ignore_errors=True)
            target = work / "restic-restore"
            r_rs["tree restore s"] = timed(["restic", "restore", "latest", "--target",
                                            str(target)], rs_env("tree"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"size_mb": args.size_mb, "load": load, "own_process": args.own_process,
                          **results}, indent=2))
        return
    print(f"preimage shared store vs restic, both on SeaweedFS (loopback), {args.size_mb} MiB; "
          f"load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print("preimage: " + ("every command in its own process" if args.own_process
                          else "commands after the first served by its warm process"))
    print(f"{'':26}{'preimage':>12}{'restic':>12}{'ratio':>10}")
    for metric in results["preimage"]:
        a, b = results["preimage"][metric], results["restic"][metric]
        # seconds and bytes: lower is better, so the ratio is restic / preimage
        ratio = b / a if a else float("inf")
        print(f"{metric:26}{a:12.2f}{b:12.2f}{ratio:9.2f}x")
    print("ratio > 1: preimage took less time or stored fewer bytes than restic")
    for name in ("tree first", "tree restore"):
        a, b = results["preimage"][f"{name} s"], results["restic"][f"{name} s"]
        print(f"{name} throughput: preimage {args.size_mb / a:.0f} MiB/s, "
              f"restic {args.size_mb / b:.0f} MiB/s")


if __name__ == "__main__":
    main()
