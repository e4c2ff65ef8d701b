"""Capture and restore of a large generated tree beside ``tar | zstd -1`` and restic, with
no more than the tree and one tool's copy of it on disk at once.

Usage: nice -n 19 ionice -c3 python benchmarks/bench_large_tree.py [--mixed-mb 10240]
       [--recaptures 2] [--json]

The tree is ``bench_capture.py``'s mixed tree (small text files, 1 MiB files and
256 MiB files, half random and half repetitive).  ``bench_capture.py`` keeps a pristine
copy, the ``tar.zst``, restic's repository and the store at once (about 3.5 times the
tree); here each tool takes its turn on the one tree and its output is deleted before
the next starts, so a 10 GiB tree needs about 15 GiB free (the tree and one compressed
copy):

1. ``tar -cf - | zstd -1`` (first capture), then the tree is deleted and unpacked
   from the ``tar.zst`` (the restore anchor); the ``tar.zst`` is deleted;
2. ``restic backup`` twice (first and unchanged), the tree deleted, ``restic restore``
   and the restored tree moved into place; the repository is deleted;
3. ``preimage capture`` (first, then ``--recaptures`` unchanged), the tree deleted and
   ``preimage restore``; the store is deleted.

After each restore the tree is checked against a manifest taken before the first step
(``find`` for every entry's path, type, size and mode, ``sha256sum`` for every file's
bytes: tools nobody here wrote), so each tool starts from the same bytes.  Each step is
its own process measured with ``wait4`` (CPU seconds with children, wall seconds, peak
RSS); ratios are preimage / anchor in CPU seconds, as in ``bench_capture.py``.  Each
tool's first capture reads a tree the previous tool has just written (the first: the
generator), so the page cache is alike for the three.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_capture import PY, Run, count_entries, generate_mixed, print_table, tree_bytes


def manifest(tree: Path, out: Path) -> Path:
    """Every entry's path, type, size (files) and mode, then every file's sha256, written
    to ``out`` by the tools themselves: this process stays small, as it must — a child
    spawned from it reports at least its peak RSS as its own (``_common.measure``)."""
    subprocess.run(
        f"cd {tree} && {{ find . -printf '%P\\t%y\\t%m\\t%s\\n' | awk -F'\\t' "
        "'{ if ($2 != \"f\") $4 = \"\"; print }' | LC_ALL=C sort && "
        f"find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; }} > {out}",
        shell=True, check=True)
    return out


def check_disk(work: Path, mib: int) -> None:
    """Stop unless the tree and one compressed copy (taken as large as the tree) fit."""
    need = 2 * mib << 20
    free = shutil.disk_usage(work).free
    if free < need * 1.1:
        raise SystemExit(f"a {mib:,} MiB tree needs about {need >> 20:,} MiB free on {work}, "
                         f"{free >> 20:,} MiB are free; run a smaller --mixed-mb")


def run_tools(run: Run, work: Path, tree: Path, recaptures: int) -> dict[str, Any]:
    info: dict[str, Any] = {"entries": count_entries(tree), "bytes": tree_bytes(tree)}
    expected = manifest(tree, work / "manifest-before")

    def restored_exactly(label: str) -> bool:
        same = filecmp.cmp(expected, manifest(tree, work / "manifest-after"), shallow=False)
        print(f"{label}: the restored tree {'matches' if same else 'DIFFERS'}",
              file=sys.stderr, flush=True)
        return same

    # 1. tar | zstd -1, and tar -x
    archive = work / "tree.tar.zst"
    tar = run.step(f"tar -cf - -C {work} tree | zstd -1 -q -o {archive}")
    info["tar_zst_bytes"] = archive.stat().st_size
    shutil.rmtree(tree)
    untar = run.step(f"zstd -dc -q {archive} | tar -xf - -C {work}")
    info["tar_exact"] = restored_exactly("tar -x")
    archive.unlink()

    # 2. restic: first and unchanged backup, restore
    repo = work / "restic"
    subprocess.run(["restic", "init", "-q", "-r", str(repo)], env=run.env, check=True,
                   capture_output=True)
    rfirst = run.step(["restic", "-r", str(repo), "backup", "-q", str(tree)])
    info["restic_bytes_first"] = tree_bytes(repo)
    rsecond = run.step(["restic", "-r", str(repo), "backup", "-q", str(tree)])
    info["restic_growth_unchanged"] = tree_bytes(repo) - info["restic_bytes_first"]
    shutil.rmtree(tree)
    out = work / "restic-out"
    rrestore = run.step(["restic", "-r", str(repo), "restore", "-q", "latest", "--target",
                         str(out)])
    shutil.move(str(out / tree.relative_to("/")), str(tree))
    shutil.rmtree(out)
    shutil.rmtree(repo)
    shutil.rmtree(work / "restic-cache", ignore_errors=True)
    info["restic_exact"] = restored_exactly("restic restore")

    # 3. preimage: first and unchanged captures, restore
    home = Path(run.env["PREIMAGE_HOME"])
    ours = run.step([*PY, "capture", "--json", f"file://{tree}"])
    backup = json.loads(ours.stdout)["id"]
    info["store_bytes_first"] = tree_bytes(home)
    again = [run.step([*PY, "capture", "--json", f"file://{tree}"]) for _ in range(recaptures)]
    best = min(again, key=lambda m: m.cpu)
    shutil.rmtree(tree)
    restored = run.step([*PY, "restore", "--json", backup])
    info["restore_exact"] = restored_exactly("preimage restore")
    shutil.rmtree(home)

    run.compare("tree: first capture", ours, {"tar|zstd -1": tar, "restic": rfirst})
    run.compare("tree: unchanged capture", best, {"restic": rsecond},
                note=f"best of {recaptures}; each: "
                     + ", ".join(f"{m.cpu:.2f} s cpu" for m in again))
    run.compare("tree: restore after rm -rf", restored, {"tar -x": untar, "restic": rrestore},
                note="exact" if info["restore_exact"] else "RESTORED TREE DIFFERS")
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mixed-mb", type=int, default=10240, help="MiB in the generated tree")
    ap.add_argument("--recaptures", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result: dict[str, Any] = {"load_before": [round(x, 2) for x in os.getloadavg()],
                              "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="bench-large-tree-") as tmp:
        work = Path(tmp)
        check_disk(work, args.mixed_mb)
        env = {**os.environ, "PREIMAGE_HOME": str(work / "home"), "PREIMAGE_SERVICE": "off",
               "RESTIC_PASSWORD": "bench", "RESTIC_CACHE_DIR": str(work / "restic-cache")}
        run = Run(env)
        tree = work / "tree"
        generate_mixed(tree, args.mixed_mb)
        result["tree"] = run_tools(run, work, tree, args.recaptures)
    result["rows"] = run.rows
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
        t = result["tree"]
        print(f"restored exactly: tar {t['tar_exact']}, restic {t['restic_exact']}, "
              f"preimage {t['restore_exact']}; restic grew {t['restic_growth_unchanged']:,} B "
              "on the unchanged backup")


if __name__ == "__main__":
    main()
