"""Capture and restore throughput against the tools a user would otherwise run, in one run.

Usage: python benchmarks/bench_capture.py [--tree DIR | --files N | --mixed-mb MB] [--recaptures R]
       [--no-tree] [--no-git] [--commits N] [--memory N,N,...] [--imap N] [--postgres ROWS]
       [--json]

Every step runs as its own process, measured with ``wait4``: CPU seconds (user
+ system, its children and threads included — the comparable number on a
shared, loaded machine), wall seconds and peak RSS.  Ratios are preimage /
anchor from the same run; the load average is printed with them.

Trees (default: a copy of /usr/include — real files nobody here wrote; --mixed-mb MB a
generated tree of mixed sizes, MB in total: many small text files, 1 MiB files and
256 MiB files, half random and half repetitive bytes, so compression and dedup both
have something to do and something they cannot do):
  first capture        preimage capture file://T  vs  tar -cf - T | zstd -1, and restic backup
  unchanged capture    the same again             vs  restic backup of the unchanged tree
  bytes stored by an unchanged capture (store growth, catalog included) vs restic's
  restore after rm -rf preimage restore ID         vs  zstd -dc | tar -x, and restic restore
  restore, served      the same restore, then a first capture into a new store, each
  first capture, served  served by a warm process as a user's commands are by default:
                       the client's CPU plus the warm process's and its child's, read
                       from a cgroup of their own (left out where this process cannot
                       make one: not root, no CPU accounting)
Git (a repository built from the same tree: --commits commits of history (default 200,
ten files changed in each), packed and loose objects, branches, tags, a stash, a hook, a
config entry, untracked and ignored files; the restore must give back the work tree and
.git byte for byte: refs, reflogs, index, hooks, config):
  capture              preimage capture git://R   vs  git bundle --all + tar | zstd -1 of the
                                                      working tree and .git's own files
  restore after rm -rf preimage restore ID         vs  git clone of the bundle + tar -x
Memory (--memory 10000,100000,1000000): peak RSS of a capture, an unchanged
re-capture and a restore of generated trees of N files, beside restic's.
IMAP (--imap N) and PostgreSQL (--postgres ROWS) run bench_imap.py and
bench_postgres.py (each starts its server through its fixture) and take their
ratios (wall time; those scripts time in-process or by child).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common

PY = [sys.executable, "-m", "preimage"]
GOALS = {  # the ratio (preimage / anchor, CPU) a step must stay at or under
    "tar|zstd -1": 2.0,
    "restic": 1.0,
    "tar -x": 1.3,
    "git bundle+tar": 2.0,
    "git clone+tar -x": 2.0,
}


def tree_bytes(path: Path) -> int:
    """Apparent size of every file under ``path``."""
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def count_entries(path: Path) -> int:
    return sum(1 + len(files) for _, _dirs, files in os.walk(path))


def generate(root: Path, n: int) -> None:
    """``n`` small files, a thousand per directory (the memory runs)."""
    for i in range(n):
        d = root / f"d{i // 1000:04}"
        if i % 1000 == 0:
            d.mkdir(parents=True)
        (d / f"f{i:07}").write_bytes(b"%d\n" % i * (1 + i % 40))


def generate_mixed(root: Path, total_mb: int) -> None:
    """A tree of mixed sizes, ``total_mb`` MiB in all: about 8 % in small files (4 KiB on
    average, a thousand per directory), 25 % in 1 MiB files, the rest in 256 MiB files.
    Every large or medium file is half random (incompressible, unique) and half one
    repeated line (compressible), so neither compression nor dedup has it easy."""
    mib = 1 << 20
    line = b"the quick brown fox jumps over the lazy dog 0123456789\n"
    repetitive = (line * (mib // len(line) + 1))[:mib]
    small_bytes, medium = total_mb * mib * 8 // 100, total_mb // 4
    large = max(0, (total_mb - medium - total_mb * 8 // 100) // 256)
    i = written = 0
    while written < small_bytes:
        d = root / "small" / f"d{i // 1000:04}"
        if i % 1000 == 0:
            d.mkdir(parents=True)
        data = b"%d %s\n" % (i, line) * (1 + i % 150)
        (d / f"f{i:07}.txt").write_bytes(data)
        written += len(data)
        i += 1
    (root / "medium").mkdir()
    for m in range(medium):
        half = os.urandom(mib // 2) + repetitive[: mib // 2]
        (root / "medium" / f"m{m:05}.bin").write_bytes(half)
    (root / "large").mkdir()
    for n in range(large):
        with open(root / "large" / f"l{n:03}.bin", "wb") as fh:
            for k in range(256):
                fh.write(os.urandom(mib) if k % 2 else repetitive)


def same_tree(a: Path, b: Path) -> bool:
    return subprocess.run(["diff", "-rq", "--no-dereference", str(a), str(b)],
                          capture_output=True).returncode == 0


class Run:
    """The rows of one benchmark run."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.rows: list[dict[str, Any]] = []

    def step(self, args: list[str] | str) -> _common.Measured:
        if isinstance(args, str):
            return _common.measure([args], self.env, shell=True)
        return _common.measure(args, self.env)

    def compare(self, name: str, ours: _common.Measured, anchors: dict[str, _common.Measured],
                note: str = "") -> None:
        row: dict[str, Any] = {"step": name, "preimage_cpu": round(ours.cpu, 3),
                               "preimage_wall": round(ours.wall, 3), "preimage_rss_mib": ours.rss_mib,
                               "anchors": {}, "note": note}
        for anchor, m in anchors.items():
            row["anchors"][anchor] = {
                "cpu": round(m.cpu, 3), "wall": round(m.wall, 3), "rss_mib": m.rss_mib,
                "ratio_cpu": round(ours.cpu / m.cpu, 2) if m.cpu else None,
                "ratio_wall": round(ours.wall / m.wall, 2) if m.wall else None,
                "goal": GOALS.get(anchor),
            }
        self.rows.append(row)


def make_tree(work: Path, source: Path | None, files: int, mixed_mb: int) -> Path:
    tree = work / "tree"
    if mixed_mb:
        generate_mixed(tree, mixed_mb)
    elif source is not None:
        subprocess.run(["cp", "-a", str(source), str(tree)], check=True)
    else:
        generate(tree, files)
    return tree


def trees(run: Run, work: Path, tree: Path, recaptures: int) -> dict[str, Any]:
    pristine = work / "pristine"
    subprocess.run(["cp", "-a", str(tree), str(pristine)], check=True)
    home, restic = Path(run.env["PREIMAGE_HOME"]), work / "restic"
    subprocess.run(["restic", "init", "-q", "-r", str(restic)], env=run.env, check=True,
                   capture_output=True)
    info: dict[str, Any] = {"entries": count_entries(tree), "bytes": tree_bytes(tree)}

    tar = run.step(f"tar -cf - -C {work} tree | zstd -1 -q -o {work}/tree.tar.zst")
    rfirst = run.step(["restic", "-r", str(restic), "backup", "-q", str(tree)])
    restic_first = tree_bytes(restic)
    ours = run.step([*PY, "capture", "--json", f"file://{tree}"])
    backup = json.loads(ours.stdout)["id"]
    run.compare("tree: first capture", ours, {"tar|zstd -1": tar, "restic": rfirst})
    info["tar_zst_bytes"] = (work / "tree.tar.zst").stat().st_size
    info["store_bytes_first"] = tree_bytes(home)
    info["restic_bytes_first"] = restic_first

    rsecond = run.step(["restic", "-r", str(restic), "backup", "-q", str(tree)])
    before = tree_bytes(home)
    again = [run.step([*PY, "capture", "--json", f"file://{tree}"]) for _ in range(recaptures)]
    best = min(again, key=lambda m: m.cpu)
    grown = (tree_bytes(home) - before) / recaptures
    blobs = [json.loads(m.stdout)["stored_bytes"] for m in again]
    restic_grown = tree_bytes(restic) - restic_first
    # the store's growth includes the catalog: the first re-capture also records that
    # the blobs the first capture wrote were verified (once; later ones add only rows)
    run.compare("tree: unchanged capture", best, {"restic": rsecond},
                note=f"blobs {blobs[-1]:,} B ({blobs[-1] * 1000 / info['entries']:.0f} B per 1000 "
                     f"entries); store with catalog {grown:,.0f} B per capture; restic "
                     f"{restic_grown:,} B")
    info["blob_bytes_per_unchanged_capture"] = blobs
    info["store_growth_per_unchanged_capture"] = round(grown)
    info["restic_growth_unchanged"] = restic_grown

    shutil.rmtree(tree)
    restored = run.step([*PY, "restore", "--json", backup])
    info["restore_exact"] = same_tree(tree, pristine)
    shutil.rmtree(tree)
    untar = run.step(f"zstd -dc -q {work}/tree.tar.zst | tar -xf - -C {work}")
    shutil.rmtree(tree)
    rrestore = run.step(["restic", "-r", str(restic), "restore", "-q", "latest",
                         "--target", str(work / "restic-out")])
    run.compare("tree: restore after rm -rf", restored, {"tar -x": untar, "restic": rrestore},
                note="exact" if info["restore_exact"] else "RESTORED TREE DIFFERS")
    shutil.rmtree(work / "restic-out")
    # the same restore as a user's commands run by default: served by the warm process,
    # whose interpreter has its modules imported already (its CPU read from a cgroup)
    with _common.served(run.env, work) as measure_served:
        if measure_served is not None:
            served = measure_served([*PY, "restore", "--json", backup])
            info["served_restore_exact"] = same_tree(tree, pristine)
            run.compare("tree: restore, served", served, {"tar -x": untar, "restic": rrestore},
                        note="exact" if info["served_restore_exact"]
                        else "RESTORED TREE DIFFERS")
            first = measure_served([*PY, "capture", "--json", f"file://{tree}"],
                                   PREIMAGE_HOME=str(work / "home-served"))
            run.compare("tree: first capture, served", first,
                        {"tar|zstd -1": tar, "restic": rfirst})
            shutil.rmtree(tree)
    shutil.move(str(pristine), str(tree))
    return info


def git_repo(run: Run, work: Path, commits: int) -> dict[str, Any]:
    """A repository from the tree: ``commits`` commits of history (ten files changed in
    each), packed and loose objects, branches, tags, a stash, a hook, a config entry, an
    untracked and an ignored file."""
    repo = work / "repo"
    shutil.move(str(work / "tree"), str(repo))
    env = {**run.env, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.org",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.org"}

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "import")
    git("gc", "-q")
    files = sorted(p for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts)
    for rnd in range(commits):
        for k in range(10):
            with open(files[(rnd * 131 + k * 877) % len(files)], "ab") as fh:
                fh.write(f"\n/* change {rnd}.{k} */\n".encode())
        git("commit", "-q", "-am", f"change {rnd}")
        if rnd % 50 == 49:
            git("tag", "-a", "-m", f"release {rnd // 50}", f"v{rnd // 50}")
            git("branch", f"maint-{rnd // 50}")
        if rnd == commits // 2:
            git("gc", "-q")  # older history packed, newer objects loose
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    git("config", "bench.marker", "kept")
    with open(files[1], "ab") as fh:
        fh.write(b"\n/* stashed */\n")
    git("stash", "-q")
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "build.log").write_text("ignored output\n" * 100)
    (repo / "notes.txt").write_text("untracked\n")
    with open(files[2], "ab") as fh:
        fh.write(b"\n/* unstaged */\n")
    info = {"entries": count_entries(repo), "bytes": tree_bytes(repo),
            "git_dir_bytes": tree_bytes(repo / ".git")}
    pristine = work / "repo-pristine"
    subprocess.run(["cp", "-a", str(repo), str(pristine)], check=True)

    anchor = run.step(
        f"git -C {repo} bundle create -q {work}/repo.bundle --all && "
        f"tar -cf - -C {repo} . | zstd -1 -q -o {work}/repo.tar.zst")
    ours = run.step([*PY, "capture", "--json", f"git://{repo}"])
    backup = json.loads(ours.stdout)["id"]
    run.compare("git: capture", ours, {"git bundle+tar": anchor})
    again = run.step([*PY, "capture", f"git://{repo}"])
    run.compare("git: unchanged capture", again, {"git bundle+tar": anchor})

    shutil.rmtree(repo)
    restored = run.step([*PY, "restore", "--json", backup])
    info["restore_exact"] = same_tree(repo, pristine)
    shutil.rmtree(repo)
    anchor_restore = run.step(
        f"git clone -q --no-checkout {work}/repo.bundle {repo} && "
        f"zstd -dc -q {work}/repo.tar.zst | tar -xf - -C {repo}")
    run.compare("git: restore after rm -rf", restored, {"git clone+tar -x": anchor_restore},
                note="exact" if info["restore_exact"] else "RESTORED REPOSITORY DIFFERS")
    shutil.rmtree(repo)
    shutil.rmtree(pristine)
    return info


def memory(run: Run, work: Path, sizes: list[int]) -> list[dict[str, Any]]:
    out = []
    for n in sizes:
        root = work / f"mem-{n}"
        generate(root, n)
        home = work / f"mem-home-{n}"
        env = {**run.env, "PREIMAGE_HOME": str(home)}
        first = _common.measure([*PY, "capture", "--json", f"file://{root}"], env)
        backup = json.loads(first.stdout)["id"]
        again = _common.measure([*PY, "capture", f"file://{root}"], env)
        restic = work / f"mem-restic-{n}"
        subprocess.run(["restic", "init", "-q", "-r", str(restic)], env=env, check=True,
                       capture_output=True)
        rfirst = _common.measure(["restic", "-r", str(restic), "backup", "-q", str(root)], env)
        shutil.rmtree(root)
        restored = _common.measure([*PY, "restore", "--json", backup], env)
        out.append({"files": n, "capture_rss_mib": first.rss_mib, "capture_cpu": round(first.cpu, 2),
                    "recapture_rss_mib": again.rss_mib, "recapture_cpu": round(again.cpu, 2),
                    "restore_rss_mib": restored.rss_mib, "restore_cpu": round(restored.cpu, 2),
                    "restic_backup_rss_mib": rfirst.rss_mib, "restic_cpu": round(rfirst.cpu, 2)})
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(home)
        shutil.rmtree(restic)
    return out


def imap(messages: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, str(Path(__file__).parent / "bench_imap.py"), "--json",
                          "--messages", str(messages)], check=True, capture_output=True, text=True)
    steps = {r["step"]: r["seconds"] for r in json.loads(out.stdout)["rows"]}
    fetch, append = steps["plain IMAP fetch-all"], steps["plain IMAP append-all (MULTIAPPEND)"]
    return {"messages": messages, "steps": steps,
            "capture_vs_fetch_all": round(steps["preimage capture (cold)"] / fetch, 2),
            "restore_vs_append": round(steps["preimage restore (all expunged)"] / append, 2)}


def postgres(rows: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, str(Path(__file__).parent / "bench_postgres.py"),
                          "--json", "--rows", str(rows)], check=True, capture_output=True, text=True)
    res = json.loads(out.stdout)
    return {"rows": rows,
            "capture_vs_pg_dump": round(res["preimage_capture"]["seconds"]
                                        / res["pg_dump"]["seconds"], 2),
            "restore_vs_pg_restore": round(res["preimage_restore"]["seconds"]
                                           / res["pg_restore"]["seconds"], 2)}


def print_table(result: dict[str, Any]) -> None:
    load = result["load_before"]
    print(f"load {load} -> {result['load_after']} on {result['cpus']} CPUs "
          "(ratios are preimage / anchor, CPU seconds, same run)")
    t = result.get("tree")
    if t:
        print(f"tree: {t['entries']:,} entries, {t['bytes'] / 2**20:.1f} MiB; "
              f"store {t['store_bytes_first'] / 2**20:.1f} MiB, tar.zst {t['tar_zst_bytes'] / 2**20:.1f} MiB, "
              f"restic {t['restic_bytes_first'] / 2**20:.1f} MiB")
    g = result.get("git")
    if g:
        print(f"git: {g['entries']:,} entries, {g['bytes'] / 2**20:.1f} MiB "
              f"(.git {g['git_dir_bytes'] / 2**20:.1f} MiB)")
    print(f"{'step':28} {'cpu s':>7} {'wall s':>7} {'MiB':>5}  {'anchor':18} {'cpu s':>7} "
          f"{'wall s':>7} {'MiB':>5} {'ratio':>6} {'goal':>5}")
    for row in result["rows"]:
        first = True
        for anchor, a in row["anchors"].items():
            head = (f"{row['step']:28} {row['preimage_cpu']:7.2f} {row['preimage_wall']:7.2f}"
                    f" {row['preimage_rss_mib']:5}" if first else " " * 50)
            goal = a["goal"]
            mark = "" if goal is None else ("ok" if a["ratio_cpu"] <= goal else "MISS")
            print(f"{head}  {anchor:18} {a['cpu']:7.2f} {a['wall']:7.2f} {a['rss_mib']:5} "
                  f"{a['ratio_cpu']:6.2f} "
                  f"{'' if goal is None else f'{goal:.1f}':>5} {mark}")
            first = False
        if row["note"]:
            print(" " * 30 + row["note"])
    for m in result.get("memory", []):
        print(f"memory, {m['files']:>9,} files: capture {m['capture_rss_mib']} MiB "
              f"({m['capture_cpu']} s), re-capture {m['recapture_rss_mib']} MiB "
              f"({m['recapture_cpu']} s), restore {m['restore_rss_mib']} MiB "
              f"({m['restore_cpu']} s); restic backup {m['restic_backup_rss_mib']} MiB "
              f"({m['restic_cpu']} s)")
    if "imap" in result:
        i = result["imap"]
        print(f"imap, {i['messages']} messages: capture / fetch-all {i['capture_vs_fetch_all']}, "
              f"restore / APPEND {i['restore_vs_append']} (wall)")
    if "postgres" in result:
        p = result["postgres"]
        print(f"postgres, {p['rows']} rows: capture / pg_dump -Fc {p['capture_vs_pg_dump']}, "
              f"restore / pg_restore {p['restore_vs_pg_restore']} (wall)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=Path("/usr/include"),
                    help="a real tree to copy and capture (default /usr/include)")
    ap.add_argument("--files", type=int, default=0,
                    help="capture a generated tree of N small files instead of --tree")
    ap.add_argument("--mixed-mb", type=int, default=0,
                    help="capture a generated tree of mixed sizes, MB MiB in all, instead of --tree")
    ap.add_argument("--recaptures", type=int, default=3)
    ap.add_argument("--no-tree", action="store_true", help="leave the tree rows out")
    ap.add_argument("--no-git", action="store_true")
    ap.add_argument("--commits", type=int, default=200,
                    help="commits of history in the git repository")
    ap.add_argument("--memory", default="", help="comma-separated tree sizes for peak RSS")
    ap.add_argument("--imap", type=int, default=0, help="messages for the IMAP comparison")
    ap.add_argument("--postgres", type=int, default=0, help="rows for the PostgreSQL comparison")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    # a run stopped with kill (or a CI timeout) unwinds, so its temporary folder goes too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    result: dict[str, Any] = {"load_before": [round(x, 2) for x in os.getloadavg()],
                              "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="bench-capture-") as tmp:
        work = Path(tmp)
        # every step in its own process: a warm service would serve the later steps, and
        # their CPU time would be charged to it instead of the step measured
        env = {**os.environ, "PREIMAGE_HOME": str(work / "home"), "PREIMAGE_SERVICE": "off",
               "RESTIC_PASSWORD": "bench", "RESTIC_CACHE_DIR": str(work / "restic-cache")}
        run = Run(env)
        tree = make_tree(work, None if args.files else args.tree, args.files, args.mixed_mb)
        if not args.no_tree:
            result["tree"] = trees(run, work, tree, args.recaptures)
        if not args.no_git:
            env["PREIMAGE_HOME"] = str(work / "home-git")
            result["git"] = git_repo(run, work, args.commits)
        shutil.rmtree(tree, ignore_errors=True)
        if args.memory:
            result["memory"] = memory(run, work, [int(n) for n in args.memory.split(",")])
    if args.imap:
        result["imap"] = imap(args.imap)
    if args.postgres:
        result["postgres"] = postgres(args.postgres)
    result["rows"] = run.rows
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)


if __name__ == "__main__":
    main()
