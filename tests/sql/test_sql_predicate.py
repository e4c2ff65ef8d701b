"""The row-scope predicate check and target parsing (no server needed)."""

from __future__ import annotations

import pytest

from preimage import InvalidTargetError, Target
from preimage.connectors.postgres.scope import check_predicate, parse_scope


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("id > 5", "id > 5"),
        ("(regexp_match(title, '^a'))[1] IS NULL", "(REGEXP_MATCH(title, '^a'))[1] IS NULL"),
        ("status = 'a; b' AND NOT done", "status = 'a; b' AND NOT done"),
        ("id IN (SELECT post_id FROM flags)", "id IN (SELECT post_id FROM flags)"),
        ("id = 1 -- trailing comment", "id = 1"),
    ],
)
def test_boolean_predicates_are_accepted_and_re_rendered(text: str, rendered: str) -> None:
    """One boolean expression passes and what runs is sqlglot's rendering of it."""
    assert check_predicate(text) == rendered


@pytest.mark.parametrize(
    "text",
    [
        "1 = 1; DROP TABLE t",
        "id = 1; --",
        "DELETE FROM t",
        "SELECT 1",
        "pg_terminate_backend(42) IS NULL",
        "lo_unlink(1) = 1",
        "nextval('s') > 0",
        "set_config('a', 'b', false) = 'b'",
        "id IN (SELECT id INTO x FROM t)",
        "1 = 1) OR (1 = 1",
        "42",
        "",
    ],
)
def test_anything_else_is_refused(text: str) -> None:
    """Statements, queries, server-side functions and broken parentheses are refused."""
    with pytest.raises(InvalidTargetError, match="predicate refused"):
        check_predicate(text)


def test_scopes_parse_from_the_uri() -> None:
    """tables=, schema= and table=&where= select the scope; unqualified names are public."""
    t = parse_scope(Target.parse("postgresql://u@h/db?tables=orders,s.items"))
    assert (t.scope, t.names) == ("tables", ["public.orders", "s.items"])
    assert parse_scope(Target.parse("postgresql://u@h/db?schema=a,b")).names == ["a", "b"]
    rows = parse_scope(Target.parse("postgresql://u@h/db?table=t&where=id%3E1"))
    assert (rows.scope, rows.where) == ("rows", "id > 1")
    assert parse_scope(Target.parse("postgresql://u@h/db")).scope == "database"


@pytest.mark.parametrize(
    "uri",
    [
        "postgresql://u@h/",
        "postgresql://u@h/db?tables=a&schema=b",
        "postgresql://u@h/db?where=id%3E1",
        "postgresql://u@h/db?tables=",
    ],
)
def test_bad_scopes_are_refused(uri: str) -> None:
    """A missing database name or contradictory parameters are a clear usage error."""
    with pytest.raises(InvalidTargetError):
        parse_scope(Target.parse(uri))
