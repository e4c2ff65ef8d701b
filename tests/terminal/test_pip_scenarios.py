"""The pip regret scenario (T-pip-upgrade), end to end through the CLI, offline."""

from __future__ import annotations

import base64
import csv
import hashlib
import subprocess
from collections.abc import Callable
from pathlib import Path

from terminal_kit import as_json, wheels

CliResult = subprocess.CompletedProcess[str]

# Any attempt to reach an index would go to a closed port and fail.
OFFLINE = {
    "http_proxy": "http://127.0.0.1:9",
    "https_proxy": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
    "no_proxy": "",
}


def record_mismatches(venv: Path) -> list[str]:
    """Files whose bytes do not match their distribution's RECORD hash."""
    site = next((venv / "lib").glob("python*/site-packages"))
    bad = []
    for record in site.glob("*.dist-info/RECORD"):
        for row in csv.reader(record.read_text().splitlines()):
            if len(row) < 2 or not row[1]:
                continue
            path = (site / row[0]).resolve()
            digest = hashlib.sha256(path.read_bytes()).digest()
            if "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != row[1]:
                bad.append(row[0])
    return bad


def run_python(venv: Path, code: str) -> str:
    """stdout of the environment's python running ``code``."""
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_pip_upgrade_is_undone_exactly_and_offline(
    venv_with_pip: Path, wheelhouse: Path, cli: Callable[..., CliResult]
) -> None:
    """`pip install -U liba` replaced the pinned 5.9.0 and pulled in libb; restore undoes both, offline."""
    venv = venv_with_pip
    python = venv / "bin" / "python"
    before = wheels.pip_freeze(python)
    assert "liba==5.9.0" in before
    backup_id = cli("capture", f"pip://{venv}", check=True).stdout.strip()

    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--find-links",
            str(wheelhouse),
            "--upgrade",
            "liba",
        ],
        check=True,
        capture_output=True,
    )
    upgraded = wheels.pip_freeze(python)
    assert "liba==5.10.0" in upgraded and "libb==1.0" in upgraded

    result = as_json(cli("restore", backup_id, "--json", check=True, env=OFFLINE))
    assert result["ok"]
    actions = {i["key"]: i["outcome"] for r in result["reports"] for i in r["items"]}
    assert actions["liba"] == "restored" and actions["libb"] == "removed"

    doc = as_json(cli("score", backup_id, "--json", check=True))
    assert doc["content"] == 1.0, doc["differences"]
    assert doc["metadata"] == 1.0, doc["differences"]
    assert wheels.pip_freeze(python) == before
    assert record_mismatches(venv) == []
    assert (
        run_python(venv, "import liba, liba.config; print(liba.__version__, liba.config.PINNED)")
        == "5.9.0 True"
    )
    assert not (venv / "bin" / "libb-tool").exists()
    # pip itself still works and agrees
    check = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
