"""Each connector builds the URIs it reads: what a builder writes, its parser reads back."""

from __future__ import annotations

from pathlib import Path

import pytest

from preimage import Target
from preimage.connectors.browser.address import browser_uri, origin_of, parse_target
from preimage.connectors.files.address import file_uri
from preimage.connectors.git.address import git_uri
from preimage.connectors.imap.selection import Selection, imap_uri
from preimage.connectors.kubernetes.address import ALL_NAMESPACES, Address, k8s_uri
from preimage.connectors.pip.address import pip_uri
from preimage.connectors.postgres.scope import parse_scope, postgres_uri
from preimage.connectors.sql.address import database_uri, sqlite_uri
from preimage.connectors.web.address import adapter_name, web_uri


@pytest.mark.parametrize("build", [file_uri, git_uri, pip_uri])
def test_path_uris_keep_odd_paths(build: object) -> None:
    """Spaces, '#', '?' and '%' in a path survive the trip through the URI."""
    path = "/srv/my app/#1?x=%20"
    target = Target.parse(build(path))  # type: ignore[operator]
    assert target.path == path


def test_kubernetes_uris_round_trip() -> None:
    """k8s_uri writes what Address.parse reads, for every scope."""
    a = Address.parse(Target.parse(k8s_uri("kind-dev", "shop", "deployments.apps", "web")))
    assert (a.context, a.namespace, a.resource, a.name) == ("kind-dev", "shop", "deployments.apps", "web")
    cluster = Address.parse(Target.parse(k8s_uri("c", None, "persistentvolumes")))
    assert cluster.namespace is None and cluster.resource == "persistentvolumes"
    every = Address.parse(Target.parse(k8s_uri("c", ALL_NAMESPACES, "configmaps", selector="app=x")))
    assert every.all_namespaces and every.selector == "app=x"


def test_postgres_uris_round_trip() -> None:
    """postgres_uri writes what parse_scope reads: tables, schema, a row scope, a socket host."""
    uri = postgres_uri(user="app", host="127.0.0.1", port=5432, database="shop",
                       tables=["public.b", "public.a", "public.a"])
    assert parse_scope(Target.parse(uri)).names == ["public.a", "public.b"]
    assert parse_scope(Target.parse(postgres_uri(database="shop", schema="s1"))).scope == "schema"
    rows = parse_scope(Target.parse(postgres_uri(database="shop", table="public.t",
                                                 where="id > 3 AND note = 'a&b'")))
    assert (rows.scope, rows.names) == ("rows", ["public.t"])
    assert "a&b" in (rows.where or "")
    socket = Target.parse(postgres_uri(user="u", host="/run/postgresql", database="d"))
    assert socket.param("host") == "/run/postgresql"


def test_sql_uris_carry_their_scope() -> None:
    """SQLAlchemy URIs keep the table set or row scope the connector reads."""
    lite = Target.parse(sqlite_uri("/srv/app/app.db", tables=["b", "a"]))
    assert (lite.scheme, lite.param("tables")) == ("sqlite", "a,b")
    assert lite.path.endswith("/srv/app/app.db")
    maria = Target.parse(database_uri("mysql+pymysql", user="u", host="::1", port=3306,
                                      database="db", table="t", where="x = 1"))
    assert (maria.host, maria.port, maria.param("table"), maria.param("where")) == ("::1", 3306, "t", "x = 1")


def test_imap_uris_round_trip() -> None:
    """imap_uri writes what Selection reads: a folder below others, UIDs, Message-IDs."""
    base = "imap://alice@127.0.0.1:10143/INBOX"
    sel = Selection.from_target(Target.parse(imap_uri(base, "Archive/2024 Q1", uids=[4, 7])))
    assert (sel.folder, sel.uids) == ("Archive/2024 Q1", "4,7")
    by_id = Selection.from_target(Target.parse(imap_uri(base, "INBOX", message_ids=["<a@b>"])))
    assert list(by_id.idents or ()) == ["<a@b>"]


def test_browser_and_web_uris_round_trip(tmp_path: Path) -> None:
    """browser_uri and web_uri write what their connectors read."""
    profile, origins = parse_target(Target.parse(browser_uri(str(tmp_path), "http://127.0.0.1:8080")))
    assert (profile, origins) == (tmp_path, ["http://127.0.0.1:8080"])
    assert origin_of("https://h:1/x?y") == "https://h:1" and origin_of("file:///x") is None
    web = Target.parse(web_uri("isso", "http://127.0.0.1:8080/t/12?page=2", params=[("profile", "/p")]))
    assert adapter_name(web) == "isso"
    assert (web.path, web.param("page"), web.param("profile")) == ("/t/12", "2", "/p")


def test_a_malformed_uri_is_one_plain_line_whatever_it_contains(cli: object) -> None:
    """Brackets in a URI or its grammar are printed as they are, never read as markup."""
    proc = cli("capture", "k8s://kind/shop/configmaps/a/extra")  # type: ignore[operator]
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "preimage: invalid target 'k8s://kind/shop/configmaps/a/extra': expected "
        "k8s://CONTEXT/NAMESPACE[/RESOURCE[/NAME]]"
    ]
