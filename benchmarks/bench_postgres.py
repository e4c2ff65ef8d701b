"""Capture and restore side by side with pg_dump -Fc / pg_restore, with ratios, in one run.

Usage: python benchmarks/bench_postgres.py [--rows N] [--type-rows N] [--types a,b] [--repeat N]
                                          [--sample-repeat N] [--score] [--json]

Starts a throw-away server (fixtures/postgres.py) and measures each command as a process
of its own, ``--repeat`` times (default 3), preimage's and the tool's runs in turn; the
medians are compared, and the ratios of the runs taken pair by pair are printed as a
median with their spread (the whole pagila, which is quick, runs ``--sample-repeat`` times,
default 9).  ``preimage``
commands are served by a warm process (docs/layer.md), as a session's second and later
commands are; the 1M-row table is also measured with each command in its own process
(``PREIMAGE_SERVICE=off``, as a session's first), whose peak RSS is read with GNU time:

* ``table``: ``public.events`` with N rows (``--rows 0``: left out; default 1,000,000; identity key, an index, a
  check constraint, text, numeric, jsonb, timestamptz): ``preimage capture
  …?tables=public.events`` vs ``pg_dump -Fc -t public.events``; after ``DROP TABLE``,
  ``preimage restore`` vs ``pg_restore --single-transaction``;
* ``types``: one table per column type (int, text, numeric, jsonb, timestamptz, bytea,
  uuid), ``--type-rows`` rows each (default 1,000,000; ``--types`` picks some, ``--type-rows
  0`` none), the same four commands;
* ``sample``: the whole pagila database (fixtures/samples/): ``preimage capture`` of the
  database vs ``pg_dump -Fc``; after ``DROP DATABASE``, ``preimage restore`` vs
  ``pg_restore --create``.

Every restore is checked (row counts, sums, sequence state; for the sample, pg_dump of
the restored database equals the original's).  Ratios are preimage ÷ pg_dump/pg_restore:
below 1.0 preimage is faster.  The machine's load is printed with them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402

run = _common.run

SEED = """
CREATE TABLE public.events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account int NOT NULL,
    kind text NOT NULL,
    amount numeric(12,2) CHECK (amount >= 0),
    payload jsonb,
    created timestamptz NOT NULL DEFAULT now());
CREATE INDEX events_account ON public.events (account);
INSERT INTO public.events (account, kind, amount, payload, created)
SELECT g % 5000, (ARRAY['view','click','buy','refund'])[1 + g % 4], (g % 100000) / 100.0,
       jsonb_build_object('session', md5(g::text), 'n', g),
       timestamptz '2024-01-01' + g * interval '1 second'
FROM generate_series(1, {rows}) g;
ANALYZE public.events;
"""

CHECK = ("SELECT count(*), sum(id), sum(amount), "
         "(SELECT last_value FROM public.events_id_seq) FROM public.events")

TYPES = {
    "int": "g",
    "text": "repeat(md5(g::text), 2)",
    "numeric": "(g * 12345.6789)::numeric(18,4)",
    "jsonb": "jsonb_build_object('k', g, 'tags', jsonb_build_array('a', g % 7))",
    "timestamptz": "timestamptz '2020-01-01' + g * interval '7 seconds'",
    "bytea": "decode(md5(g::text), 'hex')",
    "uuid": "md5(g::text)::uuid",
}


def bench_table(pg: Any, env: dict[str, str], work: Path, name: str, check: str,
                res: dict[str, Any], key: str, repeat: int, *, own: bool = False) -> None:
    """capture vs pg_dump -Fc -t, then (after DROP TABLE) restore vs pg_restore, ``repeat``
    times (medians); with ``own``, also with each command in its own process (a session's
    first command)."""
    cli = [sys.executable, "-m", "preimage"]
    uri = pg.uri("bench", query=f"tables={name}")
    expected = pg.psql(check, "bench").strip()
    dump = work / f"{key}.dump"
    for label, cmd_env in ([(", own process", _common.own_process(env))] if own else []) + [
            ("", env)]:
        times: dict[str, list[Any]] = {"cap": [], "pgd": [], "rest": [], "pgr": []}
        ok = True
        for _ in range(repeat):
            times["cap"].append(cap := run([*cli, "capture", "--json", uri], cmd_env))
            backup = json.loads(cap[2])
            times["pgd"].append(run([pg.tool("pg_dump"), "-Fc", "-t", name, "-f", str(dump),
                                     "bench"], env))
            pg.psql(f"DROP TABLE {name}", "bench")
            times["rest"].append(run([*cli, "restore", "--json", backup["id"]], cmd_env))
            ok = ok and pg.psql(check, "bench").strip() == expected
            pg.psql(f"DROP TABLE {name}", "bench")
            times["pgr"].append(run([pg.tool("pg_restore"), "--single-transaction", "-d",
                                     "bench", str(dump)], env))
            ok = ok and pg.psql(check, "bench").strip() == expected
        _common.pair_runs(res, f"{key} capture{label}", times["cap"], times["pgd"])
        _common.pair_runs(res, f"{key} restore{label}", times["rest"], times["pgr"])
        res[f"{key} restore{label}"]["exact"] = ok
    res[f"{key} capture"]["stored_mib"] = round(backup["stored_bytes"] / 2**20, 1)
    res[f"{key} capture"]["dump_mib"] = round(dump.stat().st_size / 2**20, 1)


def bench_sample(pg: Any, env: dict[str, str], work: Path, res: dict[str, Any],
                 repeat: int) -> None:
    """Whole pagila: capture vs pg_dump -Fc, restore vs pg_restore --create (medians)."""
    samples = _common.load_fixture("sql_samples.py")
    template = samples.load_postgres(pg, "pagila")
    pg.psql(f"CREATE DATABASE pagila TEMPLATE {template}")
    plain = [pg.tool("pg_dump"), "--no-sync", "pagila"]
    before = _strip(run(plain, env)[2])
    cli = [sys.executable, "-m", "preimage"]
    dump = work / "pagila.dump"
    times: dict[str, list[Any]] = {"cap": [], "pgd": [], "rest": [], "pgr": []}
    same = True
    for _ in range(repeat):
        times["cap"].append(cap := run([*cli, "capture", "--json", pg.uri("pagila")], env))
        times["pgd"].append(run([pg.tool("pg_dump"), "-Fc", "-f", str(dump), "pagila"], env))
        pg.psql("DROP DATABASE pagila")
        times["rest"].append(run([*cli, "restore", "--json", json.loads(cap[2])["id"]], env))
        same = same and _strip(run(plain, env)[2]) == before
        pg.psql("DROP DATABASE pagila")
        times["pgr"].append(run([pg.tool("pg_restore"), "--create", "-d", "postgres",
                                 str(dump)], env))
    _common.pair_runs(res, "pagila capture", times["cap"], times["pgd"])
    _common.pair_runs(res, "pagila restore", times["rest"], times["pgr"])
    res["pagila restore"]["exact"] = same


def _strip(dump: str) -> str:
    return "\n".join(x for x in dump.splitlines()
                     if not x.startswith(("\\restrict ", "\\unrestrict ")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--type-rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each command; the medians are compared (default 3)")
    parser.add_argument("--types", default=",".join(TYPES),
                        help="column types to measure, comma-separated (default: all)")
    parser.add_argument("--sample-repeat", type=int, default=9,
                        help="runs of each command on pagila (default 9)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--score", action="store_true",
                        help="also time `preimage score` of the big table (per-row scoring)")
    args = parser.parse_args()
    fixture = _common.load_fixture("postgres.py")
    work = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    pg = fixture.PostgresServer.start()
    res: dict[str, Any] = {"rows": args.rows, "type_rows": args.type_rows}
    with contextlib.ExitStack() as stack:
        # the work folder goes last, after the server and the warm process have stopped
        stack.callback(shutil.rmtree, work, True)
        stack.callback(pg.stop)
        pg.psql("CREATE DATABASE bench")
        env = stack.enter_context(_common.warm_process(_common.installed_env(
            pg.env() | {"PREIMAGE_HOME": str(work / "home"),
                        "PREIMAGE_POSTGRESQL_PASSWORD": pg.password}), work))
        t0 = time.perf_counter()
        pg.psql(SEED.format(rows=args.rows), "bench")
        res["seed_seconds"] = round(time.perf_counter() - t0, 1)
        if args.rows:
            bench_table(pg, env, work, "public.events", CHECK, res, "table", args.repeat,
                        own=True)
        if args.score and args.rows:
            backup = json.loads(run([sys.executable, "-m", "preimage", "capture", "--json",
                                     pg.uri("bench", query="tables=public.events")], env)[2])
            s, mem, out = run([sys.executable, "-m", "preimage", "score", "--json",
                               backup["id"]], env)
            res["score"] = {"seconds": round(s, 2), "peak_mib": mem,
                            "restorable": json.loads(out)["restorable"]["score"]}
        for typ in [t for t in args.types.split(",") if t] if args.type_rows else []:
            expr = TYPES[typ]
            name = f"public.t_{typ}"
            pg.psql(f"CREATE TABLE {name} (id int PRIMARY KEY, v {typ}); INSERT INTO {name} "
                    f"SELECT g, {expr} FROM generate_series(1, {args.type_rows}) g", "bench")
            check = f"SELECT count(*), md5(string_agg(v::text, ',' ORDER BY id)) FROM {name}"
            bench_table(pg, env, work, name, check, res, typ, args.repeat)
        bench_sample(pg, env, work, res, args.sample_repeat)
    res["load"] = os.getloadavg()
    if args.json:
        print(json.dumps(res, indent=2))
        return
    _common.print_ratios(res, f"PostgreSQL: table {args.rows:,} rows, {args.type_rows:,} per "
                         f"type; {args.repeat} runs each ({args.sample_repeat} on pagila); "
                         f"load average {res['load'][0]:.1f} on {os.cpu_count()} cores", "pg_* s")
    if "score" in res:
        print(f"preimage score of the table: {res['score']['seconds']:.2f}s")


if __name__ == "__main__":
    main()
