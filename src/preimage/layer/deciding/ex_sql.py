"""Tier 2 for databases: SQL clients, ORM resets and SQL tools of MCP servers.

The connection comes from the client's own options and environment
(``psql -h/-p/-U/-d``, a URI or conninfo, ``PGHOST``…; ``sqlite3 FILE``;
``mysql -h -P -u -D``; ``DATABASE_URL`` from the environment or the
project's ``.env`` for ORMs; the MCP server's configured or discovered
URI).  The SQL comes from ``-c``, ``-f`` files, here-documents, pipes and
the tool's ``sql``/``query`` argument, and is read by :mod:`.sql_text`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from preimage.connectors.files.address import file_uri
from preimage.connectors.postgres.scope import postgres_uri
from preimage.connectors.sql.address import database_uri, sqlite_uri
from preimage.layer.call import ToolCall
from preimage.layer.context import Context
from preimage.layer.deciding.extract import ancestors, finding, shell_extractor, tool_extractor, unknown
from preimage.layer.deciding.rules import Rule
from preimage.layer.decision import Finding, Impact, PlannedTarget, Tier
from preimage.layer.reading.argv import parse_args
from preimage.layer.reading.shell import SimpleCommand, read_small, resolve
from preimage.layer.reading.sql_catalog import TableFacts, postgres_facts, sqlite_facts
from preimage.layer.reading.sql_text import SqlEffect, analyze_sql


@dataclass(frozen=True)
class SqlBase:
    """Where a database lives (a server database or a SQLite file)."""

    scheme: str
    user: str | None = None
    host: str | None = None
    port: str | None = None
    database: str | None = None
    path: str | None = None     # SQLite file

    @property
    def dialect(self) -> str:
        return {"postgresql": "postgres", "sqlite": "sqlite"}.get(self.scheme, "mysql")

    def uri(self, **scope: object) -> str:
        if self.scheme == "sqlite":
            assert self.path is not None
            return sqlite_uri(self.path, **scope)  # type: ignore[arg-type]
        build: Callable[..., str] = (
            postgres_uri if self.scheme in ("postgresql", "postgres") else database_uri
        )
        return build(scheme=self.scheme, user=self.user, host=self.host, port=self.port,
                     database=self.database, **scope)

    def other(self, database: str) -> SqlBase:
        return SqlBase(self.scheme, self.user, self.host, self.port, database)


def base_from_url(url: str, cwd: str = "/") -> SqlBase | None:
    """A :class:`SqlBase` from a database URL (postgres, mysql, sqlite, Prisma's ``file:``)."""
    url = url.strip().strip("'\"")
    if url.startswith("file:"):
        path = url[5:].split("?", 1)[0]
        return SqlBase("sqlite", path=os.path.normpath(os.path.join(cwd, path)))
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    db = unquote(parts.path.lstrip("/")) or None
    if scheme.startswith("sqlite"):
        path = parts.path[1:] if parts.path.startswith("//") else parts.path.lstrip("/")
        path = path if path.startswith("/") else os.path.join(cwd, path)
        return SqlBase("sqlite", path=os.path.normpath(path))
    if scheme in ("postgres", "postgresql") or scheme.startswith("postgresql+"):
        host = parts.hostname
        query = dict(p.split("=", 1) for p in parts.query.split("&") if "=" in p)
        host = host or query.get("host")
        return SqlBase("postgresql", parts.username, host, str(parts.port) if parts.port else None, db)
    if scheme.startswith(("mysql", "mariadb")):
        return SqlBase("mysql+pymysql", parts.username, parts.hostname,
                       str(parts.port) if parts.port else None, db)
    return None


def sql_finding(source: SimpleCommand | ToolCall, rule: Rule, base: SqlBase, sql: str,
                ctx: Context) -> Finding:
    """Targets for ``sql`` run against ``base``."""
    effects = analyze_sql(sql, base.dialect)
    return effects_finding(source, rule, base, effects)


def catalog_facts(base: SqlBase, tables: list[str], references: bool = False) -> TableFacts:
    """What the database's catalog says about the written tables (see :mod:`.sql_catalog`);
    with ``references`` every table with a foreign key to them counts as reached."""
    if base.scheme == "sqlite" and base.path:
        return sqlite_facts(base.path, tables, references)
    if base.scheme == "postgresql" and base.database:
        return postgres_facts(base.uri(), base.database, tables, references)
    return TableFacts()


def effects_finding(source: SimpleCommand | ToolCall, rule: Rule, base: SqlBase,
                    effects: list[SqlEffect]) -> Finding:
    """Targets for the statements' effects: databases, schemas, tables and row scopes, widened
    by what the catalog says about the written tables."""
    f = finding(source, rule, impact=Impact.NONE, outside_workspace=True)
    whole = False
    schemas: set[str] = set()
    tables: set[str] = set()
    rows: dict[tuple[str, str], None] = {}
    targets: list[PlannedTarget] = []
    for e in effects:
        if e.impact.rank > f.impact.rank:
            f.impact = e.impact
        f.wide = f.wide or e.wide
        if e.note and e.note not in f.notes:
            f.notes.append(e.note)
        f.forced_by.extend(x for x in e.forced_by if x not in f.forced_by)
        if e.kind == "database":
            whole = True
        elif e.kind == "other-database" and e.database:
            other = base.other(e.database)
            targets.append(PlannedTarget(other.uri(), "DROP DATABASE removes it", external=True))
        elif e.kind == "schema" and e.schema:
            schemas.add(e.schema)
        elif e.kind == "tables":
            tables.update(e.tables)
        elif e.kind == "rows" and e.where is not None:
            rows[(e.tables[0], e.where)] = None
    fallback = file_uri(base.path) if base.scheme == "sqlite" and base.path else None
    written = sorted(tables | {t for t, _ in rows})
    if written and not whole:
        facts = catalog_facts(base, written, any(e.references for e in effects))
        if facts.widen:
            whole = True
            f.notes.append("; ".join(facts.widen) + " — what the statement changes reaches "
                           "beyond the tables it names; the whole database is captured")
            f.forced_by.extend(w for w in facts.widen if w not in f.forced_by)
        elif facts.cascades:
            tables.update(facts.cascades)
            f.notes.append("foreign keys cascade the change to " + ", ".join(facts.cascades))
        keyless = sorted({t for t, _ in rows if t in facts.keyless})
        if keyless and not whole:
            tables.update(keyless)
            f.notes.append(", ".join(f"`{t}`" for t in keyless) + " has no primary key: its "
                           "changed rows cannot be told from new ones, so the whole table is "
                           "captured rather than the rows the WHERE selects")
    if whole:
        targets.append(PlannedTarget(base.uri(), "the SQL changes this database", fallback=fallback,
                                     external=base.scheme != "sqlite"))
    else:
        for s in sorted(schemas):
            targets.append(PlannedTarget(base.uri(schema=s), "the SQL changes this schema",
                                         external=True))
        left = {t for t in tables if t.split(".")[0] not in schemas or "." not in t}
        if left:
            targets.append(PlannedTarget(base.uri(tables=sorted(left)),
                                         "the SQL changes these tables", fallback=fallback,
                                         external=base.scheme != "sqlite", widen=base.uri()))
        for (table, where) in rows:
            if table in tables or table.split(".")[0] in schemas:
                continue
            targets.append(PlannedTarget(base.uri(table=table, where=where),
                                         "the rows this statement touches", fallback=fallback,
                                         external=base.scheme != "sqlite", widen=base.uri()))
    f.targets = targets
    if not targets and f.impact is not Impact.LOW:
        f.tier = Tier.READ_ONLY
        f.impact = Impact.NONE
    return f


# ------------------------------------------------------------------ psql / dropdb / pg_restore
_PG_OPTS = ["-c", "--command", "-f", "--file", "-d", "--dbname", "-h", "--host", "-p", "--port",
            "-U", "--username", "-v", "--set", "--variable", "-o", "--output", "-L", "--log-file",
            "-P", "--pset", "-F", "-R", "-T", "--maintenance-db", "-j", "--jobs", "-n", "-t",
            "-S", "--schema", "--table", "-I", "-N"]


def _pg_base(cmd: SimpleCommand, args_opts: list[tuple[str, str | None]], positionals: list[str],
             db_positional: bool = True) -> SqlBase:
    env = cmd.env
    opts = dict(args_opts)
    host = opts.get("-h") or opts.get("--host") or env.get("PGHOST")
    port = opts.get("-p") or opts.get("--port") or env.get("PGPORT")
    user = opts.get("-U") or opts.get("--username") or env.get("PGUSER")
    db = opts.get("-d") or opts.get("--dbname") or (positionals[0] if db_positional and positionals
                                                     else None)
    if db and "://" in db:
        base = base_from_url(db)
        if base is not None:
            return SqlBase(base.scheme, base.user or user, base.host or host, base.port or port,
                           base.database)
    if db and "=" in db:
        kv = dict(re.findall(r"(\w+)\s*=\s*'?([^'\s]*)'?", db))
        host, port = kv.get("host", host), kv.get("port", port)
        user, db = kv.get("user", user), kv.get("dbname")
    if db_positional and len(positionals) > 1 and not user:
        user = positionals[1]
    db = db or env.get("PGDATABASE") or user or env.get("USER")
    return SqlBase("postgresql", user, host, port, db)


def _meta_sql(text: str, cmd: SimpleCommand) -> tuple[str, list[str]]:
    """psql input with backslash commands read: ``\\i`` files inlined, the rest dropped."""
    sql_lines: list[str] = []
    notes: list[str] = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("\\"):
            m = re.match(r"\\(i|ir|include)\s+(\S+)", s)
            if m:
                sql_lines.append(read_small(resolve(cmd, m.group(2))) or "DO $unknown$ $unknown$")
            m = re.match(r"\\copy\s+([\w.\"]+)\s*(?:\([^)]*\))?\s+from\b", s, re.I)
            if m:
                sql_lines.append(f"COPY {m.group(1)} FROM STDIN")
            continue
        sql_lines.append(line)
    return "\n".join(sql_lines), notes


@shell_extractor("psql")
def psql(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``psql``: the tables, rows, schemas or databases its SQL touches."""
    args = parse_args(cmd.words[1:], _PG_OPTS)
    base = _pg_base(cmd, args.options, args.texts)
    if args.has("-l", "--list", "-V", "--version", "-?", "--help"):
        return finding(cmd, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    chunks: list[str] = []
    for opt, val in args.options:
        if opt in ("-c", "--command") and val is not None:
            chunks.append(val)
        elif opt in ("-f", "--file") and val is not None:
            text = cmd.stdin_text() if val == "-" else read_small(resolve(cmd, val))
            if text is None:
                return _whole(cmd, rule, base, f"cannot read the SQL file {val}")
            chunks.append(text)
    if not chunks:
        text = cmd.stdin_text()
        if text is None:
            return _whole(cmd, rule, base, "psql reads SQL the layer cannot see")
        chunks.append(text)
    sql, _ = _meta_sql("\n;\n".join(chunks), cmd)
    return sql_finding(cmd, rule, base, sql, ctx)


def _whole(source: SimpleCommand | ToolCall, rule: Rule, base: SqlBase, why: str) -> Finding:
    f = effects_finding(source, rule, base, [SqlEffect("database", Impact.NORMAL, forced_by=[why])])
    f.notes.append(f"{why}; the whole database is captured")
    return f


@shell_extractor("pg_database")
def pg_database(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``dropdb NAME`` / ``pg_restore --clean -d NAME``: that whole database."""
    args = parse_args(cmd.words[1:], _PG_OPTS)
    if cmd.name == "pg_restore" and not args.has("-c", "--clean", "-d", "--dbname"):
        return finding(cmd, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    if cmd.name == "pg_restore":
        base = _pg_base(cmd, args.options, [], db_positional=False)
    else:
        base = _pg_base(cmd, [o for o in args.options if o[0] not in ("-d", "--dbname")],
                        args.texts[-1:])
    return effects_finding(cmd, rule, base, [SqlEffect("database", Impact(rule.impact))])


# ------------------------------------------------------------------ sqlite3 / mysql
@shell_extractor("sqlite3")
def sqlite3(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``sqlite3 FILE [SQL]``: the tables its SQL touches in that file."""
    args = parse_args(cmd.words[1:], ["-cmd", "-separator", "-nullvalue", "-newline", "-init",
                                      "-vfs", "-maxsize", "-pagecache", "-lookaside", "-mmap"],
                      long_single_dash=True)
    if not args.positionals:
        return finding(cmd, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    path = resolve(cmd, args.texts[0])
    if not os.path.exists(path):
        f = finding(cmd, rule, impact=Impact.LOW)
        f.notes.append(f"{path} does not exist yet; sqlite3 creates it")
        return f
    base = SqlBase("sqlite", path=path)
    pieces = args.values("-cmd") + args.texts[1:]
    if len(args.positionals) == 1:
        text = cmd.stdin_text()
        if text is None:
            return _whole(cmd, rule, base, "sqlite3 reads SQL the layer cannot see")
        pieces.append(text)
    sql_lines: list[str] = []
    for piece in pieces:
        for line in piece.splitlines() or [piece]:
            s = line.strip()
            if not s.startswith("."):
                sql_lines.append(line)
                continue
            dot = s.split()
            if dot[0] == ".read" and len(dot) > 1:
                sql_lines.append(read_small(resolve(cmd, dot[1])) or "")
            elif dot[0] == ".import" and len(dot) > 2:
                sql_lines.append(f"INSERT INTO {dot[-1]} VALUES (1);")
            elif dot[0] in (".restore", ".load", ".recover", ".clone"):
                return _whole(cmd, rule, base, f"`{dot[0]}` replaces the database")
        sql_lines.append(";")
    return sql_finding(cmd, rule, base, "\n".join(sql_lines), ctx)


@shell_extractor("mysql")
def mysql(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``mysql -e SQL``: the tables it touches (the password is never kept)."""
    args = parse_args(cmd.words[1:], ["-h", "--host", "-P", "--port", "-u", "--user", "-D",
                                      "--database", "-e", "--execute", "-S", "--socket"])
    opts = dict(args.options)
    db = opts.get("-D") or opts.get("--database") or (args.texts[0] if args.texts else None)
    base = SqlBase("mysql+pymysql", opts.get("-u") or opts.get("--user") or cmd.env.get("USER"),
                   opts.get("-h") or opts.get("--host") or cmd.env.get("MYSQL_HOST"),
                   opts.get("-P") or opts.get("--port") or cmd.env.get("MYSQL_TCP_PORT"), db)
    sql = args.value("-e", "--execute") or cmd.stdin_text()
    if sql is None:
        return _whole(cmd, rule, base, "mysql reads SQL the layer cannot see")
    return sql_finding(cmd, rule, base, sql, ctx)


# ------------------------------------------------------------------ ORMs
def database_url(cmd: SimpleCommand, ctx: Context, names: list[str]) -> str | None:
    """A database URL from the command's environment or a ``.env`` in the project."""
    for n in names:
        if cmd.env.get(n):
            return cmd.env[n]
    for here in ancestors(cmd.cwd):
        for cand in (os.path.join(here, ".env"), os.path.join(here, "prisma", ".env")):
            text = read_small(cand)
            for line in (text or "").splitlines():
                m = re.match(r"\s*(?:export\s+)?(\w+)\s*=\s*(.+)", line)
                if m and m.group(1) in names:
                    return m.group(2).strip().strip("'\"")
        if here == ctx.workspace or not ctx.workspace:
            break  # the project's own .env files only
    return None


@shell_extractor("orm_reset")
def orm_reset(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``prisma migrate reset``, ``rails db:reset``, ``manage.py flush`` …: the whole database."""
    url = database_url(cmd, ctx, rule.params.get("env", ["DATABASE_URL"]))
    if not url:
        return unknown(cmd, rule, f"`{cmd.name}` resets a database but no DATABASE_URL was found "
                                  "in the environment or the project's .env")
    schema_dir = os.path.join(cmd.cwd, "prisma") if os.path.isdir(os.path.join(cmd.cwd, "prisma")) \
        else cmd.cwd
    base = base_from_url(url, schema_dir)
    if base is None:
        return unknown(cmd, rule, f"`{cmd.name}`: cannot read the database URL")
    return effects_finding(cmd, rule, base, [SqlEffect("database", Impact(rule.impact))])


# ------------------------------------------------------------------ MCP
# Variables a database MCP server reads its URL from, in the order it reads them:
# postgres-mcp takes DATABASE_URI over its argument.
_URL_VARS = ("DATABASE_URI", "DATABASE_URL", "POSTGRES_URL", "POSTGRES_URI", "PG_URL",
             "MYSQL_URL", "SQLITE_DB_PATH")
_PASSWORD_VARS = {"postgresql": "PGPASSWORD", "mysql+pymysql": "MYSQL_PWD"}


def mcp_base(call: ToolCall, ctx: Context, kind: str) -> SqlBase | None:
    """The database an MCP server talks to: configured, else from how it is launched.

    Read as the server reads it: a URL in the variables of :data:`_URL_VARS` of its
    environment (the launcher's with its definition's ``env`` on top) before one in its
    arguments, then any URL in its definition's ``env``.  A password in that URL (or the
    client's variable, ``PGPASSWORD``, in its environment) is handed to this process's
    captures of that account, never stored.
    """
    from preimage.layer.deciding.mcp_launch import server_cwd, server_env, server_spec

    mcp = call.mcp_tool
    assert mcp is not None
    conf = ctx.config.mcp.get(mcp.server)
    if conf and conf.target:
        return base_from_url(conf.target, ctx.workspace)
    spec = server_spec(call, ctx)
    if not spec:
        return None
    env = server_env(spec, ctx)
    cwd = server_cwd(spec, ctx)
    own_env: dict[str, Any] = spec["env"] if isinstance(spec.get("env"), dict) else {}
    candidates = [env[v] for v in _URL_VARS if env.get(v)]
    candidates += [str(a) for a in spec.get("args", []) if isinstance(a, (str, int))]
    candidates += [str(v) for v in own_env.values()]
    for c in candidates:
        c = c.split("=", 1)[1] if c.startswith("--") and "=" in c else c
        if re.match(r"(postgres(ql)?|mysql|mariadb|sqlite)[+\w]*://", c):
            base = base_from_url(c, cwd)
            if base is not None:
                _remember_server_password(base, c, env)
            return base
        if kind == "sqlite" and c.endswith((".db", ".sqlite", ".sqlite3")):
            return SqlBase("sqlite", path=os.path.normpath(os.path.join(cwd, c)))
    return None


def _remember_server_password(base: SqlBase, url: str, env: dict[str, str]) -> None:
    """The server's password for ``base``'s account, for this process's captures."""
    from preimage.interface.target import Target, remember_password

    if base.scheme == "sqlite":
        return
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    password = unquote(password) if password else env.get(_PASSWORD_VARS.get(base.scheme, ""))
    if password:
        target = Target.parse(base.uri())
        remember_password(target.scheme, target.username, target.host, target.port, password)


def postgres_mcp_restricted(call: ToolCall, ctx: Context) -> bool:
    """Whether a postgres-mcp server runs with ``--access-mode restricted``: it then runs
    every statement in a READ ONLY transaction and rolls it back (its SafeSqlDriver)."""
    from preimage.layer.deciding.mcp_launch import is_server, option, server_spec

    spec = server_spec(call, ctx)
    return is_server(spec, "postgres-mcp") and option(spec, "--access-mode") == "restricted"


def session_effects(sql: str, dialect: str, ctx: Context, base: SqlBase | None) -> list[SqlEffect]:
    """The SQL's effects when an earlier call of the session may have set a search_path.

    An MCP server may keep one session across calls, or not: an unqualified
    name is then read in every schema the remembered path names and in
    ``public``, and the capture holds all of them (absent ones as absent).
    """
    key = f"search_path {base.uri() if base else ''}"
    remembered = ctx.session_get(key) if dialect == "postgres" else None
    schemas = [s for s in (remembered or []) if isinstance(s, str)]
    effects = analyze_sql(sql, dialect)
    for schema in schemas:
        if schema != "public":
            effects += analyze_sql(sql, dialect, default_schema=schema)
    for e in effects:
        if e.search_path:
            ctx.session_set(key, list(dict.fromkeys([*e.search_path, *schemas])))
    return effects


@tool_extractor("mcp_sql")
def mcp_sql(call: ToolCall, rule: Rule, ctx: Context) -> Finding:
    """An MCP tool that runs SQL (``execute_sql``, ``query``, ``write_query`` …)."""
    sql = next((call.input[k] for k in ("sql", "query", "statement", "sql_query", "command")
                if isinstance(call.input.get(k), str)), None)
    if sql is None:
        return unknown(call, rule, "the SQL tool's arguments hold no SQL text")
    if rule.params.get("explain"):
        # The statement the server sends (postgres-mcp's ExplainPlanTool): with analyze,
        # EXPLAIN ANALYZE runs — and commits — what it explains; either way every
        # statement after the first in a multi-statement text runs as well.
        analyze = call.input.get("analyze") not in (None, False, "false", "False", 0, "")
        sql = f"EXPLAIN ({'FORMAT JSON, ANALYZE' if analyze else 'FORMAT JSON'}) {sql}"
    kind = rule.params.get("kind", "postgres")
    if kind == "postgres" and postgres_mcp_restricted(call, ctx):
        return finding(call, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    base = mcp_base(call, ctx, kind)
    dialect = {"postgres": "postgres", "sqlite": "sqlite"}.get(kind, "mysql")
    effects = session_effects(sql, dialect, ctx, base)
    if all(e.kind == "read" for e in effects):
        return finding(call, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    if base is None:
        mcp = call.mcp_tool
        return unknown(call, rule, f"MCP server '{mcp.server if mcp else '?'}' runs SQL but its "
                       "database is unknown; set mcp.<server>.target in preimage's config.yaml")
    return effects_finding(call, rule, base, effects)
