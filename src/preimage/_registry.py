"""Connector registry: built-ins listed lazily, third parties by entry point.

Lookup order for a scheme (as SQLAlchemy's ``PluginLoader``): connectors
registered at run time with :func:`register_connector`, then the built-in
table below (imported only when first used), then the entry-point group
``preimage.connectors``.  A miss raises :class:`NoSuchConnectorError` naming
the known schemes and, for built-ins whose client is not installed, the extra
to install.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from preimage._connector import Connector
from preimage._errors import NoSuchConnectorError


@dataclass(frozen=True)
class BuiltIn:
    """A built-in connector: where it lives and what it needs installed."""

    path: str
    extra: str | None = None
    requires: str | None = None


# scheme → dotted path of the connector class.  Prefix schemes end with "+"
# (``mysql+pymysql`` and ``web+isso`` resolve through ``mysql+`` and ``web+``).
BUILTINS: dict[str, BuiltIn] = {
    "file": BuiltIn("preimage.connectors.files:FileConnector"),
    "pip": BuiltIn("preimage.connectors.pip:PipConnector"),
    "git": BuiltIn("preimage.connectors.git:GitConnector"),
    "sqlite": BuiltIn("preimage.connectors.sql:SQLAlchemyConnector"),
    "postgresql": BuiltIn("preimage.connectors.postgres:PostgresConnector", "postgres", "psycopg"),
    "postgres": BuiltIn("preimage.connectors.postgres:PostgresConnector", "postgres", "psycopg"),
    "mysql+": BuiltIn("preimage.connectors.sql:SQLAlchemyConnector", "mysql", "pymysql"),
    "mariadb+": BuiltIn("preimage.connectors.sql:SQLAlchemyConnector", "mysql", "pymysql"),
    "k8s": BuiltIn("preimage.connectors.kubernetes:KubernetesConnector", "kubernetes", "kubernetes"),
    "imap": BuiltIn("preimage.connectors.imap:ImapConnector", "email", "imapclient"),
    "imaps": BuiltIn("preimage.connectors.imap:ImapConnector", "email", "imapclient"),
    "browser": BuiltIn("preimage.connectors.browser:BrowserConnector", "browser", "playwright"),
    "web+": BuiltIn("preimage.connectors.web:WebAppConnector", "browser", "playwright"),
}

_registered: dict[str, Any] = {}
_cache: dict[str, Any] = {}


def register_connector(scheme: str, connector: Any) -> None:
    """Register ``connector`` (class, instance or ``"module:Class"``) for ``scheme``."""
    _registered[scheme.lower()] = connector
    _cache.pop(scheme.lower(), None)


def unregister_connector(scheme: str) -> None:
    """Forget a run-time registration (tests use it)."""
    _registered.pop(scheme.lower(), None)
    _cache.pop(scheme.lower(), None)


def _load(spec: Any) -> Any:
    if isinstance(spec, str):
        module, _, attr = spec.partition(":")
        obj: Any = getattr(importlib.import_module(module), attr)
    else:
        obj = spec
    return obj() if isinstance(obj, type) else obj


def _builtin_for(scheme: str) -> BuiltIn | None:
    if scheme in BUILTINS:
        return BUILTINS[scheme]
    if "+" in scheme:
        return BUILTINS.get(scheme.split("+", 1)[0] + "+")
    return None


def _entry_point(scheme: str) -> Any | None:
    for ep in entry_points(group="preimage.connectors"):
        if ep.name.lower() == scheme:
            return ep.load()
    return None


def known_schemes() -> list[str]:
    """Every scheme with a connector: registered, built in, or by entry point."""
    names = set(_registered) | set(BUILTINS)
    names |= {ep.name.lower() for ep in entry_points(group="preimage.connectors")}
    return sorted(names)


def get_connector(scheme: str) -> Connector:
    """The connector instance for ``scheme``; raise :class:`NoSuchConnectorError` if none."""
    scheme = scheme.lower()
    if scheme in _cache:
        return _cache[scheme]  # type: ignore[no-any-return]
    if scheme in _registered:
        conn = _load(_registered[scheme])
    elif (builtin := _builtin_for(scheme)) is not None:
        try:
            conn = _load(builtin.path)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if builtin.requires and missing.split(".")[0] == builtin.requires:
                raise NoSuchConnectorError(
                    scheme,
                    known_schemes(),
                    f"its client {builtin.requires!r} is not installed — "
                    f"pip install 'preimage[{builtin.extra}]'",
                ) from exc
            if missing.startswith("preimage.connectors"):
                raise NoSuchConnectorError(
                    scheme, known_schemes(), "this build of preimage does not ship it yet"
                ) from exc
            raise
    elif (found := _entry_point(scheme)) is not None:
        conn = _load(found)
    else:
        raise NoSuchConnectorError(scheme, known_schemes())
    _cache[scheme] = conn
    return conn  # type: ignore[no-any-return]


def connector_table() -> list[dict[str, str]]:
    """Rows for ``preimage connectors``: scheme, where it comes from, whether it loads,
    and how finely ``preimage undo`` reverts a call in it (its declared granularity)."""
    rows = []
    for scheme in known_schemes():
        source = "registered" if scheme in _registered else "built-in"
        builtin = _builtin_for(scheme)
        if scheme not in _registered and builtin is None:
            source = "entry point"
        status, undo = "ok", ""
        try:
            conn = get_connector(scheme.rstrip("+") + ("+x" if scheme.endswith("+") else ""))
            reverter = getattr(conn, "reverter", None)
            granularity = getattr(reverter, "granularity", None)
            undo = (granularity.describe() if granularity is not None
                    else "no (restore brings whole targets back)")
        except NoSuchConnectorError as exc:
            status = exc.hint or "unavailable"
        except Exception as exc:  # a broken plug-in must not break the listing
            status = f"error: {exc}"
        rows.append({
            "scheme": scheme,
            "source": source,
            "extra": (builtin.extra or "") if builtin else "",
            "status": status,
            "undo": undo,
        })
    return rows
