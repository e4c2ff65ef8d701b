"""Site-adapter registry: the same :class:`~preimage.interface.registry.PluginLoader` as connectors.

Lookup order for ``web+<name>``: adapters registered at run time with
:func:`register_site_adapter`, then the built-in table, then the entry-point
group ``preimage.site_adapters`` (an entry point named ``<name>`` pointing at
the adapter class).
"""

from __future__ import annotations

from typing import Any

from preimage.connectors.web.adapter import SiteAdapter
from preimage.interface.errors import NoSuchConnectorError
from preimage.interface.registry import BuiltIn, PluginLoader

GROUP = "preimage.site_adapters"
BUILTIN_ADAPTERS: dict[str, BuiltIn] = {
    "isso": BuiltIn("preimage.connectors.web.isso:IssoAdapter"),
    "trac": BuiltIn("preimage.connectors.web.trac:TracAdapter"),
    "copyparty": BuiltIn("preimage.connectors.web.copyparty:CopypartyAdapter"),
}


def _make(obj: Any) -> SiteAdapter:
    adapter = obj() if isinstance(obj, type) else obj
    if not isinstance(adapter, SiteAdapter):
        raise TypeError(f"{adapter!r} is not a preimage.connectors.web.SiteAdapter")
    return adapter


def _miss(name: str, known: list[str], hint: str | None) -> NoSuchConnectorError:
    return NoSuchConnectorError(
        f"web+{name}",
        [f"web+{n}" for n in known],
        hint or f"no site adapter named {name!r} — register one with "
        "preimage.connectors.web.register_site_adapter() or the entry-point group "
        f"{GROUP!r}",
    )


#: The site adapters, by name (``web+<name>``).
site_adapters: PluginLoader[SiteAdapter] = PluginLoader(
    "site adapter", GROUP, BUILTIN_ADAPTERS, miss=_miss, make=_make
)


def register_site_adapter(name: str, adapter: Any) -> None:
    """Register ``adapter`` (a class, an instance or ``"module:Class"``) as ``web+<name>``."""
    site_adapters.register(name, adapter)


def unregister_site_adapter(name: str) -> None:
    """Forget a run-time registration."""
    site_adapters.unregister(name)


def known_site_adapters() -> list[str]:
    """Every adapter name: registered, built in, or by entry point."""
    return site_adapters.names()


def get_site_adapter(name: str) -> SiteAdapter:
    """The adapter for ``web+<name>``; raise :class:`NoSuchConnectorError` if none."""
    return site_adapters.load(name)
