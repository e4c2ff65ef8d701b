"""Running pip against a target environment, offline.

Which pip runs: the environment's own (``<python> -m pip``) when it has one;
otherwise the pip of the interpreter preimage runs on, pointed at the
environment with ``--python`` (pip >= 22.3) — so an environment created
``--without-pip`` (or whose pip an agent uninstalled) is restored all the
same.  When neither exists the restore stops with a message saying to
install pip next to preimage.

Every call is ``--isolated`` (no user config or ``PIP_*`` variables can add
an index), installs are ``--no-index --find-links <dir> --no-deps``: the
wheels built from the backup are the only source, and the dependency set is
exactly the captured one.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from preimage.interface.errors import RestoreError, TerminalConnectorError

_COMMON = ("--isolated", "--disable-pip-version-check", "--no-input")


def _has_pip(python: str) -> bool:
    proc = subprocess.run(
        [python, "-I", "-c", "import pip"], capture_output=True, timeout=60, check=False
    )
    return proc.returncode == 0


def pip_command(interpreter: Path, target: str) -> list[str]:
    """The command prefix that runs pip for ``interpreter``.

    Raises :class:`TerminalConnectorError` when neither the environment nor
    preimage's own interpreter has pip.
    """
    if _has_pip(str(interpreter)):
        return [str(interpreter), "-I", "-m", "pip"]
    if _has_pip(sys.executable):
        return [sys.executable, "-I", "-m", "pip", "--python", str(interpreter)]
    raise TerminalConnectorError(
        f"no pip to restore {interpreter} with: the environment has none and neither has "
        f"{sys.executable} — install pip next to preimage (python -m ensurepip) and restore again",
        target=target,
    )


def run_pip(command: Sequence[str], args: Sequence[str], what: str) -> str:
    """Run pip; raise :class:`RestoreError` with its output when it fails."""
    proc = subprocess.run([*command, *args], capture_output=True, text=True, timeout=1800, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip())[-1500:]
        raise RestoreError(f"pip could not {what}: {tail}")
    return proc.stdout


def install(
    command: Sequence[str], wheel_dir: Path, requirements: Sequence[str], *, compile: bool
) -> None:
    """Install exactly ``requirements`` from the wheels in ``wheel_dir``, replacing other versions."""
    if not requirements:
        return
    args = [
        "install",
        *_COMMON,
        "--no-index",
        "--find-links",
        str(wheel_dir),
        "--no-deps",
        "--force-reinstall",
        "--no-warn-script-location",
        "--no-warn-conflicts",
    ]
    if not compile:
        args.append("--no-compile")
    run_pip(command, [*args, *requirements], "install " + ", ".join(requirements))


def uninstall(command: Sequence[str], names: Sequence[str]) -> None:
    """Uninstall ``names`` (pip removes exactly the files their RECORDs list)."""
    if names:
        run_pip(command, ["uninstall", *_COMMON, "-y", *names], "uninstall " + ", ".join(names))
