"""Capture and restore on MariaDB side by side with mysqldump and the mariadb client, in one run.

Usage: python benchmarks/bench_mysql.py [--rows N] [--type-rows N] [--types a,b]
       [--driver mysqldb|pymysql] [--repeat N] [--json]

Starts a throw-away MariaDB server (fixtures/mariadb.py) and measures each command as a
process of its own, ``--repeat`` times (default 3; the medians are compared).  ``preimage``
commands are served by a warm process (docs/layer.md), as a session's second and later
commands are; the 1M-row table is also measured with each command in its own process
(``PREIMAGE_SERVICE=off``, as a session's first), whose peak RSS is read with GNU time:

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
import shutil
import sys
import tempfile
from collections.abc import Callable
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


def round_trip(res: dict[str, Any], key: str, label: str, *, repeat: int, env: dict[str, str],
               cmd_env: dict[str, str], capture: str, dump: list[str],
               drop: Callable[[], object], replay: list[str],
               check: Callable[[], bool]) -> None:
    """``repeat`` times: capture vs the dump, then (after ``drop``) restore vs replaying the
    dump, each restore checked; the medians go into ``res``."""
    cli = [sys.executable, "-m", "preimage"]
    times: dict[str, list[Any]] = {"cap": [], "dump": [], "rest": [], "replay": []}
    ok = True
    for _ in range(repeat):
        times["cap"].append(cap := run([*cli, "capture", "--json", capture], cmd_env))
        times["dump"].append(dumped := run(dump, env))
        drop()
        times["rest"].append(run([*cli, "restore", "--json", json.loads(cap[2])["id"]],
                                 cmd_env))
        ok = ok and check()
        drop()
        times["replay"].append(run(replay, env, stdin=dumped[2].encode()))
        ok = ok and check()
    _common.pair_runs(res, f"{key} capture{label}", times["cap"], times["dump"])
    _common.pair_runs(res, f"{key} restore{label}", times["rest"], times["replay"])
    res[f"{key} restore{label}"]["exact"] = ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--type-rows", type=int, default=1_000_000)
    parser.add_argument("--types", default=",".join(TYPES),
                        help=f"comma-separated, of {', '.join(TYPES)}")
    parser.add_argument("--driver", choices=("mysqldb", "pymysql"), default=(
        "mysqldb" if importlib.util.find_spec("MySQLdb") else "pymysql"))
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each command; the medians are compared (default 3)")
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
        # the work folder goes last, after the server and the warm process have stopped
        stack.callback(shutil.rmtree, work, True)
        stack.callback(my.stop)
        env = stack.enter_context(_common.warm_process(_common.installed_env(
            my.env() | {"PREIMAGE_HOME": str(work / "home")}), work))
        client = [fixture._binary("mariadb"), *my._conn_args()]
        dumper = [fixture._binary("mariadb-dump"), *my._conn_args(), "--skip-dump-date"]
        my.sql("CREATE DATABASE bench")
        my.sql(SEED.format(rows=args.rows), "bench")
        expected = my.sql(CHECK, "bench")
        table_uri = my.uri("bench", driver=driver, query="tables=events")
        for label, cmd_env in ((", own process", _common.own_process(env)), ("", env)):
            round_trip(res, "table", label, repeat=args.repeat, env=env, cmd_env=cmd_env,
                       capture=table_uri, dump=[*dumper, "bench", "events"],
                       drop=lambda: my.sql("DROP TABLE events", "bench"),
                       replay=[*client, "bench"],
                       check=lambda: my.sql(CHECK, "bench") == expected)

        for typ in [t for t in args.types.split(",") if t] if args.type_rows else []:
            sql_type, expr = TYPES[typ]
            table = f"t_{typ}"
            my.sql(f"CREATE TABLE {table} (id int PRIMARY KEY, v {sql_type}); INSERT INTO "
                   f"{table} SELECT seq, {expr} FROM seq_1_to_{args.type_rows}", "bench")
            check = (f"SELECT count(*), sum(CRC32(CONCAT(id, ':', HEX(v)))), "
                     f"sum(CRC32(CONCAT(v, ''))) FROM {table}")
            expected = my.sql(check, "bench")
            # --hex-blob: the dump goes through text (the blob case's bytes are not UTF-8).
            round_trip(res, typ, "", repeat=args.repeat, env=env, cmd_env=env,
                       capture=my.uri("bench", driver=driver, query=f"tables={table}"),
                       dump=[*dumper, "--hex-blob", "bench", table],
                       drop=lambda: my.sql(f"DROP TABLE {table}", "bench"),  # noqa: B023
                       replay=[*client, "bench"],
                       check=lambda: my.sql(check, "bench") == expected)  # noqa: B023
            my.sql(f"DROP TABLE {table}", "bench")

        name = samples.load_mariadb(my, "chinook")
        before = my.dump(name)
        round_trip(res, "chinook", "", repeat=args.repeat, env=env, cmd_env=env,
                   capture=my.uri(name, driver=driver),
                   dump=[*dumper, "--routines", "--events", "--triggers", "--databases", name],
                   drop=lambda: my.sql(f"DROP DATABASE {name}"), replay=client,
                   check=lambda: my.dump(name) == before)
    res["load"] = os.getloadavg()
    if args.json:
        print(json.dumps(res, indent=2))
        return
    _common.print_ratios(res, f"MariaDB ({args.driver}): table {args.rows:,} rows, "
                         f"{args.type_rows:,} per type; medians of {args.repeat} runs; load "
                         f"average {res['load'][0]:.1f} on {os.cpu_count()} cores", "tool s")

if __name__ == "__main__":
    main()
