"""What supervision costs: each workload run plainly and under ``preimage run``'s supervisor.

Run: python benchmarks/bench_observe.py [--scale 0.1] [--repeat 3] [--only rm,grep] [--post]

Workloads (sizes at ``--scale 1``, the issue's):

* ``git checkout`` between two commits of a 10,000-file repository (half the files differ);
* an offline ``pip install`` of a set of 40 local wheels into a fresh venv;
* ``tar -xf`` of a 20,000-file archive;
* ``rm -rf`` of 1 GB in 10,000 files;
* a read-only ``grep -r`` over 100,000 files.

Each run starts from a fresh copy of its state (made untimed).  Printed: the
median plain and supervised wall time, their ratio, the extra time, the
syscalls the supervisor answered and the extra time per answered syscall, and
what the observed backup stored.  Targets from the issue: read-only ≤ 1.05x,
write-heavy ≤ 1.5x, ``rm -rf`` ≤ 100 ms more than plain.  ``--post`` adds
the post-call capture ``undo`` needs to the supervised time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import load_fixture  # noqa: E402

from preimage import Store  # noqa: E402
from preimage.observe import run_command  # noqa: E402


@dataclass
class Workload:
    """A command, the state it runs on (made by ``setup`` in a fresh directory)."""

    name: str
    kind: str   # read-only | write-heavy | rm
    setup: Callable[[Path], None]
    argv: Callable[[Path], list[str]]


def _files(root: Path, count: int, size: int, *, seed: str = "") -> None:
    for i in range(count):
        d = root / f"d{i // 500:03d}"
        d.mkdir(parents=True, exist_ok=True)
        body = (f"{seed} file {i}\n" * (size // 16 + 1)).encode()[:size]
        (d / f"f{i:06d}.txt").write_bytes(body)


def workloads(scale: float, cache: Path) -> list[Workload]:
    """The five workloads at ``scale`` (templates are built once in ``cache``)."""
    n_git, n_tar, n_rm, n_grep = (max(10, int(n * scale)) for n in (10_000, 20_000, 10_000,
                                                                      100_000))
    rm_size = 100_000   # 10,000 x 100 kB = 1 GB at scale 1

    def git_template() -> Path:
        repo = cache / "git"
        if not repo.exists():
            repo.mkdir()
            env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x",
                   "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"}
            _files(repo, n_git, 200, seed="one")
            subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
            subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
            subprocess.run(["git", "commit", "-qm", "one"], cwd=repo, check=True, env=env)
            subprocess.run(["git", "tag", "one"], cwd=repo, check=True)
            _files(repo, n_git // 2, 200, seed="two")
            subprocess.run(["git", "commit", "-qam", "two"], cwd=repo, check=True, env=env)
        return repo

    def wheel_template() -> Path:
        house = cache / "wheels"
        if not house.exists():
            wheels = load_fixture("wheels.py")
            house.mkdir()
            for i in range(40):
                wheels.build_wheel(house, f"benchpkg{i}", "1.0",
                                   extra_files={f"benchpkg{i}/data{k}.py": f"X = {k}\n" * 50
                                                for k in range(20)})
        return house

    def tar_template() -> Path:
        archive = cache / "tree.tar"
        if not archive.exists():
            src = cache / "tar-src"
            _files(src, n_tar, 400)
            with tarfile.open(archive, "w") as tar:
                tar.add(src, arcname="tree")
            shutil.rmtree(src)
        return archive

    def grep_template() -> Path:
        tree = cache / "grep"
        if not tree.exists():
            _files(tree, n_grep, 300)
        return tree

    def git_setup(work: Path) -> None:
        subprocess.run(["cp", "-a", str(git_template()), str(work / "repo")], check=True)

    def pip_setup(work: Path) -> None:
        wheel_template()
        subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True)

    def rm_setup(work: Path) -> None:
        _files(work / "big", n_rm, rm_size)

    return [
        Workload(f"git checkout ({n_git} files)", "write-heavy", git_setup,
                 lambda w: ["git", "-C", str(w / "repo"), "checkout", "-q", "one"]),
        Workload("pip install (40 wheels, fresh venv)", "write-heavy", pip_setup,
                 lambda w: [str(w / "venv" / "bin" / "pip"), "install", "-q", "--no-index",
                            "--no-cache-dir", "--find-links", str(wheel_template()),
                            *[f"benchpkg{i}" for i in range(40)]]),
        Workload(f"tar -xf ({n_tar} files)", "write-heavy", lambda w: None,
                 lambda w: ["tar", "-xf", str(tar_template()), "-C", str(w)]),
        Workload(f"rm -rf ({n_rm * rm_size // 1_000_000} MB in {n_rm} files)", "rm", rm_setup,
                 lambda w: ["rm", "-rf", str(w / "big")]),
        Workload(f"grep -r ({n_grep} files)", "read-only", lambda w: None,
                 lambda w: ["grep", "-rq", "no such text anywhere", str(grep_template())]),
    ]



def measure(w: Workload, base: Path, store: Store, repeat: int, post: bool
            ) -> tuple[float, float, int, int]:
    """Medians of plain and supervised seconds; syscalls answered; bytes stored."""
    plain: list[float] = []
    watched: list[float] = []
    notified = stored = 0
    for _ in range(repeat):
        for supervised in (False, True):
            work = Path(tempfile.mkdtemp(dir=base))
            w.setup(work)
            argv = w.argv(work)
            started = time.perf_counter()
            if supervised:
                out = run_command(argv, store=store, log=None, post_call=post, cwd=str(work),
                                  stdout=subprocess.DEVNULL)
                watched.append(time.perf_counter() - started)
                notified = out.notified
                stored = store.catalog.get(out.backup_id).stored_bytes if out.backup_id else 0
            else:
                subprocess.run(argv, cwd=work, check=False, stdout=subprocess.DEVNULL)
                plain.append(time.perf_counter() - started)
            shutil.rmtree(work, ignore_errors=True)
    return statistics.median(plain), statistics.median(watched), notified, stored


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--scale", type=float, default=0.1, help="sizes x this (1: the issue's)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="comma list of workload name prefixes")
    ap.add_argument("--post", action="store_true", help="include the post-call capture")
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    base = args.workdir or Path(tempfile.mkdtemp(prefix="preimage-bench-observe-"))
    (base / "cache").mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    targets = {"read-only": "≤ 1.05x", "write-heavy": "≤ 1.5x", "rm": "≤ +100 ms"}
    rows = []
    with Store(base / "store") as store:
        for w in workloads(args.scale, base / "cache"):
            if args.only and not any(w.name.startswith(p) for p in args.only.split(",")):
                continue
            plain, watched, notified, stored = measure(w, base, store, args.repeat, args.post)
            extra = watched - plain
            per = extra / notified * 1e6 if notified else 0.0
            rows.append((w.name, f"{plain:.2f}", f"{watched:.2f}", f"{watched / plain:.2f}x",
                         f"{extra * 1000:+.0f} ms", str(notified), f"{per:.0f} µs",
                         f"{stored / 1e6:.1f} MB", targets[w.kind]))
            print(f"... {w.name}: {plain:.2f} s plain, {watched:.2f} s supervised",
                  file=sys.stderr, flush=True)
    head = ("workload", "plain s", "supervised s", "ratio", "extra", "syscalls answered",
            "extra per syscall", "stored", "target")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"\nscale {args.scale}, median of {args.repeat}, post-call capture "
          f"{'included' if args.post else 'not included'}; load average before: "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {os.cpu_count()} cores")
    shutil.rmtree(base, ignore_errors=True) if not args.workdir else None


if __name__ == "__main__":
    main()
