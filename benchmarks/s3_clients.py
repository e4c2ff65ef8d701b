"""Throughput of the S3 clients a remote store could use, against one SeaweedFS.

Usage: python benchmarks/s3_clients.py [--s3fs-python PATH] [--rounds N]

Starts SeaweedFS on loopback (fixtures/seaweedfs.py) and, for obstore, boto3
and s3fs in turn (each in its own process, the same bucket), times:
  small puts   N x 4 KiB objects (index files, configs)
  pack puts    16 MiB objects (packs)
  pack gets    the same objects read whole
  range gets   256 KiB ranges of them (one chunk read at restore)
and prints each client's rate and its ratio to obstore, with the load.
s3fs pins an aiobotocore that pins botocore, which often conflicts with the
newest boto3: give it a venv of its own with --s3fs-python.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_fixture

SMALL, PACK, RANGE = 4 << 10, 16 << 20, 256 << 10


def _client(name: str, endpoint: str, bucket: str) -> tuple[Any, Any, Any]:
    """(put(key, data), get(key), get_range(key, start, length)) for one client."""
    if name == "obstore":
        import obstore
        from obstore.store import S3Store

        st = S3Store(bucket, config={"endpoint": endpoint, "region": "us-east-1",
                                     "virtual_hosted_style_request": False},
                     client_options={"allow_http": True})
        return (lambda k, d: obstore.put(st, k, d),
                lambda k: bytes(obstore.get(st, k).bytes()),
                lambda k, s, n: bytes(obstore.get_range(st, k, start=s, length=n)))
    if name == "boto3":
        import boto3

        c = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        return (lambda k, d: c.put_object(Bucket=bucket, Key=k, Body=d),
                lambda k: c.get_object(Bucket=bucket, Key=k)["Body"].read(),
                lambda k, s, n: c.get_object(Bucket=bucket, Key=k,
                                             Range=f"bytes={s}-{s + n - 1}")["Body"].read())
    import s3fs

    fs = s3fs.S3FileSystem(endpoint_url=endpoint, client_kwargs={"region_name": "us-east-1"})
    return (lambda k, d: fs.pipe_file(f"{bucket}/{k}", d),
            lambda k: fs.cat_file(f"{bucket}/{k}"),
            lambda k, s, n: fs.cat_file(f"{bucket}/{k}", start=s, end=s + n))


def worker(name: str, endpoint: str, bucket: str, rounds: int) -> dict[str, float]:
    """Run the four measurements with one client; rates in ops/s and MB/s."""
    put, get, get_range = _client(name, endpoint, bucket)
    small = os.urandom(SMALL)
    packs = [os.urandom(PACK) for _ in range(rounds)]
    out: dict[str, float] = {}
    t = time.perf_counter()
    n_small = rounds * 50
    for i in range(n_small):
        put(f"{name}/small/{i}", small)
    out["small puts/s"] = n_small / (time.perf_counter() - t)
    t = time.perf_counter()
    for i, p in enumerate(packs):
        put(f"{name}/pack/{i}", p)
    out["pack put MB/s"] = rounds * PACK / (time.perf_counter() - t) / 1e6
    t = time.perf_counter()
    for i in range(rounds):
        assert len(get(f"{name}/pack/{i}")) == PACK
    out["pack get MB/s"] = rounds * PACK / (time.perf_counter() - t) / 1e6
    t = time.perf_counter()
    n_range = rounds * 16
    for i in range(n_range):
        assert len(get_range(f"{name}/pack/{i % rounds}", (i * RANGE) % (PACK - RANGE), RANGE)) == RANGE
    out["range gets/s"] = n_range / (time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--s3fs-python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--worker", nargs=3, metavar=("CLIENT", "ENDPOINT", "BUCKET"))
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker, args.rounds)))
        return
    sw = load_fixture("seaweedfs.py")
    with sw.SeaweedServer.start() as s3:
        s3.create_bucket("clients")
        env = {**os.environ, **s3.env()}
        results: dict[str, dict[str, float]] = {}
        for name in ("obstore", "boto3", "s3fs"):
            python = args.s3fs_python if name == "s3fs" else sys.executable
            proc = subprocess.run(
                [python, __file__, "--rounds", str(args.rounds), "--worker", name, s3.endpoint,
                 "clients"], capture_output=True, text=True, env=env, check=False)
            if proc.returncode != 0:
                print(f"{name}: failed: {proc.stderr.strip().splitlines()[-1:]}")
                continue
            results[name] = json.loads(proc.stdout)
    load = os.getloadavg()
    print(f"S3 clients against SeaweedFS on loopback (load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f})")
    metrics = list(next(iter(results.values())))
    print(f"{'':10}" + "".join(f"{m:>18}" for m in metrics))
    base = results.get("obstore")
    for name, r in results.items():
        cells = "".join(
            f"{r[m]:>10.1f} ({r[m] / base[m]:4.2f}x)" if base else f"{r[m]:>18.1f}" for m in metrics)
        print(f"{name:10}{cells}")


if __name__ == "__main__":
    main()
