"""One registry mechanism for everything pluggable: connectors, site adapters, …

A :class:`PluginLoader` finds a plug-in by name the way SQLAlchemy's
``PluginLoader`` finds a dialect: first what was registered at run time
(:meth:`~PluginLoader.register`), then the built-in table of dotted paths
(imported only when first used), then the loader's entry-point group.  A
miss raises the loader's error naming every known plug-in and, for a built-in
whose client is not installed, the extra to install.  :meth:`~PluginLoader.problem`
answers "could this load here?" without importing anything, which the backup
layer asks on its hot path.

Names are case-insensitive.  A built-in whose name ends with ``+`` covers a
family (``mysql+`` serves ``mysql+pymysql``, ``web+`` serves ``web+isso``).

The connector registry (:data:`connectors`, entry-point group
``preimage.connectors``) lives here; the same class serves the site adapters
(:mod:`preimage.connectors.web.registry`, group ``preimage.site_adapters``),
the benchmark's systems (:mod:`preimage.bench.systems.base`, group
``preimage.bench_systems``) and its content-only copiers
(:mod:`preimage.bench.content_only`, group ``preimage.bench_copiers``).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from preimage.interface.connector import Connector, capabilities_of
from preimage.interface.errors import NoSuchConnectorError, PreimageError

T = TypeVar("T")


def _entry_points(group: str) -> Any:
    """The installed distributions' entry points in ``group``.  ``importlib.metadata`` is
    imported here, when a name is not built in, not with this module: its import alone
    is 20 ms of every command's process."""
    from importlib.metadata import entry_points

    return entry_points(group=group)


@dataclass(frozen=True)
class BuiltIn:
    """A built-in plug-in: where it lives and what it needs installed."""

    path: str  # "package.module:Attribute"
    extra: str | None = None  # pip install 'preimage[extra]'
    requires: str | None = None  # the top-level module of its client


Miss = Callable[[str, list[str], str | None], PreimageError]


class PluginLoader(Generic[T]):
    """Plug-ins of one kind, by name: registered, built in, or by entry point.

    ``kind`` names the plug-ins in messages (``connector``, ``site adapter``);
    ``cache=False`` makes a new plug-in on every load (stateful ones, such as a
    benchmark system that starts a server); ``make`` turns what a name points at
    (a class, an instance, a factory) into the plug-in and checks it; ``miss``
    builds the error for an unknown or unloadable name from ``(name, known
    names, hint)``.
    """

    def __init__(
        self,
        kind: str,
        group: str,
        builtins: dict[str, BuiltIn],
        *,
        miss: Miss,
        make: Callable[[Any], T] | None = None,
        cache: bool = True,
    ) -> None:
        self.kind = kind
        self.group = group
        self.builtins = builtins
        self._miss = miss
        self._keep = cache
        self._make = make or (lambda obj: obj() if isinstance(obj, type) else obj)
        self._registered: dict[str, Any] = {}
        self._cache: dict[str, T] = {}

    # ------------------------------------------------------------ registration
    def register(self, name: str, plugin: Any) -> None:
        """Register ``plugin`` (a class, an instance or ``"module:Attribute"``) as ``name``."""
        self._registered[name.lower()] = plugin
        self._cache.pop(name.lower(), None)

    def unregister(self, name: str) -> None:
        """Forget a run-time registration."""
        self._registered.pop(name.lower(), None)
        self._cache.pop(name.lower(), None)

    # ------------------------------------------------------------ lookup
    def builtin_for(self, name: str) -> BuiltIn | None:
        """The built-in entry serving ``name`` (directly or as a ``family+``)."""
        name = name.lower()
        if name in self.builtins:
            return self.builtins[name]
        if "+" in name:
            return self.builtins.get(name.split("+", 1)[0] + "+")
        return None

    def _entry_point(self, name: str) -> Any | None:
        for ep in _entry_points(self.group):
            if ep.name.lower() == name:
                return ep
        return None

    def names(self) -> list[str]:
        """Every name: registered, built in, or by entry point."""
        found = set(self._registered) | set(self.builtins)
        found |= {ep.name.lower() for ep in _entry_points(self.group)}
        return sorted(found)

    def source(self, name: str) -> str:
        """Where ``name`` comes from: ``registered``, ``built-in`` or ``entry point``."""
        name = name.lower()
        if name in self._registered:
            return "registered"
        return "built-in" if self.builtin_for(name) is not None else "entry point"

    def problem(self, name: str) -> str | None:
        """Why ``name`` cannot load here, or ``None`` when it can — decided by looking
        for modules, not importing them."""
        name = name.lower()
        if name in self._registered or name in self._cache:
            return None
        builtin = self.builtin_for(name)
        if builtin is None:
            return None if self._entry_point(name) is not None else f"no {self.kind} {name!r}"
        module = builtin.path.split(":", 1)[0]
        try:
            if importlib.util.find_spec(module) is None:
                return f"the {name} {self.kind} is not in this build"
        except ModuleNotFoundError:
            return f"the {name} {self.kind} is not in this build"
        if builtin.requires and importlib.util.find_spec(builtin.requires) is None:
            return f"the {name} {self.kind} needs pip install 'preimage[{builtin.extra}]'"
        return None

    def load(self, name: str) -> T:
        """The plug-in called ``name`` (made once, then cached); raise the loader's error
        when there is none or it cannot be imported."""
        name = name.lower()
        if name in self._cache:
            return self._cache[name]
        if name in self._registered:
            plugin = self._make(_resolve(self._registered[name]))
        elif (builtin := self.builtin_for(name)) is not None:
            try:
                obj = _resolve(builtin.path)
            except ModuleNotFoundError as exc:
                missing = (exc.name or "").split(".")[0]
                if builtin.requires and missing == builtin.requires:
                    raise self._miss(
                        name, self.names(),
                        f"its client {builtin.requires!r} is not installed — "
                        f"pip install 'preimage[{builtin.extra}]'",
                    ) from exc
                if (exc.name or "").startswith(builtin.path.split(".", 2)[0] + "."):
                    raise self._miss(
                        name, self.names(), "this build of preimage does not ship it"
                    ) from exc
                raise
            plugin = self._make(obj)
        elif (ep := self._entry_point(name)) is not None:
            plugin = self._make(ep.load())
        else:
            raise self._miss(name, self.names(), None)
        if self._keep:
            self._cache[name] = plugin
        return plugin

    def get(self, name: str) -> T | None:
        """The plug-in called ``name``, or ``None`` when nothing has that name (a plug-in
        that exists but cannot load still raises)."""
        name = name.lower()
        known = name in self._registered or self.builtin_for(name) is not None
        if not known and self._entry_point(name) is None:
            return None
        return self.load(name)

    def table(self) -> list[dict[str, str]]:
        """One row per name: where it comes from, its extra, and whether it loads."""
        rows = []
        for name in self.names():
            builtin = self.builtin_for(name)
            status = "ok"
            try:
                self.load(name.rstrip("+") + ("+x" if name.endswith("+") else ""))
            except PreimageError as exc:
                status = getattr(exc, "hint", None) or "unavailable"
            except Exception as exc:  # a broken plug-in must not break the listing
                status = f"error: {exc}"
            rows.append({
                "name": name,
                "source": self.source(name),
                "extra": (builtin.extra or "") if builtin else "",
                "status": status,
            })
        return rows


def _resolve(spec: Any) -> Any:
    if isinstance(spec, str):
        module, _, attr = spec.partition(":")
        return getattr(importlib.import_module(module), attr)
    return spec


def _make_connector(obj: Any) -> Connector:
    conn = obj() if isinstance(obj, type) else obj
    for attr in ("scheme", "snapshot_type", "capture", "restore", "diff"):
        if not hasattr(conn, attr):
            raise TypeError(f"{conn!r} is not a preimage connector: it has no {attr!r}")
    return conn  # type: ignore[no-any-return]


# scheme → dotted path of the connector class.  Prefix schemes end with "+"
# (``mysql+pymysql`` and ``web+isso`` resolve through ``mysql+`` and ``web+``).
BUILTINS: dict[str, BuiltIn] = {
    "file": BuiltIn("preimage.connectors.files:FileConnector"),
    "pip": BuiltIn("preimage.connectors.pip:PipConnector"),
    "git": BuiltIn("preimage.connectors.git:GitConnector"),
    "sqlite": BuiltIn("preimage.connectors.sql:SQLAlchemyConnector"),
    "postgresql": BuiltIn("preimage.connectors.postgres:PostgresConnector", "postgres", "psycopg"),
    "postgres": BuiltIn("preimage.connectors.postgres:PostgresConnector", "postgres", "psycopg"),
    "mysql": BuiltIn("preimage.connectors.sql:SQLAlchemyConnector", "mysql", "pymysql"),
    "mariadb": BuiltIn("preimage.connectors.sql:SQLAlchemyConnector", "mysql", "pymysql"),
    "mysql+": BuiltIn("preimage.connectors.sql:SQLAlchemyConnector", "mysql", "pymysql"),
    "mariadb+": BuiltIn("preimage.connectors.sql:SQLAlchemyConnector", "mysql", "pymysql"),
    "k8s": BuiltIn("preimage.connectors.kubernetes:KubernetesConnector", "kubernetes", "kubernetes"),
    "imap": BuiltIn("preimage.connectors.imap:ImapConnector", "email", "imapclient"),
    "imaps": BuiltIn("preimage.connectors.imap:ImapConnector", "email", "imapclient"),
    "browser": BuiltIn("preimage.connectors.browser:BrowserConnector", "browser", "playwright"),
    "web+": BuiltIn("preimage.connectors.web:WebAppConnector", "browser", "playwright"),
}

#: The connectors, by URI scheme (entry-point group ``preimage.connectors``).
connectors: PluginLoader[Connector] = PluginLoader(
    "connector", "preimage.connectors", BUILTINS, miss=NoSuchConnectorError, make=_make_connector
)


def register_connector(scheme: str, connector: Any) -> None:
    """Register ``connector`` (class, instance or ``"module:Class"``) for ``scheme``."""
    connectors.register(scheme, connector)


def unregister_connector(scheme: str) -> None:
    """Forget a run-time registration."""
    connectors.unregister(scheme)


def known_schemes() -> list[str]:
    """Every scheme with a connector: registered, built in, or by entry point."""
    return connectors.names()


def get_connector(scheme: str) -> Connector:
    """The connector instance for ``scheme``; raise :class:`NoSuchConnectorError` if none."""
    return connectors.load(scheme)


def connector_problem(scheme: str) -> str | None:
    """Why no connector can capture ``scheme`` here, or ``None`` when one can (nothing imported)."""
    if connectors.builtin_for(scheme) is None and scheme.lower() not in connectors.names():
        return f"no connector for {scheme}://"
    return connectors.problem(scheme)


def connector_table() -> list[dict[str, str]]:
    """Rows for ``preimage connectors``: scheme, where it comes from, whether it loads,
    and how finely ``preimage undo`` reverts a call in it (its declared granularity)."""
    rows = []
    for row in connectors.table():
        scheme = row.pop("name")
        undo = ""
        if row.get("status") == "ok":
            try:
                conn = get_connector(scheme.rstrip("+") + ("+x" if scheme.endswith("+") else ""))
                granularity = capabilities_of(conn).undo
                undo = (granularity.describe() if granularity is not None
                        else "no (restore brings whole targets back)")
            except Exception as exc:  # a broken plug-in must not break the listing
                row["status"] = f"error: {exc}"
        rows.append({"scheme": scheme, **row, "undo": undo})
    return rows
