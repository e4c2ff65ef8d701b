"""What supervision costs: each workload run plainly and under ``preimage run``'s supervisor.

Run: python benchmarks/bench_observe.py [--scale 0.1] [--repeat 3] [--only rm,grep] [--post]

Workloads (sizes at ``--scale 1``, the issue's):

* ``git checkout`` between two commits of a 10,000-file repository (half the files differ);
* an offline ``pip install`` of a set of 40 local wheels into a fresh venv;
* ``tar -xf`` of a 20,000-file archive;
* ``rm -rf`` of 1 GB in 10,000 files;
* a read-only ``grep -r`` over 100,000 files.

Each round runs the workload plainly, then supervised by each loop (``--loops
python,compiled``: the Python loop and the compiled one, ``PREIMAGE_OBSERVE_LOOP``),
each from a fresh copy of its state (made untimed).  Printed per loop: the median
plain and supervised wall time, the median of the paired ratios (each supervised
run against the plain run of its round), the CPU ratio (the command's CPU time plus
the supervisor's, against the plain command's: steadier than wall time on a busy
machine), the extra time, the syscalls answered
(and how many of them the compiled loop answered without Python), the extra wall
time and the supervisor's own CPU time per answered syscall, and how far the
target is.  Targets from the issue: read-only ≤ 1.05x,
write-heavy ≤ 1.5x, ``rm -rf`` ≤ 100 ms more than plain.  ``--post`` adds
the post-call capture ``undo`` needs to the supervised time.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
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
        # a copy has new inodes and ctimes: refresh the index's stat cache untimed, so the
        # timed checkout writes files instead of re-reading all 10,000 to compare them
        subprocess.run(["git", "-C", str(work / "repo"), "update-index", "-q", "--refresh"],
                       check=False, stdout=subprocess.DEVNULL)

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



LOOPS = ("python", "compiled")   # PREIMAGE_OBSERVE_LOOP for each supervised run


@dataclass
class Runs:
    """One workload's runs: wall seconds per mode (plain and each loop), in run order."""

    wall: dict[str, list[float]]
    cpu: dict[str, list[float]]     # the supervisor's own CPU seconds (in this process)
    notified: dict[str, int]
    command_cpu: dict[str, list[float]] = field(default_factory=dict)   # the command's
    native: int = 0                 # syscalls the compiled loop answered itself
    stored: int = 0
    loop: str = ""                  # what the compiled runs said they ran on
    code: int | None = None         # the exit status every run must share

    def cpu_ratio(self, mode: str) -> float:
        """Median, over rounds, of (command + supervisor CPU) ÷ the plain command's CPU."""
        return statistics.median(
            (c + s) / max(p, 1e-9) for c, s, p in zip(
                self.command_cpu[mode], self.cpu[mode], self.command_cpu["plain"], strict=True))

    def ratio(self, mode: str) -> float:
        """Median of the paired ratios (each supervised run ÷ the plain run of its round)."""
        return statistics.median(w / p for w, p in zip(self.wall[mode], self.wall["plain"],
                                                       strict=True))


def measure(w: Workload, base: Path, store: Store, repeat: int, post: bool,
            loops: tuple[str, ...]) -> Runs:
    """Each round runs plain, then under each loop in turn, each from a fresh copy."""
    modes = ("plain", *loops)
    runs = Runs({m: [] for m in modes}, {m: [] for m in modes}, dict.fromkeys(modes, 0),
                {m: [] for m in modes})
    for round_ in range(repeat):
        # every other round in reverse order, so running first or last favours no mode
        for mode in (modes if round_ % 2 == 0 else modes[::-1]):
            work = Path(tempfile.mkdtemp(dir=base))
            w.setup(work)
            os.sync()   # the setup's dirty pages written back now, not during the timed run
            argv = w.argv(work)
            children = _children_cpu()
            if mode == "plain":
                started = time.perf_counter()
                code = subprocess.run(argv, cwd=work, check=False,
                                      stdout=subprocess.DEVNULL).returncode
                runs.wall[mode].append(time.perf_counter() - started)
                runs.cpu[mode].append(0.0)
            else:
                os.environ["PREIMAGE_OBSERVE_LOOP"] = mode
                cpu = time.process_time()
                started = time.perf_counter()
                out = run_command(argv, store=store, log=None, post_call=post, cwd=str(work),
                                  stdout=subprocess.DEVNULL)
                runs.wall[mode].append(time.perf_counter() - started)
                runs.cpu[mode].append(time.process_time() - cpu)
                code = out.returncode
                runs.notified[mode] = out.notified
                if mode == "compiled":
                    runs.native, runs.loop = out.native, out.loop
                    runs.stored = (store.catalog.get(out.backup_id).stored_bytes
                                   if out.backup_id else 0)
            runs.command_cpu[mode].append(_children_cpu() - children)
            shutil.rmtree(work, ignore_errors=True)
            first = runs.code if runs.code is not None else code
            if code != first:   # a run that ended otherwise did other work: no comparison
                sys.exit(f"{w.name} exited with {code} ({mode}), {first} before: the "
                         "comparison is void")
            runs.code = code
    os.environ.pop("PREIMAGE_OBSERVE_LOOP", None)
    return runs


def _children_cpu() -> float:
    """User + system CPU seconds of this process's waited-for children so far."""
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _target_gap(kind: str, plain: float, watched: float) -> str:
    if kind == "rm":
        over = (watched - plain) * 1000 - 100
        return "met" if over <= 0 else f"+{over:.0f} ms over"
    limit = 1.05 if kind == "read-only" else 1.5
    ratio = watched / plain
    return "met" if ratio <= limit else f"{ratio - limit:.2f}x over"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--scale", type=float, default=0.1, help="sizes x this (1: the issue's)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="comma list of workload name prefixes")
    ap.add_argument("--loops", default=",".join(LOOPS),
                    help="the supervisor loops to run (python, compiled; default both)")
    ap.add_argument("--post", action="store_true", help="include the post-call capture")
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    loops = tuple(x for x in args.loops.split(",") if x)
    base = args.workdir or Path(tempfile.mkdtemp(prefix="preimage-bench-observe-"))
    (base / "cache").mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    targets = {"read-only": "≤ 1.05x", "write-heavy": "≤ 1.5x", "rm": "≤ +100 ms"}
    rows = []
    with Store(base / "store") as store:
        for w in workloads(args.scale, base / "cache"):
            if args.only and not any(w.name.startswith(p) for p in args.only.split(",")):
                continue
            runs = measure(w, base, store, args.repeat, args.post, loops)
            plain = statistics.median(runs.wall["plain"])
            for mode in loops:
                watched = statistics.median(runs.wall[mode])
                extra = watched - plain
                n = runs.notified[mode]
                per = f"{extra / n * 1e6:.0f} µs" if n else "—"
                cpu = f"{statistics.median(runs.cpu[mode]) / n * 1e6:.0f} µs" if n else "—"
                native = f"{runs.native} in C" if mode == "compiled" else ""
                rows.append((w.name, mode, f"{plain:.2f}", f"{watched:.2f}",
                             f"{runs.ratio(mode):.2f}x", f"{runs.cpu_ratio(mode):.2f}x",
                             f"{extra * 1000:+.0f} ms",
                             f"{n} {native}".strip(), per, cpu, targets[w.kind],
                             _target_gap(w.kind, plain, watched)))
                print(f"... {w.name} [{mode}]: {plain:.2f} s plain, {watched:.2f} s supervised"
                      + (f" ({runs.loop})" if mode == "compiled" else ""),
                      file=sys.stderr, flush=True)
    head = ("workload", "loop", "plain s", "supervised s", "paired ratio", "CPU ratio", "extra",
            "syscalls answered", "extra wall per syscall", "supervisor CPU per syscall",
            "target", "how far")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"\nscale {args.scale}, median of {args.repeat} rounds (plain, then each loop), "
          f"post-call capture {'included' if args.post else 'not included'}; load average "
          f"before: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {os.cpu_count()} cores")
    shutil.rmtree(base, ignore_errors=True) if not args.workdir else None


if __name__ == "__main__":
    main()
