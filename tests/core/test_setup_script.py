"""fixtures/setup.sh runs the scripts marked ``# setup: background`` beside the others.

Each test copies the real setup.sh beside a ``setup.d`` of small scripts made for it, so
what is checked is the runner itself: the background scripts run while the foreground ones
do, a failing one fails the run with its output shown, and a run that stops early stops
them.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

SETUP = Path(__file__).resolve().parents[2] / "fixtures" / "setup.sh"


def _setup_dir(tmp_path: Path, scripts: dict[str, str]) -> Path:
    """A copy of setup.sh with a ``setup.d`` holding ``scripts`` (name → text)."""
    root = tmp_path / "fixtures"
    (root / "setup.d").mkdir(parents=True)
    shutil.copy(SETUP, root / "setup.sh")
    for name, text in scripts.items():
        (root / "setup.d" / name).write_text(text)
    return root


def _run(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(root / "setup.sh")], capture_output=True, text=True,
                          timeout=120, check=False)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie nobody reaped counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_background_script_runs_while_the_foreground_waits_for_it(tmp_path: Path) -> None:
    """A foreground script can see a background script's work before setup ends."""
    flag = tmp_path / "built"
    root = _setup_dir(tmp_path, {
        "10-wait.sh": f"for i in $(seq 600); do [ -e {flag} ] && exit 0; sleep 0.1; done; "
                      "echo never saw it >&2; exit 1\n",
        "50-build.sh": f"# setup: background\necho building; touch {flag}\n",
    })
    run = _run(root)
    assert run.returncode == 0, run.stderr
    assert "setup: in the background: 50-build.sh" in run.stderr
    assert "building" in run.stderr        # the background output is shown at the end


def test_a_failing_background_script_fails_the_run_and_the_next_one_still_runs(
        tmp_path: Path) -> None:
    """One background script failing fails setup, names it, and the scripts after it run."""
    root = _setup_dir(tmp_path, {
        "10-fine.sh": "echo foreground ran\n",
        "50-broken.sh": "# setup: background\necho the compiler said no >&2; false\n",
        "55-next.sh": "# setup: background\necho the next build ran\n",
    })
    run = _run(root)
    assert run.returncode != 0
    assert "the compiler said no" in run.stderr
    assert "setup: 50-broken.sh failed" in run.stderr
    assert "the next build ran" in run.stderr


def test_a_failing_foreground_script_stops_the_background_ones(tmp_path: Path) -> None:
    """When a foreground script fails, setup fails and no background build is left running."""
    pid_file = tmp_path / "pid"
    finished = tmp_path / "finished"
    root = _setup_dir(tmp_path, {
        "10-broken.sh": f"for i in $(seq 600); do [ -s {pid_file} ] && break; sleep 0.1; done; "
                        "false\n",
        "50-long.sh": f"# setup: background\nsleep 300 & echo $! > {pid_file}.tmp; "
                      f"mv {pid_file}.tmp {pid_file}; wait; touch {finished}\n",
    })
    run = _run(root)
    assert run.returncode != 0
    sleeper = int(pid_file.read_text())
    for _ in range(600):                  # the TERM is delivered; its exit is polled for
        if not _alive(sleeper):
            break
        time.sleep(0.1)
    assert not _alive(sleeper)
    assert not finished.exists()
