"""Capture and restore side by side with pg_dump -Fc / pg_restore, with ratios, in one run.

Usage: python benchmarks/bench_postgres.py [--rows N] [--type-rows N] [--score] [--json]

Starts a throw-away server (fixtures/postgres.py) and measures, each command as its own
process (peak RSS read with ``wait4``):

* ``table``: ``public.events`` with N rows (default 1,000,000; identity key, an index, a
  check constraint, text, numeric, jsonb, timestamptz): ``preimage capture
  …?tables=public.events`` vs ``pg_dump -Fc -t public.events``; after ``DROP TABLE``,
  ``preimage restore`` vs ``pg_restore --single-transaction``;
* ``types``: one table per column type (int, text, numeric, jsonb, timestamptz, bytea,
  uuid), ``--type-rows`` rows each (default 1,000,000), the same four commands;
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


def _pair(res: dict[str, Any], label: str, ours: tuple[float, int, str],
          theirs: tuple[float, int, str]) -> None:
    res[label] = {"preimage_s": round(ours[0], 2), "tool_s": round(theirs[0], 2),
                  "ratio": round(ours[0] / theirs[0], 2) if theirs[0] else None,
                  "preimage_peak_mib": ours[1], "tool_peak_mib": theirs[1]}


def bench_table(pg: Any, env: dict[str, str], work: Path, name: str, check: str,
                res: dict[str, Any], key: str, *, own: bool = False) -> None:
    """capture vs pg_dump -Fc -t, then (after DROP TABLE) restore vs pg_restore; with
    ``own``, first each command in its own process too (a session's first command)."""
    cli = [sys.executable, "-m", "preimage"]
    uri = pg.uri("bench", query=f"tables={name}")
    expected = pg.psql(check, "bench").strip()
    if own:
        alone = _common.own_process(env)
        cap = run([*cli, "capture", "--json", uri], alone)
        dump = work / f"{key}-own.dump"
        pgd = run([pg.tool("pg_dump"), "-Fc", "-t", name, "-f", str(dump), "bench"], env)
        _pair(res, f"{key} capture, own process", cap, pgd)
        pg.psql(f"DROP TABLE {name}", "bench")
        rest = run([*cli, "restore", "--json", json.loads(cap[2])["id"]], alone)
        pg.psql(f"DROP TABLE {name}", "bench")
        pgr = run([pg.tool("pg_restore"), "--single-transaction", "-d", "bench", str(dump)], env)
        _pair(res, f"{key} restore, own process", rest, pgr)
        res[f"{key} restore, own process"]["exact"] = pg.psql(check, "bench").strip() == expected
    cap = run([*cli, "capture", "--json", uri], env)
    backup = json.loads(cap[2])
    dump = work / f"{key}.dump"
    pgd = run([pg.tool("pg_dump"), "-Fc", "-t", name, "-f", str(dump), "bench"], env)
    _pair(res, f"{key} capture", cap, pgd)
    pg.psql(f"DROP TABLE {name}", "bench")
    rest = run([*cli, "restore", "--json", backup["id"]], env)
    ok = pg.psql(check, "bench").strip() == expected
    pg.psql(f"DROP TABLE {name}", "bench")
    pgr = run([pg.tool("pg_restore"), "--single-transaction", "-d", "bench", str(dump)], env)
    ok = ok and pg.psql(check, "bench").strip() == expected
    _pair(res, f"{key} restore", rest, pgr)
    res[f"{key} restore"]["exact"] = ok
    res[f"{key} capture"]["stored_mib"] = round(backup["stored_bytes"] / 2**20, 1)
    res[f"{key} capture"]["dump_mib"] = round(dump.stat().st_size / 2**20, 1)


def bench_sample(pg: Any, env: dict[str, str], work: Path, res: dict[str, Any]) -> None:
    """Whole pagila: capture vs pg_dump -Fc, restore vs pg_restore --create."""
    samples = _common.load_fixture("sql_samples.py")
    template = samples.load_postgres(pg, "pagila")
    pg.psql(f"CREATE DATABASE pagila TEMPLATE {template}")
    plain = [pg.tool("pg_dump"), "--no-sync", "pagila"]
    before = run(plain, env)[2]
    cli = [sys.executable, "-m", "preimage"]
    cap = run([*cli, "capture", "--json", pg.uri("pagila")], env)
    backup = json.loads(cap[2])
    dump = work / "pagila.dump"
    pgd = run([pg.tool("pg_dump"), "-Fc", "-f", str(dump), "pagila"], env)
    _pair(res, "pagila capture", cap, pgd)
    pg.psql("DROP DATABASE pagila")
    rest = run([*cli, "restore", "--json", backup["id"]], env)
    same = _strip(run(plain, env)[2]) == _strip(before)
    pg.psql("DROP DATABASE pagila")
    pgr = run([pg.tool("pg_restore"), "--create", "-d", "postgres", str(dump)], env)
    _pair(res, "pagila restore", rest, pgr)
    res["pagila restore"]["exact"] = same


def _strip(dump: str) -> str:
    return "\n".join(x for x in dump.splitlines()
                     if not x.startswith(("\\restrict ", "\\unrestrict ")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--type-rows", type=int, default=1_000_000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--score", action="store_true",
                        help="also time `preimage score` of the big table (per-row scoring)")
    args = parser.parse_args()
    fixture = _common.load_fixture("postgres.py")
    work = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    pg = fixture.PostgresServer.start()
    res: dict[str, Any] = {"rows": args.rows, "type_rows": args.type_rows}
    with contextlib.ExitStack() as stack:
        stack.callback(pg.stop)
        pg.psql("CREATE DATABASE bench")
        env = stack.enter_context(_common.warm_process(_common.installed_env(
            pg.env() | {"PREIMAGE_HOME": str(work / "home"),
                        "PREIMAGE_POSTGRESQL_PASSWORD": pg.password}), work))
        t0 = time.perf_counter()
        pg.psql(SEED.format(rows=args.rows), "bench")
        res["seed_seconds"] = round(time.perf_counter() - t0, 1)
        bench_table(pg, env, work, "public.events", CHECK, res, "table", own=True)
        if args.score:
            backup = json.loads(run([sys.executable, "-m", "preimage", "capture", "--json",
                                     pg.uri("bench", query="tables=public.events")], env)[2])
            s, mem, out = run([sys.executable, "-m", "preimage", "score", "--json",
                               backup["id"]], env)
            res["score"] = {"seconds": round(s, 2), "peak_mib": mem,
                            "restorable": json.loads(out)["restorable"]["score"]}
        for typ, expr in TYPES.items():
            name = f"public.t_{typ}"
            pg.psql(f"CREATE TABLE {name} (id int PRIMARY KEY, v {typ}); INSERT INTO {name} "
                    f"SELECT g, {expr} FROM generate_series(1, {args.type_rows}) g", "bench")
            check = f"SELECT count(*), md5(string_agg(v::text, ',' ORDER BY id)) FROM {name}"
            bench_table(pg, env, work, name, check, res, typ)
        bench_sample(pg, env, work, res)
    res["load"] = os.getloadavg()
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(f"PostgreSQL: table {args.rows:,} rows, {args.type_rows:,} per type; load average "
          f"{res['load'][0]:.1f} on {os.cpu_count()} cores")
    print("preimage commands run warm (a session's second and later), except 'own process' "
          "rows (a session's first); peak MiB: the command's own process only")
    print(f"{'':30}{'preimage s':>11}{'pg_* s':>9}{'ratio':>7}{'peak MiB':>10}  check")
    for label, r in res.items():
        if not isinstance(r, dict) or "ratio" not in r:
            continue
        extra = "" if "exact" not in r else ("exact" if r["exact"] else "MISMATCH")
        peak = f"{r['preimage_peak_mib']:10d}" if "own process" in label else f"{'-':>10}"
        print(f"{label:30}{r['preimage_s']:11.2f}{r['tool_s']:9.2f}{r['ratio']:7.2f}"
              f"{peak}  {extra}")
    if "score" in res:
        print(f"preimage score of the table: {res['score']['seconds']:.2f}s")


if __name__ == "__main__":
    main()
