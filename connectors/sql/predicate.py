"""Row predicates (``?table=…&where=…``): parsed with sqlglot, checked, re-rendered.

The predicate must be one boolean expression: no ``;`` outside a string
literal, no second statement, no DDL/DML, no ``SELECT … INTO``, no functions
that act on the server (PostgreSQL: ``pg_terminate_backend``, ``set_config``,
``lo_*``, ``dblink*``, file access, …; MySQL/MariaDB: ``SLEEP``, ``GET_LOCK``,
``LOAD_FILE``, ``LAST_INSERT_ID(x)``, ``NEXTVAL``, …).  What runs is sqlglot's
rendering of the parsed expression, never the text as given, inside a
read-only transaction.
"""

from __future__ import annotations

from preimage.interface.errors import InvalidTargetError

# Functions that change server state or reach outside the database; refused in predicates.
_FORBIDDEN: dict[str, tuple[str, ...]] = {
    "postgres": (
        "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile",
        "set_config", "pg_advisory", "pg_try_advisory", "pg_sleep", "pg_read_file",
        "pg_read_binary_file", "pg_ls_", "pg_stat_file", "lo_", "dblink", "pg_file_",
        "pg_logical_emit", "pg_replication", "pg_create_", "pg_drop_", "pg_switch_wal",
        "pg_promote", "pg_notify", "nextval", "setval", "query_to_xml", "query_to_json",
        "txid_", "pg_backup", "pg_import", "currval",
    ),
    "mysql": (
        "sleep", "benchmark", "get_lock", "release_lock", "release_all_locks", "is_free_lock",
        "is_used_lock", "load_file", "master_pos_wait", "source_pos_wait", "master_gtid_wait",
        "nextval", "setval", "lastval", "last_insert_id", "sys_",
    ),
}
_FORBIDDEN["sqlite"] = ()


def check_predicate(text: str, uri: str = "", *, dialect: str = "postgres") -> str:
    """Parse ``text`` as one boolean SQL expression of ``dialect``; return it re-rendered
    by sqlglot.

    Raise :class:`InvalidTargetError` for anything else (several statements,
    ``;``, DDL/DML, ``SELECT … INTO``, server-side functions).
    """
    import sqlglot
    from sqlglot import exp

    def refuse(reason: str) -> InvalidTargetError:
        return InvalidTargetError(uri or text, f"row predicate refused: {reason}")

    if not text.strip():
        raise refuse("it is empty")
    from sqlglot.tokens import TokenType  # type: ignore[attr-defined]

    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(text)
        if any(t.token_type == TokenType.SEMICOLON for t in tokens):
            raise refuse("';' is not allowed — give one boolean expression")
        statements = sqlglot.parse(text, read=dialect)
    except sqlglot.errors.SqlglotError as exc:
        raise refuse(f"it does not parse as SQL ({exc})") from exc
    if len(statements) != 1 or statements[0] is None:
        raise refuse("give exactly one expression")
    tree = statements[0]
    banned = (
        exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.Alter, exp.Command,
        exp.Merge, exp.Into, exp.Set, exp.Transaction, exp.Commit, exp.Rollback, exp.Copy,
        exp.Grant, exp.TruncateTable, exp.Use,
    )
    if isinstance(tree, exp.Query):
        raise refuse("a query is not a predicate — write the WHERE condition only")
    allowed_roots = (exp.Predicate, exp.Connector, exp.Not, exp.Paren, exp.Boolean,
                     exp.Column, exp.Func, exp.Cast, exp.Case, exp.Exists)
    if not isinstance(tree, allowed_roots):
        raise refuse(f"{type(tree).__name__} is not a boolean expression")
    for node in tree.walk():
        if isinstance(node, banned):
            raise refuse(f"{type(node).__name__.upper()} is not allowed in a predicate")
        if isinstance(node, exp.Select) and node.args.get("into"):
            raise refuse("SELECT … INTO is not allowed")
        if isinstance(node, exp.Func):
            name = (node.sql_name() if not isinstance(node, exp.Anonymous) else node.name).lower()
            if any(name.startswith(bad) for bad in _FORBIDDEN[dialect]):
                raise refuse(f"function {name}() acts on the server")
    return tree.sql(dialect=dialect, comments=False)
