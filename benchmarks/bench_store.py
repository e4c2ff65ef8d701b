"""The store under stress and against tar: crash injection, corruption, and what it costs.

Usage: python benchmarks/bench_store.py [--trials N] [--faults N] [--files N] [--json]

1. crash injection — N seeded trials (default 300; the test suite runs 24):
   capture, restore, forget or prune killed at a crash point, then checked
   (no complete backup loses a blob, the re-run finishes, a re-run restore's
   undo describes what it replaced); prints the trials per operation and
   point and every failure;
2. corruption — N random faults (default 200) on blobs, snapshot documents and
   catalog rows: how many `check --read-data` names, and that every restore
   of a damaged backup writes nothing;
3. cost against tar, one run each on a tree of N files (default 5,000): the
   first capture vs `tar -czf`, a capture of the unchanged tree vs a second
   `tar -czf`, a restore after `rm -rf` vs `tar -xzf`, `check --read-data` vs
   `tar -tzf` (reading the archive back), and `prune` after forgetting half
   the backups; the store's size vs the .tar.gz.  Ratios are preimage / tar,
   measured in the same run; the load is printed with them.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "core"))

import _common
import store_faults

import preimage
from preimage import Store
from preimage.interface.sizes import human_bytes, tree_bytes
from preimage.store.check import check


def crashes(trials: int, work: Path) -> dict[str, Any]:
    by: collections.Counter[str] = collections.Counter()
    failures = []
    for seed in range(trials):
        trial = store_faults.crash_trial(seed, work / "crash")
        by[f"{trial.operation}/{trial.point}"] += 1
        if trial.problems:
            failures.append({"seed": seed, "operation": trial.operation, "point": trial.point,
                             "nth": trial.nth, "problems": trial.problems})
    return {"trials": trials, "by_point": dict(sorted(by.items())), "failures": failures}


def corruption(n: int, work: Path) -> dict[str, Any]:
    home, trees = work / "corrupt-home", work / "corrupt-trees"
    faults = store_faults.corrupt(home, trees, n, seed=7)
    named = 0
    refused_clean = 0
    data_faults = 0
    with Store(home) as st:
        report = check(st, read_data=True)
        text = "\n".join(f"{p.subject} {p.message}" for p in report.problems)
        named = sum(1 for f in faults if any(name in text for name in f.names))
        for i, fault in enumerate(faults):
            if not fault.data_fault:
                continue
            data_faults += 1
            root = trees / f"t{i}"
            (root / "f0").unlink()
            before = store_faults.tree_state(root)
            try:
                preimage.restore(fault.backup_id, store=st)
            except preimage.PreimageError:
                if store_faults.tree_state(root) == before:
                    refused_clean += 1
    kinds = collections.Counter(f.kind for f in faults)
    return {"faults": n, "named_by_check": named, "kinds": dict(sorted(kinds.items())),
            "data_faults": data_faults, "restores_refused_writing_nothing": refused_clean}


def _tree(root: Path, files: int) -> None:
    rng = random.Random(1)
    words = [rng.randbytes(8).hex() for _ in range(500)]
    for i in range(files):
        d = root / f"pkg{i % 40}" / f"mod{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        text = " ".join(rng.choice(words) for _ in range(rng.randint(20, 400)))
        (d / f"file{i}.txt").write_text(text + "\n")
        if i % 50 == 0:
            (d / f"blob{i}.bin").write_bytes(rng.randbytes(rng.randint(1000, 200_000)))


def versus_tar(files: int, work: Path) -> dict[str, Any]:
    root, home, tars = work / "tree", work / "tar-home", work / "tars"
    _tree(root, files)
    tars.mkdir()
    env = {**os.environ, "PREIMAGE_HOME": str(home)}
    py = [sys.executable, "-m", "preimage"]
    rows: dict[str, dict[str, float]] = {}

    def both(name: str, ours: list[str], theirs: list[str]) -> str:
        t_ours, _, out = _common.run(ours, env)
        t_tar, _, _ = _common.run(theirs, env)
        rows[name] = {"preimage_s": round(t_ours, 3), "tar_s": round(t_tar, 3),
                      "ratio": round(t_ours / t_tar, 2) if t_tar else 0.0}
        return out

    tgz = str(tars / "one.tgz")
    backup = both("first capture", [*py, "capture", f"file://{root}"],
                  ["tar", "-czf", tgz, "-C", str(root.parent), root.name]).strip()
    both("unchanged capture", [*py, "capture", f"file://{root}"],
         ["tar", "-czf", str(tars / "two.tgz"), "-C", str(root.parent), root.name])
    shutil.rmtree(root)
    both("restore after rm -rf", [*py, "restore", backup],
         ["tar", "-xzf", tgz, "-C", str(tars)])
    both("check --read-data", [*py, "check", "--read-data"], ["tar", "-tzf", tgz])
    for i in range(4):
        (root / "pkg0" / "mod0" / f"file{i}.txt").write_text(f"edit {i} {time.time()}\n")
        _common.run([*py, "capture", f"file://{root}"], env)
    t_forget, _, _ = _common.run([*py, "forget", "--keep-last", "2"], env)
    t_prune, _, _ = _common.run([*py, "prune"], env)
    with Store(home) as st:
        stored = sum(st.blobs.stored_size(d) for d in st.blobs.digests())
        count = st.catalog.count()
    return {
        "files": files,
        "tree_bytes": tree_bytes(root),
        "tgz_bytes": os.path.getsize(tgz),
        "store_bytes_after_prune": stored,
        "backups_left": count,
        "size_ratio_store_vs_one_tgz": round(stored / os.path.getsize(tgz), 2),
        "steps": rows,
        "forget_s": round(t_forget, 3),
        "prune_s": round(t_prune, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--faults", type=int, default=200)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        work = Path(tmp)
        out = {
            "load_before": [round(x, 2) for x in load],
            "crash": crashes(args.trials, work),
            "corruption": corruption(args.faults, work),
            "versus_tar": versus_tar(args.files, work),
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "cpus": os.cpu_count(),
        }
    if args.json:
        print(json.dumps(out, indent=2))
        return
    c, k, v = out["crash"], out["corruption"], out["versus_tar"]
    print(f"load {out['load_before']} → {out['load_after']} on {out['cpus']} CPUs")
    print(f"crash injection: {c['trials']} trials, {len(c['failures'])} failed")
    for point, n in c["by_point"].items():
        print(f"  {point:28} {n}")
    for f in c["failures"]:
        print(f"  FAILED {f}")
    print(f"corruption: {k['faults']} faults, {k['named_by_check']} named by check; "
          f"{k['restores_refused_writing_nothing']}/{k['data_faults']} restores refused, "
          "writing nothing")
    print(f"versus tar on {v['files']} files ({human_bytes(v['tree_bytes'])}):")
    for name, row in v["steps"].items():
        print(f"  {name:22} preimage {row['preimage_s']:7.2f} s   tar {row['tar_s']:7.2f} s"
              f"   ratio {row['ratio']:.2f}")
    print(f"  forget {v['forget_s']:.2f} s, prune {v['prune_s']:.2f} s; store after prune "
          f"{human_bytes(v['store_bytes_after_prune'])} for {v['backups_left']} backups vs one "
          f".tar.gz {human_bytes(v['tgz_bytes'])} (x{v['size_ratio_store_vs_one_tgz']})")


if __name__ == "__main__":
    main()
