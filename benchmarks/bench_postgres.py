"""Capture and restore of one large PostgreSQL table, side by side with pg_dump/pg_restore.

Usage: python benchmarks/bench_postgres.py [--rows N] [--score] [--json]

Starts a throw-away server (fixtures/postgres.py), fills ``public.events`` with
N rows (default 1,000,000; identity key, an index, a check constraint, jsonb),
then in one run times, each as a separate process whose peak RSS is read with
``wait4``:

  capture:  preimage capture postgresql://…?tables=public.events
            pg_dump -Fc -t public.events
  restore:  (after DROP TABLE) preimage restore ID
            (after DROP TABLE) pg_restore --single-transaction

and checks that both restores give back every row and the sequence state.
Peak memory is the client's (the server's work is the same for both).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402


def load_fixture() -> Any:
    """The launcher this benchmark starts."""
    return _common.load_fixture('postgres.py')


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--score", action="store_true",
                        help="also time `preimage score` (per-row scoring; slow on big tables)")
    args = parser.parse_args()
    fixture = load_fixture()
    work = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    pg = fixture.PostgresServer.start()
    try:
        pg.psql("CREATE DATABASE bench")
        t0 = time.perf_counter()
        pg.psql(SEED.format(rows=args.rows), "bench")
        seed_s = time.perf_counter() - t0
        size = pg.psql("SELECT pg_total_relation_size('public.events')", "bench").strip()
        expected = pg.psql(CHECK, "bench").strip()
        env = pg.env() | {"PREIMAGE_HOME": str(work / "home"),
                          "PREIMAGE_POSTGRESQL_PASSWORD": pg.password}
        uri = pg.uri("bench", query="tables=public.events")
        preimage_cli = [sys.executable, "-m", "preimage"]
        dump = work / "events.dump"
        res: dict[str, Any] = {"rows": args.rows, "table_bytes": int(size),
                               "seed_seconds": round(seed_s, 2)}

        s, mem, out = run([*preimage_cli, "capture", "--json", uri], env)
        backup = json.loads(out)
        res["preimage_capture"] = {"seconds": round(s, 2), "peak_mib": mem,
                                   "stored_bytes": backup["stored_bytes"]}
        s, mem, _ = run([pg.tool("pg_dump"), "-Fc", "-t", "public.events", "-f", str(dump),
                         "bench"], env)
        res["pg_dump"] = {"seconds": round(s, 2), "peak_mib": mem,
                          "stored_bytes": dump.stat().st_size}

        pg.psql("DROP TABLE public.events", "bench")
        s, mem, _ = run([*preimage_cli, "restore", "--json", backup["id"]], env)
        ok = pg.psql(CHECK, "bench").strip() == expected
        res["preimage_restore"] = {"seconds": round(s, 2), "peak_mib": mem, "exact": ok}

        pg.psql("DROP TABLE public.events", "bench")
        s, mem, _ = run([pg.tool("pg_restore"), "--single-transaction", "-d", "bench",
                         str(dump)], env)
        ok = pg.psql(CHECK, "bench").strip() == expected
        res["pg_restore"] = {"seconds": round(s, 2), "peak_mib": mem, "exact": ok}

        if args.score:
            s, mem, out = run([*preimage_cli, "score", "--json", backup["id"]], env)
            res["preimage_score"] = {"seconds": round(s, 2), "peak_mib": mem,
                                     "restorable": json.loads(out)["restorable"]["score"]}
    finally:
        pg.stop()
    if args.json:
        print(json.dumps(res, indent=2))
        return
    mib = res["table_bytes"] / 2**20
    print(f"public.events: {args.rows:,} rows, {mib:.0f} MiB on disk (seeded in {seed_s:.1f}s)")
    print(f"{'':18}{'seconds':>9}{'peak MiB':>10}{'stored MiB':>12}")
    for name in ("preimage_capture", "pg_dump", "preimage_restore", "pg_restore"):
        r = res[name]
        stored = f"{r['stored_bytes'] / 2**20:12.1f}" if "stored_bytes" in r else " " * 12
        extra = "" if "exact" not in r else ("  exact" if r["exact"] else "  MISMATCH")
        print(f"{name:18}{r['seconds']:9.2f}{r['peak_mib']:10d}{stored}{extra}")
    sc = res.get("preimage_score")
    if sc:
        print(f"preimage score: {sc['seconds']:.2f}s, peak {sc['peak_mib']} MiB, "
              f"restorable {sc['restorable']:.4f}")


if __name__ == "__main__":
    main()
