"""Capture cost of the git and pip connectors: time, bytes stored, and the next capture's cost.

Usage: python benchmarks/bench_terminal.py [--files N] [--packages N] [--json]

git: a repository with N tracked files (default 10,000) in nested directories,
     with staged, unstaged, untracked and ignored changes; it times
       1. the first capture,
       2. a second capture of the unchanged repository,
       3. a capture after a small change (10 files edited, one commit),
       4. a restore after `git reset --hard && git clean -fdx`,
     and reports bytes stored (compressed, new to the store) for each.
pip: a virtualenv with N small local packages (default 100, ~6 files each),
     timing the same first / unchanged / after-`pip install -U` captures and
     the offline restore.

Everything is local: wheels are generated, nothing touches the network.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import preimage
from preimage import Store
from preimage.interface.sizes import human_bytes, tree_bytes

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402


def _wheels() -> Any:
    spec = importlib.util.spec_from_file_location(
        "preimage_fixture_wheels", ROOT / "fixtures" / "wheels.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def capture(uri: str, store: Store) -> dict[str, Any]:
    blobs0 = store.blobs.blobs_written
    backup = preimage.capture([uri], store=store)
    return {
        "seconds": round(backup.seconds, 3),
        "stored_bytes": backup.stored_bytes,
        "logical_bytes": backup.logical_bytes,
        "new_blobs": store.blobs.blobs_written - blobs0,
        "id": backup.id,
    }


def bench_git(work: Path, n: int) -> dict[str, Any]:
    repo = work / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for i in range(n):
        d = repo / "src" / f"pkg{i // 1000:02}" / f"mod{i // 100 % 10}"
        d.mkdir(parents=True, exist_ok=True)
        body = f'"""Module {i}."""\n\n' + "".join(f"VALUE_{j} = {i * j}\n" for j in range(i % 20 + 5))
        (d / f"file{i:05}.py").write_text(body)
    (repo / ".gitignore").write_text(".env.local\nbuild/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    files = sorted((repo / "src").rglob("*.py"))
    for p in files[:50]:
        p.write_text(p.read_text() + "# edited\n")
    for p in files[50:70]:
        p.write_text(p.read_text() + "# staged\n")
        git(repo, "add", str(p))
    (repo / "notes").mkdir()
    for i in range(100):
        (repo / "notes" / f"n{i}.txt").write_text(f"untracked note {i}\n")
    (repo / ".env.local").write_text("SECRET=1\n")
    (repo / "build").mkdir()
    for i in range(200):
        (repo / "build" / f"o{i}.bin").write_bytes(os.urandom(512))
    git(repo, "status")
    home = work / "home-git"
    store = Store(home)
    uri = f"git://{repo}"
    out: dict[str, Any] = {
        "tracked_files": n,
        "repo_bytes_on_disk": tree_bytes(repo),
        "git_dir_bytes_on_disk": tree_bytes(repo / ".git"),
    }
    out["first"] = capture(uri, store)
    out["unchanged"] = capture(uri, store)
    for p in files[100:110]:
        p.write_text(p.read_text() + "# small change\n")
    git(repo, "commit", "-q", "-am", "small change")
    out["after_small_change"] = capture(uri, store)
    backup_id = out["after_small_change"]["id"]
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    git(repo, "clean", "-q", "-fdx")
    seconds, result, total = _common.timed_restore(backup_id, store)
    out["restore_seconds"] = round(seconds, 3)
    out["restore_ok"] = result.ok
    out["score"] = {c: total.classes[c].score for c in ("content", "metadata")}
    out["store_bytes_on_disk"] = tree_bytes(home)
    store.close()
    return out


def bench_pip(work: Path, n: int) -> dict[str, Any]:
    wheels = _wheels()
    wh = work / "wheelhouse"
    for i in range(n):
        extra = {
            f"part{j}.py": f'"""Part {j} of package {i}."""\n\n'
            + "".join(
                f"def f_{os.urandom(4).hex()}(x):\n    return x * {k}\n\n" for k in range(40 + i % 40)
            )
            for j in range(3)
        }
        wheels.build_wheel(wh, f"pkg{i:03}", "1.0", extra_files=extra)
    wheels.build_wheel(wh, "pkg000", "2.0", extra_files={"new.py": "NEW = 2\n"})
    venv = work / "venv"
    python = wheels.make_venv(venv, with_pip=False)
    t = time.perf_counter()
    wheels.pip_install(python, wh, *[f"pkg{i:03}==1.0" for i in range(n)])
    install_seconds = time.perf_counter() - t
    home = work / "home-pip"
    store = Store(home)
    uri = f"pip://{venv}"
    site = next((venv / "lib").glob("python*/site-packages"))
    out: dict[str, Any] = {
        "packages": n,
        "site_packages_bytes_on_disk": tree_bytes(site),
        "pip_install_seconds": round(install_seconds, 3),
    }
    out["first"] = capture(uri, store)
    out["unchanged"] = capture(uri, store)
    backup_id = out["unchanged"]["id"]
    wheels.pip_install(python, wh, "pkg000", upgrade=True)
    out["after_upgrade"] = capture(uri, store)
    seconds, result, total = _common.timed_restore(backup_id, store)
    out["restore_seconds"] = round(seconds, 3)
    out["restore_ok"] = result.ok
    out["score"] = {c: total.classes[c].score for c in ("content", "metadata")}
    out["store_bytes_on_disk"] = tree_bytes(home)
    store.close()
    return out


def report(name: str, res: dict[str, Any], keys: list[str]) -> None:
    print(f"\n== {name}")
    for k, v in res.items():
        if k not in keys and not isinstance(v, dict):
            print(f"  {k:28} {human_bytes(v) if k.endswith('bytes_on_disk') else v}")
    print(f"  {'capture':20} {'seconds':>8} {'stored':>12} {'logical':>12} {'new blobs':>10}")
    for k in keys:
        r = res[k]
        print(
            f"  {k:20} {r['seconds']:8.2f} {human_bytes(r['stored_bytes']):>12} "
            f"{human_bytes(r['logical_bytes']):>12} {r['new_blobs']:>10}"
        )
    print(f"  score after restore: {res['score']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--packages", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if shutil.which("git") is None:
        sys.exit("git is not installed — run `bash fixtures/setup.sh`")
    work = Path(tempfile.mkdtemp(prefix="bench-terminal-"))
    env = {"GIT_CONFIG_GLOBAL": str(work / "gitconfig"), "GIT_CONFIG_NOSYSTEM": "1"}
    (work / "gitconfig").write_text("[user]\n\tname = Bench\n\temail = bench@example.invalid\n")
    os.environ.update(env)
    try:
        results = {"git": bench_git(work, args.files), "pip": bench_pip(work, args.packages)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    report(
        f"git: {args.files} tracked files", results["git"], ["first", "unchanged", "after_small_change"]
    )
    report(f"pip: {args.packages} packages", results["pip"], ["first", "unchanged", "after_upgrade"])


if __name__ == "__main__":
    main()
