"""Capture and restore throughput of the file connector, side by side with tar and rsync.

Usage: python benchmarks/bench_files.py [--small N] [--large N --large-mb M] [--json]

For each tree (N small files; a few large files) it times, in one run:
  capture:  preimage capture   vs  tar -cf (uncompressed) and tar --zstd -cf
  restore:  preimage restore   vs  tar -xf and rsync -aHAX from a pristine copy
and reports the bytes stored by a second, unchanged capture.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import preimage
from preimage import Store


def make_small(root: Path, n: int) -> int:
    total = 0
    for i in range(n):
        d = root / f"d{i // 100:03}"
        d.mkdir(parents=True, exist_ok=True)
        data = os.urandom(64) + (f"line {i}\n" * (i % 50 + 1)).encode()
        (d / f"f{i:05}.txt").write_bytes(data)
        total += len(data)
    return total


def make_large(root: Path, n: int, mb: int) -> int:
    root.mkdir(parents=True, exist_ok=True)
    block = os.urandom(1 << 20)
    text = (b"compressible log line 0123456789\n" * 32768)[: 1 << 20]
    for i in range(n):
        with open(root / f"big{i}.bin", "wb") as fh:
            for j in range(mb):
                fh.write(block if j % 2 else text)
    return n * mb << 20


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def run_case(name: str, build, work: Path) -> dict[str, object]:  # type: ignore[no-untyped-def]
    src = work / name
    nbytes = build(src)
    nfiles = sum(len(f) for _, _, f in os.walk(src))
    store = Store(work / f"home-{name}")
    res: dict[str, object] = {"case": name, "files": nfiles, "bytes": nbytes}

    backup = None

    def cap() -> None:
        nonlocal backup
        backup = preimage.capture([f"file://{src}"], store=store)

    res["preimage_capture_s"] = timed(cap)
    assert backup is not None
    res["stored_bytes_first"] = backup.stored_bytes
    second = preimage.capture([f"file://{src}"], store=store)
    res["stored_bytes_second_unchanged"] = second.stored_bytes
    res["second_capture_s"] = second.seconds
    tarball = work / f"{name}.tar"
    res["tar_cf_s"] = timed(lambda: subprocess.run(["tar", "-cf", str(tarball), "-C", str(work), name], check=True))
    res["tar_zstd_cf_s"] = timed(lambda: subprocess.run(
        ["tar", "--zstd", "-cf", str(tarball) + ".zst", "-C", str(work), name], check=True))
    res["tar_zstd_bytes"] = os.path.getsize(str(tarball) + ".zst")
    pristine = work / f"{name}-pristine"
    subprocess.run(["cp", "-a", str(src), str(pristine)], check=True)

    shutil.rmtree(src)
    res["preimage_restore_s"] = timed(lambda: preimage.restore(backup.id, store=store))
    total, _ = preimage.score(backup.id, store=store)
    res["restorable_score"] = total.restorable.score

    shutil.rmtree(src)
    res["tar_xf_s"] = timed(lambda: subprocess.run(["tar", "-xf", str(tarball), "-C", str(work)], check=True))
    shutil.rmtree(src)
    res["rsync_aHAX_s"] = timed(lambda: subprocess.run(
        ["rsync", "-aHAX", f"{pristine}/", f"{src}/"], check=True))
    mb = nbytes / (1 << 20)
    for key in ("preimage_capture_s", "tar_cf_s", "preimage_restore_s", "tar_xf_s", "rsync_aHAX_s"):
        res[key.replace("_s", "_MBps")] = round(mb / max(float(res[key]), 1e-9), 1)  # type: ignore[arg-type]
    store.close()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--large", type=int, default=3)
    ap.add_argument("--large-mb", type=int, default=64)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-files-") as tmp:
        work = Path(tmp)
        results = [
            run_case("small", lambda p: make_small(p, args.small), work),
            run_case("large", lambda p: make_large(p, args.large, args.large_mb), work),
        ]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    cols = [
        ("case", "case"), ("files", "files"), ("MiB", None),
        ("capture s", "preimage_capture_s"), ("tar -cf s", "tar_cf_s"), ("tar zstd s", "tar_zstd_cf_s"),
        ("restore s", "preimage_restore_s"), ("tar -xf s", "tar_xf_s"), ("rsync -aHAX s", "rsync_aHAX_s"),
        ("stored 1st", "stored_bytes_first"), ("tar.zst", "tar_zstd_bytes"),
        ("stored 2nd", "stored_bytes_second_unchanged"), ("2nd capture s", "second_capture_s"),
        ("score", "restorable_score"),
    ]
    print(" | ".join(c for c, _ in cols))
    for r in results:
        row = []
        for _, k in cols:
            if k is None:
                row.append(f"{int(r['bytes']) / (1 << 20):.1f}")  # type: ignore[call-overload]
            else:
                v = r[k]
                row.append(f"{v:.3f}" if isinstance(v, float) else str(v))
        print(" | ".join(row))


if __name__ == "__main__":
    main()
