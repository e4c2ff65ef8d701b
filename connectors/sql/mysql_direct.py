"""MySQL/MariaDB captures through the driver alone, without importing SQLAlchemy.

SQLAlchemy's engine costs a fifth of a second of start-up (more on a loaded
machine) on every capture, and a MySQL capture needs none of it: every query
is the server's own text (``SHOW CREATE …``, ``information_schema``), and the
rows are read as lines (:mod:`.mysql_rows`).  What SQLAlchemy gave besides is
its description of each table — column types, keys, indexes, constraints —
which for MySQL it parses from ``SHOW CREATE TABLE``.  :class:`Inspector`
reads the same text the same way and gives the same answers (the tests compare
both on every column type); a table it does not fully know — a line it cannot
read, a type outside :data:`_TYPES`, ``ANSI_QUOTES``, case-folded table names —
raises :class:`Unsupported` before any row is read, and the capture goes the
SQLAlchemy way instead.  A URL with driver options (``?charset=``, ``?ssl_…``,
a socket) goes that way too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from preimage.connectors.sql.address import SCOPE_PARAMS
from preimage.connectors.sql.mysql import MYSQL_DIALECTS, quote
from preimage.interface.target import Target


class Unsupported(Exception):
    """Something here is not read the way SQLAlchemy reads it: use SQLAlchemy."""


def connect_params(target: Target) -> tuple[str, str, dict[str, Any]] | None:
    """(dialect name, driver module, connect keywords) for a MySQL/MariaDB ``target`` the
    driver can reach alone; ``None`` when it needs SQLAlchemy (driver options in the URL,
    another driver, a driver that is not installed)."""
    import importlib.util

    dialect, _, driver = target.scheme.partition("+")
    if dialect not in MYSQL_DIALECTS or any(k not in SCOPE_PARAMS for k in target.query):
        return None
    if not driver:
        driver = "mysqldb" if importlib.util.find_spec("MySQLdb") is not None else "pymysql"
    module = {"mysqldb": "MySQLdb", "pymysql": "pymysql"}.get(driver)
    if module is None or importlib.util.find_spec(module) is None:
        return None
    kw: dict[str, Any] = {"host": target.host or "localhost", "charset": "utf8mb4"}
    if target.port:
        kw["port"] = int(target.port)
    if target.username:
        kw["user"] = target.username
    password = target.resolve_password()
    if password is not None:
        kw["password"] = password
    if target.path.lstrip("/"):
        kw["database"] = target.path.lstrip("/")
    return dialect, module, kw


def connect(module: str, kw: dict[str, Any]) -> Any:
    """A DB-API connection (the driver's own errors are raised); as SQLAlchemy's MySQL
    dialects connect, with ``CLIENT_FOUND_ROWS`` (matched rows, not changed rows)."""
    return __import__(module).connect(**kw, client_flag=_CLIENT_FOUND_ROWS)


_CLIENT_FOUND_ROWS = 2


class _Preparer:
    quote = staticmethod(quote)


class _Dialect:
    identifier_preparer = _Preparer()

    def __init__(self, name: str) -> None:
        self.name = name


class _Pool:
    def __init__(self, dbapi: Any) -> None:
        self.dbapi_connection = dbapi


class Result:
    """The rows of one statement, read at once (SQLAlchemy's ``Result`` in small)."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self._rows)

    def one(self) -> tuple[Any, ...]:
        if len(self._rows) != 1:
            raise LookupError(f"expected one row, got {len(self._rows)}")
        return self._rows[0]

    def first(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None

    def scalar(self) -> Any:
        return self._rows[0][0] if self._rows else None


class Connection:
    """A driver connection with the few methods of SQLAlchemy's ``Connection`` the MySQL
    capture uses: ``exec_driver_sql``, ``dialect.name``, ``connection.dbapi_connection``."""

    def __init__(self, dbapi: Any, dialect: str) -> None:
        self.dialect = _Dialect(dialect)
        self.connection = _Pool(dbapi)
        self.inspector = Inspector(self)

    def exec_driver_sql(self, sql: str, params: tuple[Any, ...] | None = None) -> Result:
        cur = self.connection.dbapi_connection.cursor()
        try:
            if params is None:
                cur.execute(sql)
            else:
                cur.execute(sql, params)
            return Result(list(cur.fetchall()) if cur.description else [])
        finally:
            cur.close()

    def execution_options(self, *, isolation_level: str) -> Connection:
        """``AUTOCOMMIT``: every statement commits on its own (what a MySQL restore runs
        under)."""
        self.connection.dbapi_connection.autocommit(isolation_level == "AUTOCOMMIT")
        return self

    def close(self) -> None:
        self.connection.dbapi_connection.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ``str()`` of the type SQLAlchemy reflects, by the name SHOW CREATE TABLE prints:
# (its name, what its arguments add: "" none, "n" a length, "ps" precision and scale,
# "c" a length and a collation).
_TYPES: dict[str, tuple[str, str]] = {
    "tinyint": ("TINYINT", ""), "smallint": ("SMALLINT", ""), "mediumint": ("MEDIUMINT", ""),
    "int": ("INTEGER", ""), "integer": ("INTEGER", ""), "bigint": ("BIGINT", ""),
    "decimal": ("DECIMAL", "ps"), "numeric": ("NUMERIC", "ps"), "fixed": ("DECIMAL", "ps"),
    "float": ("FLOAT", ""), "double": ("DOUBLE", ""), "bit": ("BIT", ""),
    "date": ("DATE", ""), "datetime": ("DATETIME", ""), "timestamp": ("TIMESTAMP", ""),
    "time": ("TIME", ""), "year": ("YEAR", ""),
    "char": ("CHAR", "c"), "varchar": ("VARCHAR", "c"), "text": ("TEXT", "c"),
    "tinytext": ("TINYTEXT", ""), "mediumtext": ("MEDIUMTEXT", ""),
    "longtext": ("LONGTEXT", ""), "binary": ("BINARY", "n"), "varbinary": ("VARBINARY", "n"),
    "tinyblob": ("TINYBLOB", ""), "blob": ("BLOB", ""), "mediumblob": ("MEDIUMBLOB", ""),
    "longblob": ("LONGBLOB", ""), "enum": ("ENUM", ""), "set": ("SET", ""),
    "json": ("JSON", ""), "uuid": ("UUID", ""),
}
_INTEGERS = frozenset({"tinyint", "smallint", "mediumint", "int", "integer", "bigint"})

# The lines of SHOW CREATE TABLE, as SQLAlchemy's MySQL reflection reads them.
_NAME = r"`(?P<name>(?:``|[^`])+)`"
_COLUMN = re.compile(
    r"  " + _NAME + r" +(?P<coltype>\w+)"
    r"(?:\((?P<arg>(?:\d+|\d+,\d+|(?:'(?:''|[^'])*',?)+))\))?"
    r"(?: +(?P<unsigned>UNSIGNED))?(?: +(?P<zerofill>ZEROFILL))?"
    r"(?: +CHARACTER SET +(?P<charset>[\w_]+))?(?: +COLLATE +(?P<collate>[\w_]+))?"
    r"(?: +(?P<notnull>(?:NOT )?NULL))?"
    r"(?: +DEFAULT +(?P<default>(?:NULL|'(?:''|[^'])*'|\(.+?\)|[\-\w\.\(\)]+"
    r"(?: +ON UPDATE [\-\w\.\(\)]+)?)))?"
    r"(?: +(?:GENERATED ALWAYS)? ?AS +(?P<generated>\(.*\))? ?(?P<persistence>VIRTUAL|STORED)?"
    r"(?: +(?P<notnull_generated>(?:NOT )?NULL))?)?"
    r"(?: +(?P<autoincr>AUTO_INCREMENT))?"
    r"(?: +COMMENT +'(?P<comment>(?:''|[^'])*)')?"
    r"(?: +COLUMN_FORMAT +(?P<colfmt>\w+))?(?: +STORAGE +(?P<storage>\w+))?"
    r"(?: +(?P<extra>.*))?,?$", re.I)
_KEY = re.compile(
    r"  (?:(?P<type>\S+) )?KEY(?: +" + _NAME + r")?(?: +USING +(?P<using_pre>\S+))?"
    r" +\((?P<columns>.+?)\)(?: +USING +(?P<using_post>\S+))?"
    r"(?: +KEY_BLOCK_SIZE *[ =]? *(?P<keyblock>\S+))?(?: +WITH PARSER +(?P<parser>\S+))?"
    r"(?: +COMMENT +(?P<comment>'(?:''|[^'])*'))?(?: +/\*(?P<version_sql>.+)\*/ *)?,?$", re.I)
_KEYEXPRS = re.compile(r"(?:(?:`((?:``|[^`])+)`)(?:\((\d+)\))?(?: +(ASC|DESC))?(?=\,|$))+", re.I)
_FK = re.compile(
    r"  CONSTRAINT +" + _NAME + r" +FOREIGN KEY +\((?P<local>[^\)]+?)\) REFERENCES +"
    r"(?P<table>`(?:``|[^`])+`(?:\.`(?:``|[^`])+`)?) +"
    r"\((?P<foreign>(?:`(?:``|[^`])+`(?: *, *)?)+)\)"
    r"(?: +(?P<match>MATCH \w+))?(?: +ON DELETE (?P<ondelete>RESTRICT|CASCADE|SET NULL|NO "
    r"ACTION|SET DEFAULT))?(?: +ON UPDATE (?P<onupdate>RESTRICT|CASCADE|SET NULL|NO ACTION|"
    r"SET DEFAULT))?", re.I)
_CHECK = re.compile(r"  CONSTRAINT +" + _NAME + r" +CHECK +\((?P<sqltext>.+)\),?", re.I)


def _unquote(name: str) -> str:
    return name.replace("``", "`")


def _keyexprs(text: str) -> list[str]:
    return [_unquote(name) for name, _length, _order in _KEYEXPRS.findall(text)]


def type_string(coltype: str, arg: str | None, collate: str | None) -> str:
    """``str()`` of the SQLAlchemy type of a column SHOW CREATE TABLE prints as
    ``coltype(arg) … COLLATE collate``; raise :class:`Unsupported` for another type."""
    known = _TYPES.get(coltype.lower())
    if known is None:
        raise Unsupported(f"column type {coltype}")
    name, shape = known
    numbers = re.findall(r"\d+", arg or "") if arg and not arg.startswith("'") else []
    if shape == "ps" and numbers:
        return f"{name}({', '.join(numbers[:2])})"
    if shape in ("n", "c") and numbers:
        name = f"{name}({numbers[0]})"
    if shape == "c" and collate:
        name = f"{name} COLLATE {collate}"
    return name


def check_tables(conn: Connection, names: list[str]) -> None:
    """Read every table of ``names`` (empty: all) now; raise :class:`Unsupported` for one
    this module does not read as SQLAlchemy does — before anything is read or written."""
    insp = conn.inspector
    insp.check_server()
    present = insp.get_table_names()
    for name in names or present:
        if name in present:
            insp.get_columns(name)
            insp.get_foreign_keys(name)
            insp.get_indexes(name)


class Inspector:
    """SQLAlchemy's ``Inspector`` answers for MySQL/MariaDB tables, read from
    ``SHOW CREATE TABLE`` the way its MySQL dialect reads them."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._parsed: dict[str, dict[str, Any]] = {}
        self._mysql8 = True

    def check_server(self) -> None:
        """Raise :class:`Unsupported` for server settings that change the text read."""
        mode, case, version = self.conn.exec_driver_sql(
            "SELECT @@sql_mode, @@lower_case_table_names, VERSION()").one()
        if "ANSI_QUOTES" in str(mode).upper() or int(case) != 0:
            raise Unsupported("ANSI_QUOTES or case-folded table names")
        # MySQL 8 (not MariaDB): SQLAlchemy corrects the case of referred names from
        # information_schema, which is not done here.
        self._mysql8 = "mariadb" not in str(version).lower()

    def get_table_names(self) -> list[str]:
        db = self.conn.exec_driver_sql("SELECT DATABASE()").scalar()
        rows = self.conn.exec_driver_sql(f"SHOW FULL TABLES FROM {quote(str(db))}")
        return [str(r[0]) for r in rows if r[1] == "BASE TABLE"]

    def show_create(self, table: str) -> str:
        return str(self.conn.exec_driver_sql(f"SHOW CREATE TABLE {quote(table)}").one()[1])

    def parse(self, table: str, ddl: str | None = None) -> dict[str, Any]:
        """The columns, keys and constraints of ``table`` (read once)."""
        if table in self._parsed:
            return self._parsed[table]
        text = ddl if ddl is not None else self.show_create(table)
        state: dict[str, Any] = {"columns": [], "keys": [], "fks": [], "checks": []}
        for line in re.split(r"\r?\n", text):
            if line.startswith("  `"):
                state["columns"].append(self._column(line))
            elif line.startswith(("CREATE ", ") ")) or line == ")":
                continue
            elif m := _KEY.match(line):
                if m["version_sql"] or m["parser"]:
                    raise Unsupported(f"index line {line!r}")
                state["keys"].append({"type": m["type"], "name": _unquote(m["name"])
                                      if m["name"] else None,
                                      "columns": _keyexprs(m["columns"])})
            elif m := _FK.match(line):
                state["fks"].append({
                    "local": _keyexprs(m["local"]), "foreign": _keyexprs(m["foreign"]),
                    "table": [_unquote(p) for p in re.findall(r"`((?:``|[^`])+)`",
                                                              m["table"])]})
            elif m := _CHECK.match(line):
                state["checks"].append({"name": _unquote(m["name"]), "sqltext": m["sqltext"]})
            else:  # partitions and anything else: SQLAlchemy's business
                raise Unsupported(f"line {line!r}")
        self._parsed[table] = state
        return state

    @staticmethod
    def _column(line: str) -> dict[str, Any]:
        m = _COLUMN.match(line)
        if m is None:
            raise Unsupported(f"column line {line!r}")
        coltype = m["coltype"].lower()
        default = m["default"]
        out: dict[str, Any] = {
            "name": _unquote(m["name"]), "type": type_string(coltype, m["arg"], m["collate"]),
            "nullable": not (m["notnull"] == "NOT NULL" or m["notnull_generated"] == "NOT NULL"),
            "default": None if default == "NULL" else default,
        }
        if m["autoincr"]:
            out["autoincrement"] = True
        elif coltype in _INTEGERS:
            out["autoincrement"] = False
        return out

    def get_columns(self, table: str) -> list[dict[str, Any]]:
        return list(self.parse(table)["columns"])

    def get_pk_constraint(self, table: str) -> dict[str, Any]:
        for key in self.parse(table)["keys"]:
            if key["type"] == "PRIMARY":
                return {"constrained_columns": list(key["columns"]), "name": None}
        return {"constrained_columns": [], "name": None}

    def get_foreign_keys(self, table: str) -> list[dict[str, Any]]:
        if self.parse(table)["fks"] and self._mysql8:
            raise Unsupported("foreign keys on MySQL 8")
        return [{"name": None, "constrained_columns": fk["local"],
                 "referred_table": fk["table"][-1], "referred_columns": fk["foreign"]}
                for fk in self.parse(table)["fks"]]

    def get_unique_constraints(self, table: str) -> list[dict[str, Any]]:
        out = [{"name": k["name"], "column_names": list(k["columns"])}
               for k in self.parse(table)["keys"] if k["type"] == "UNIQUE"]
        return sorted(out, key=lambda d: d["name"] or "~")

    def get_check_constraints(self, table: str) -> list[dict[str, Any]]:
        out = list(self.parse(table)["checks"])
        return sorted(out, key=lambda d: d["name"] or "~")

    def get_indexes(self, table: str) -> list[dict[str, Any]]:
        out = []
        for key in self.parse(table)["keys"]:
            if key["type"] == "PRIMARY":
                continue
            if key["type"] not in (None, "UNIQUE", "FULLTEXT", "SPATIAL"):
                raise Unsupported(f"index type {key['type']}")
            out.append({"name": key["name"], "column_names": list(key["columns"]),
                        "unique": key["type"] == "UNIQUE"})
        return sorted(out, key=lambda d: d["name"] or "~")
