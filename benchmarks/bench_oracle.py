"""What the schema oracle costs: capture and score with and without the dump tool beside them.

Usage: python benchmarks/bench_oracle.py [--repeat N] [--json]

Starts throw-away servers (fixtures/postgres.py, fixtures/mariadb.py), loads the sample
databases (pagila for PostgreSQL, chinook for MariaDB, from fixtures/samples/), and times,
in this process, ``preimage.capture`` of the whole database with the oracle on and with
``PREIMAGE_SCHEMA_ORACLE=off``, and ``preimage.score`` of each backup; beside them the dump
tool alone as a user would run it (``pg_dump --schema-only``, ``mariadb-dump --no-data
--routines --triggers --events``), and for one table of pagila (``?tables=public.rental``,
what a protected call's capture takes; ``pg_dump -t``).  Medians of ``--repeat`` runs (default 5).  The ratio
on ÷ off is what the oracle adds; it runs beside the capture, so on two busy cores it costs
up to the tool's own time.  Each score with the oracle must say the schemas are identical.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, last = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        last = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), last


def _case(uri: str, tool: list[str], tool_env: dict[str, str], repeat: int,
          store: Any) -> dict[str, Any]:
    import preimage

    out: dict[str, Any] = {}
    for label, switch in (("on", ""), ("off", "off")):
        os.environ["PREIMAGE_SCHEMA_ORACLE"] = switch
        seconds, backup = _timed(lambda: preimage.capture([uri], store=store), repeat)
        out[f"capture_{label}_s"] = round(seconds, 3)
        seconds, scored = _timed(lambda b=backup: preimage.score(b.id, store=store), repeat)
        out[f"score_{label}_s"] = round(seconds, 3)
        if label == "on":
            out["oracle"] = scored[0].oracles
            assert all("schema identical" in n for n in scored[0].oracles), scored[0].oracles
    os.environ.pop("PREIMAGE_SCHEMA_ORACLE", None)
    seconds, _ = _timed(lambda: subprocess.run(tool, env=tool_env, check=True,
                                               stdout=subprocess.DEVNULL), repeat)
    out["tool_s"] = round(seconds, 3)
    out["capture_ratio"] = round(out["capture_on_s"] / out["capture_off_s"], 2)
    out["score_ratio"] = round(out["score_on_s"] / out["score_off_s"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import preimage

    pg_fixture = _common.load_fixture("postgres.py")
    my_fixture = _common.load_fixture("mariadb.py")
    samples = _common.load_fixture("sql_samples.py")
    res: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as work:
        os.environ["PREIMAGE_HOME"] = str(Path(work) / "home")
        store = preimage.Store(Path(work) / "home")
        with pg_fixture.PostgresServer.start() as pg:
            os.environ["PREIMAGE_POSTGRESQL_PASSWORD"] = pg.password
            template = samples.load_postgres(pg, "pagila")
            pg.psql(f"CREATE DATABASE bench TEMPLATE {template}")
            res["postgres pagila"] = _case(
                pg.uri("bench"), [pg.tool("pg_dump"), "--schema-only", "bench"], pg.env(),
                args.repeat, store)
            # what a protected call captures: the one table its SQL touches (pg_dump -t)
            res["postgres pagila table"] = _case(
                pg.uri("bench", query="tables=public.rental"),
                [pg.tool("pg_dump"), "--schema-only", "-t", "public.rental", "bench"],
                pg.env(), args.repeat, store)
        with my_fixture.MariaDBServer.start() as my:
            os.environ["MYSQL_PWD"] = my.password
            name = samples.load_mariadb(my, "chinook")
            res["mariadb chinook"] = _case(
                my.uri(name), ["mariadb-dump", *my._conn_args(), "--no-data", "--routines",
                               "--triggers", "--events", "--databases", name],
                my.env(), args.repeat, store)
        store.close()
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(f"schema oracle cost, medians of {args.repeat}; load {os.getloadavg()[0]:.1f}")
    print(f"{'':22}{'capture on':>11}{'off':>7}{'ratio':>7}{'score on':>10}{'off':>7}"
          f"{'ratio':>7}{'tool alone':>11}")
    for label, r in res.items():
        print(f"{label:22}{r['capture_on_s']:11.3f}{r['capture_off_s']:7.3f}"
              f"{r['capture_ratio']:7.2f}{r['score_on_s']:10.3f}{r['score_off_s']:7.3f}"
              f"{r['score_ratio']:7.2f}{r['tool_s']:11.3f}")


if __name__ == "__main__":
    main()
