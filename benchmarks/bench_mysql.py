"""Capture and restore on MariaDB side by side with mysqldump and the mariadb client, in one run.

Usage: python benchmarks/bench_mysql.py [--rows N] [--type-rows N] [--types a,b]
       [--driver mysqldb|pymysql] [--json]

Starts a throw-away MariaDB server (fixtures/mariadb.py) and measures, each command as
its own process (peak RSS read with ``wait4``):

* ``table``: ``events`` with N rows (default 1,000,000; AUTO_INCREMENT key, an index,
  varchar, decimal, JSON text, datetime): ``preimage capture …?tables=events`` vs
  ``mariadb-dump db events``; after ``DROP TABLE``, ``preimage restore`` vs
  ``mariadb db < dump``;
* ``types``: one table per column type (int, bigint, decimal, varchar, text, blob,
  datetime, json), ``--type-rows`` rows each (default 1,000,000; ``--types`` picks some,
  ``--type-rows 0`` none): capture vs ``mariadb-dump --hex-blob``, restore vs replaying
  the dump;
* ``sample``: the whole Chinook database (fixtures/samples/): capture vs
  ``mariadb-dump --routines --events --triggers``; after ``DROP DATABASE``, restore vs
  replaying the dump.

The driver is mysqlclient (``preimage[mysql-c]``) when it is installed, else PyMySQL;
``--driver`` picks one.  Each restore is checked (counts, sums, AUTO_INCREMENT; for the sample, mysqldump of the
restored database equals the original's).  Ratios are preimage ÷ the MariaDB tools.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common

run = _common.run

SEED = """
CREATE TABLE events (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  account int NOT NULL,
  kind varchar(10) NOT NULL,
  amount decimal(12,2) NOT NULL,
  payload text,
  created datetime NOT NULL,
  KEY events_account (account)
) ENGINE=InnoDB;
INSERT INTO events (account, kind, amount, payload, created)
SELECT seq % 5000, ELT(1 + seq % 4, 'view', 'click', 'buy', 'refund'), (seq % 100000) / 100,
       CONCAT('{{"session": "', MD5(seq), '", "n": ', seq, '}}'),
       '2024-01-01' + INTERVAL seq SECOND
FROM seq_1_to_{rows};
"""

CHECK = ("SELECT count(*), sum(id), sum(amount), (SELECT AUTO_INCREMENT FROM "
         "information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'events') "
         "FROM events")


TYPES = {
    "int": ("int", "seq"),
    "bigint": ("bigint", "seq * 1000003"),
    "decimal": ("decimal(18,4)", "seq * 12345.6789"),
    "varchar": ("varchar(64)", "MD5(seq)"),
    "text": ("text", "REPEAT(MD5(seq), 2)"),
    "blob": ("blob", "UNHEX(MD5(seq))"),
    "datetime": ("datetime", "'2020-01-01' + INTERVAL seq * 7 SECOND"),
    "json": ("json", "JSON_OBJECT('k', seq, 'tags', JSON_ARRAY('a', seq % 7))"),
}


def _pair(res: dict[str, Any], label: str, ours: tuple[float, int, str],
          theirs: tuple[float, int, str]) -> None:
    res[label] = {"preimage_s": round(ours[0], 2), "tool_s": round(theirs[0], 2),
                  "ratio": round(ours[0] / theirs[0], 2) if theirs[0] else None,
                  "preimage_peak_mib": ours[1], "tool_peak_mib": theirs[1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--type-rows", type=int, default=1_000_000)
    parser.add_argument("--types", default=",".join(TYPES),
                        help=f"comma-separated, of {', '.join(TYPES)}")
    parser.add_argument("--driver", choices=("mysqldb", "pymysql"), default=(
        "mysqldb" if importlib.util.find_spec("MySQLdb") else "pymysql"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    driver = f"mariadb+{args.driver}"
    fixture = _common.load_fixture("mariadb.py")
    samples = _common.load_fixture("sql_samples.py")
    work = Path(tempfile.mkdtemp(prefix="bench-mysql-"))
    my = fixture.MariaDBServer.start()
    res: dict[str, Any] = {"rows": args.rows, "type_rows": args.type_rows,
                           "driver": args.driver}
    with contextlib.ExitStack() as stack:
        stack.callback(my.stop)
        env = stack.enter_context(_common.warm_process(_common.installed_env(
            my.env() | {"PREIMAGE_HOME": str(work / "home")}), work))
        cli = [sys.executable, "-m", "preimage"]
        client = [fixture._binary("mariadb"), *my._conn_args()]
        dumper = [fixture._binary("mariadb-dump"), *my._conn_args(), "--skip-dump-date"]
        my.sql("CREATE DATABASE bench")
        my.sql(SEED.format(rows=args.rows), "bench")
        expected = my.sql(CHECK, "bench")
        alone = _common.own_process(env)  # the table once more with a session's first command
        cap = run([*cli, "capture", "--json", my.uri("bench", driver=driver, query="tables=events")],
                  alone)
        dump = run([*dumper, "bench", "events"], env)
        _pair(res, "table capture, own process", cap, dump)
        my.sql("DROP TABLE events", "bench")
        rest = run([*cli, "restore", "--json", json.loads(cap[2])["id"]], alone)
        my.sql("DROP TABLE events", "bench")
        replay = run([*client, "bench"], env, stdin=dump[2].encode())
        _pair(res, "table restore, own process", rest, replay)
        res["table restore, own process"]["exact"] = my.sql(CHECK, "bench") == expected
        cap = run([*cli, "capture", "--json", my.uri("bench", driver=driver, query="tables=events")], env)
        backup = json.loads(cap[2])
        dump = run([*dumper, "bench", "events"], env)
        _pair(res, "table capture", cap, dump)
        my.sql("DROP TABLE events", "bench")
        rest = run([*cli, "restore", "--json", backup["id"]], env)
        ok = my.sql(CHECK, "bench") == expected
        my.sql("DROP TABLE events", "bench")
        replay = run([*client, "bench"], env, stdin=dump[2].encode())
        _pair(res, "table restore", rest, replay)
        res["table restore"]["exact"] = ok and my.sql(CHECK, "bench") == expected

        for typ in [t for t in args.types.split(",") if t] if args.type_rows else []:
            sql_type, expr = TYPES[typ]
            table = f"t_{typ}"
            my.sql(f"CREATE TABLE {table} (id int PRIMARY KEY, v {sql_type}); INSERT INTO "
                   f"{table} SELECT seq, {expr} FROM seq_1_to_{args.type_rows}", "bench")
            check = (f"SELECT count(*), sum(CRC32(CONCAT(id, ':', HEX(v)))), "
                     f"sum(CRC32(CONCAT(v, ''))) FROM {table}")
            expected = my.sql(check, "bench")
            cap = run([*cli, "capture", "--json",
                       my.uri("bench", driver=driver, query=f"tables={table}")], env)
            backup = json.loads(cap[2])
            # --hex-blob: the dump goes through text (the blob case's bytes are not UTF-8).
            dump = run([*dumper, "--hex-blob", "bench", table], env)
            _pair(res, f"{typ} capture", cap, dump)
            my.sql(f"DROP TABLE {table}", "bench")
            rest = run([*cli, "restore", "--json", backup["id"]], env)
            ok = my.sql(check, "bench") == expected
            my.sql(f"DROP TABLE {table}", "bench")
            replay = run([*client, "bench"], env, stdin=dump[2].encode())
            _pair(res, f"{typ} restore", rest, replay)
            res[f"{typ} restore"]["exact"] = ok and my.sql(check, "bench") == expected
            my.sql(f"DROP TABLE {table}", "bench")

        name = samples.load_mariadb(my, "chinook")
        before = my.dump(name)
        cap = run([*cli, "capture", "--json", my.uri(name, driver=driver)], env)
        backup = json.loads(cap[2])
        dump = run([*dumper, "--routines", "--events", "--triggers", "--databases", name], env)
        _pair(res, "chinook capture", cap, dump)
        my.sql(f"DROP DATABASE {name}")
        rest = run([*cli, "restore", "--json", backup["id"]], env)
        same = my.dump(name) == before
        my.sql(f"DROP DATABASE {name}")
        replay = run(client, env, stdin=dump[2].encode())
        _pair(res, "chinook restore", rest, replay)
        res["chinook restore"]["exact"] = same
    res["load"] = os.getloadavg()
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(f"MariaDB ({args.driver}): table {args.rows:,} rows, {args.type_rows:,} per type; "
          f"load average {res['load'][0]:.1f} on "
          f"{os.cpu_count()} cores")
    print("preimage commands run warm (a session's second and later), except 'own process' "
          "rows (a session's first); peak MiB: the command's own process only")
    print(f"{'':30}{'preimage s':>11}{'tool s':>9}{'ratio':>7}{'peak MiB':>10}  check")
    for label, r in res.items():
        if not isinstance(r, dict):
            continue
        extra = "" if "exact" not in r else ("exact" if r["exact"] else "MISMATCH")
        peak = f"{r['preimage_peak_mib']:10d}" if "own process" in label else f"{'-':>10}"
        print(f"{label:30}{r['preimage_s']:11.2f}{r['tool_s']:9.2f}{r['ratio']:7.2f}"
              f"{peak}  {extra}")


if __name__ == "__main__":
    main()
