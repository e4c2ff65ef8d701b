"""Helpers the benchmark scripts share: server launchers by path, and measured child processes."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def load_fixture(relative: str) -> Any:
    """Import the launcher ``fixtures/<relative>`` (the fixtures folder is not a package)."""
    name = "bench_fixture_" + relative.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, ROOT / "fixtures" / relative)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def installed_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` for timed ``preimage`` commands as an installed package runs them: with its
    bytecode compiled once (pip compiles it at install time) and written, not compiled
    again from source by every command."""
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", "import compileall, pathlib, preimage; "
                    "compileall.compile_dir(pathlib.Path(preimage.__file__).parent, quiet=1)"],
                   env=env, check=True)
    return env


@contextlib.contextmanager
def warm_process(env: dict[str, str], work: Path) -> Iterator[dict[str, str]]:
    """``env`` for ``preimage`` commands served by a warm process (docs/layer.md), as a
    user's second and later commands are: it is started (on a runtime directory of its
    own under ``work``) and waited for before anything is timed, and stopped after."""
    from preimage.services import warm as _warm

    runtime = work / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    warm = {k: v for k, v in env.items() if k != "PREIMAGE_SERVICE"}
    warm["PREIMAGE_RUNTIME_DIR"] = str(runtime)
    cli = [sys.executable, "-m", "preimage"]
    subprocess.run([*cli, "list"], env=warm, check=True, stdout=subprocess.DEVNULL)
    address = _warm.address(warm)
    end = time.monotonic() + 300
    while _warm.ask(address, "status") is None:
        if time.monotonic() > end:
            raise SystemExit("the warm process did not start")
        time.sleep(0.1)
    try:
        yield warm
    finally:
        subprocess.run([*cli, "serve", "--stop"], env=warm, stdout=subprocess.DEVNULL)


def _cpu_group(name: str) -> tuple[Path, Path] | None:
    """A new CPU-accounting cgroup (v2, else v1's ``cpuacct``): its folder and the file
    that holds its CPU used so far; ``None`` where this process may not make one."""
    # (where, the file that says this hierarchy is there, the group's CPU-used file)
    for root, marker, usage in ((Path("/sys/fs/cgroup"), "cgroup.controllers", "cpu.stat"),
                                (Path("/sys/fs/cgroup/cpuacct"), "cpuacct.usage",
                                 "cpuacct.usage")):
        if not (root / marker).exists():
            continue
        group = root / name
        try:
            group.mkdir()
        except OSError:
            return None
        return group, group / usage
    return None


def _group_cpu(usage: Path) -> float:
    text = usage.read_text()
    if usage.name == "cpu.stat":   # v2: "usage_usec N" among others
        fields = dict(line.split() for line in text.splitlines() if line.strip())
        return int(fields["usage_usec"]) / 1e6
    return int(text) / 1e9          # v1: nanoseconds


@contextlib.contextmanager
def served(env: dict[str, str], work: Path) -> Iterator[Any]:
    """A measure for ``preimage`` commands served by a warm process, as a user's commands
    are by default (the command's own process only passes it the work): its CPU is the
    client's (``wait4``) plus what the warm process and the child it forks for the command
    used meanwhile, read from a cgroup of their own.  Yields ``None`` where no cgroup can
    be made (not root, no CPU accounting): the served rows are then left out."""
    from preimage.services import warm as _warm

    made = _cpu_group(f"preimage-bench-{os.getpid()}")
    if made is None:
        yield None
        return
    group, usage = made
    try:
        with warm_process(env, work) as warm:
            status = _warm.ask(_warm.address(warm), "status")
            assert status is not None
            (group / "cgroup.procs").write_text(f"{status['pid']}\n")

            def measure_served(args: list[str], **more_env: str) -> Measured:
                before = _group_cpu(usage)
                client = measure(args, {**warm, **more_env})
                return Measured(client.wall, client.cpu + _group_cpu(usage) - before,
                                client.rss_mib, client.stdout)

            yield measure_served
    finally:
        end = time.monotonic() + 10
        while True:   # the warm process is gone once `serve --stop` returned; its last child may not be
            try:
                group.rmdir()
                break
            except OSError:
                if time.monotonic() > end:
                    break
                time.sleep(0.1)


def median(runs: list[tuple[float, int, str]]) -> tuple[float, int, str]:
    """Runs of one command as one: the median seconds, the highest peak, the last output."""
    seconds = sorted(r[0] for r in runs)
    mid = len(seconds) // 2
    middle = seconds[mid] if len(seconds) % 2 else (seconds[mid - 1] + seconds[mid]) / 2
    return middle, max(r[1] for r in runs), runs[-1][2]


def pair(res: dict[str, Any], label: str, ours: tuple[float, int, str],
         theirs: tuple[float, int, str]) -> None:
    """``res[label]``: preimage's and the tool's medians (seconds, peak MiB) and their ratio."""
    res[label] = {"preimage_s": round(ours[0], 2), "tool_s": round(theirs[0], 2),
                  "ratio": round(ours[0] / theirs[0], 2) if theirs[0] else None,
                  "preimage_peak_mib": ours[1], "tool_peak_mib": theirs[1]}


def pair_runs(res: dict[str, Any], label: str, ours: list[tuple[float, int, str]],
              theirs: list[tuple[float, int, str]]) -> None:
    """:func:`pair` of runs taken in turn (ours, theirs, ours, …), with the ratio taken pair
    by pair as well: its median and spread (lowest, highest).  On a shared machine whose
    speed drifts, the ratio of each pair (run a moment apart) is steadier than the ratio of
    the two medians."""
    pair(res, label, median(ours), median(theirs))
    ratios = sorted(o[0] / t[0] for o, t in zip(ours, theirs, strict=True) if t[0])
    if ratios:
        mid = len(ratios) // 2
        res[label]["pair_ratio"] = round(
            ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2, 2)
        res[label]["pair_spread"] = [round(ratios[0], 2), round(ratios[-1], 2)]


def print_ratios(res: dict[str, Any], headline: str, tool: str) -> None:
    """The table of ``res``'s :func:`pair` entries under ``headline`` (``tool``: the tool
    column's name); a restore's check, and the peak MiB of own-process rows."""
    print(headline)
    print("preimage commands run warm (a session's second and later), except 'own process' "
          "rows (a session's first); peak MiB: the command's own process only")
    print("ratio: of the medians; by pair: the median of the runs' ratios taken pair by pair "
          "(each preimage run beside the tool's next), with the lowest and highest")
    print(f"{'':30}{'preimage s':>11}{tool:>9}{'ratio':>7}{'by pair':>9}{'spread':>13}"
          f"{'peak MiB':>10}  check")
    for label, r in res.items():
        if not isinstance(r, dict) or "ratio" not in r:
            continue
        extra = "" if "exact" not in r else ("exact" if r["exact"] else "MISMATCH")
        peak = f"{r['preimage_peak_mib']:10d}" if "own process" in label else f"{'-':>10}"
        by_pair = f"{r['pair_ratio']:9.2f}" if "pair_ratio" in r else f"{'-':>9}"
        spread = (f"{r['pair_spread'][0]:6.2f}-{r['pair_spread'][1]:<6.2f}"
                  if "pair_spread" in r else f"{'-':>13}")
        print(f"{label:30}{r['preimage_s']:11.2f}{r['tool_s']:9.2f}{r['ratio']:7.2f}"
              f"{by_pair}{spread:>13}{peak}  {extra}")


def own_process(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a ``preimage`` command run in its own process (a session's first)."""
    return {**env, "PREIMAGE_SERVICE": "off"}


def timed_restore(backup_id: str, store: Any) -> tuple[float, Any, Any]:
    """``preimage.restore`` timed, then ``preimage.score``: (seconds, result, total score)."""
    import preimage

    start = time.perf_counter()
    result = preimage.restore(backup_id, store=store)
    seconds = time.perf_counter() - start
    total, _ = preimage.score(backup_id, store=store)
    return seconds, result, total


# GNU time reports the peak of the command it starts from its own small process.  The
# peak wait4 reports for a child of this (large) interpreter is never below the
# interpreter's own size: the kernel carries the parent's high-water mark into the
# child's across fork and exec.
GNU_TIME = "/usr/bin/time"


def _with_peak(argv: list[str], peak_file: str) -> list[str]:
    if not os.access(GNU_TIME, os.X_OK):
        raise SystemExit(f"{GNU_TIME} is missing: install Debian's 'time' package "
                         "(make setup does) to measure peak memory")
    return [GNU_TIME, "-q", "-f", "%M", "-o", peak_file, *argv]


def _read_peak_mib(peak_file: str) -> int:
    lines = Path(peak_file).read_text().split()
    return int(lines[-1]) // 1024 if lines else 0


def run(args: list[str], env: dict[str, str], stdin: bytes | None = None) -> tuple[float, int, str]:
    """Run ``args`` as a child process; return (seconds, its peak RSS in MiB, stdout).

    The peak is the command's own, as GNU time reads it; a non-zero exit stops the
    benchmark.
    """
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryFile() as inp, tempfile.NamedTemporaryFile() as peak:
        if stdin is not None:
            inp.write(stdin)
            inp.seek(0)
        proc = subprocess.Popen(_with_peak(args, peak.name), stdin=inp, stdout=out,
                                stderr=err, env=env)
        _, status, _usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode()
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(args[:3])} failed: {err.read().decode()[-2000:]}")
        rss_mib = _read_peak_mib(peak.name)
    return seconds, rss_mib, stdout


class Measured:
    """One child process run: wall seconds, CPU seconds (user + system, its children
    included), peak RSS in MiB, and its stdout."""

    def __init__(self, wall: float, cpu: float, rss_mib: int, stdout: str) -> None:
        self.wall = wall
        self.cpu = cpu
        self.rss_mib = rss_mib
        self.stdout = stdout


def measure(args: list[str], env: dict[str, str] | None = None, *, shell: bool = False) -> Measured:
    """Run ``args`` (a ``sh -c`` pipeline when ``shell``): CPU time with ``wait4``, the peak
    with GNU time.

    CPU time is the child's user + system time, including every process it waited
    for (both ends of a pipeline, every thread of a Go program): on a shared,
    loaded machine it is the comparable number; wall time is printed beside it.
    """
    argv = ["sh", "-c", args[0]] if shell else args
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile() as peak:
        proc = subprocess.Popen(_with_peak(argv, peak.name), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err,
                                env=env if env is not None else dict(os.environ))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{' '.join(argv[:4])} failed: {err.read().decode()[-2000:]}")
        stdout = out.read().decode()
        rss_mib = _read_peak_mib(peak.name)
    return Measured(wall, usage.ru_utime + usage.ru_stime, rss_mib, stdout)
