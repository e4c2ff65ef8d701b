"""Site-adapter registry: built-ins listed lazily, third parties by entry point.

Lookup order for ``web+<name>``: adapters registered at run time with
:func:`register_site_adapter`, then the built-in table, then the entry-point
group ``preimage.site_adapters`` (an entry point named ``<name>`` pointing at
the adapter class).
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from preimage._errors import NoSuchConnectorError
from preimage.connectors.web.adapter import SiteAdapter

BUILTIN_ADAPTERS: dict[str, str] = {
    "isso": "preimage.connectors.web.isso:IssoAdapter",
    "trac": "preimage.connectors.web.trac:TracAdapter",
}
GROUP = "preimage.site_adapters"

_registered: dict[str, Any] = {}


def register_site_adapter(name: str, adapter: Any) -> None:
    """Register ``adapter`` (a class, an instance or ``"module:Class"``) as ``web+<name>``."""
    _registered[name.lower()] = adapter


def unregister_site_adapter(name: str) -> None:
    """Forget a run-time registration."""
    _registered.pop(name.lower(), None)


def known_site_adapters() -> list[str]:
    """Every adapter name: registered, built in, or by entry point."""
    names = set(_registered) | set(BUILTIN_ADAPTERS)
    names |= {ep.name.lower() for ep in entry_points(group=GROUP)}
    return sorted(names)


def _load(spec: Any) -> SiteAdapter:
    if isinstance(spec, str):
        module, _, attr = spec.partition(":")
        spec = getattr(importlib.import_module(module), attr)
    obj = spec() if isinstance(spec, type) else spec
    if not isinstance(obj, SiteAdapter):
        raise TypeError(f"{obj!r} is not a preimage.connectors.web.SiteAdapter")
    return obj


def get_site_adapter(name: str) -> SiteAdapter:
    """The adapter for ``web+<name>``; raise :class:`NoSuchConnectorError` if none."""
    name = name.lower()
    if name in _registered:
        return _load(_registered[name])
    if name in BUILTIN_ADAPTERS:
        return _load(BUILTIN_ADAPTERS[name])
    for ep in entry_points(group=GROUP):
        if ep.name.lower() == name:
            return _load(ep.load())
    raise NoSuchConnectorError(
        f"web+{name}",
        [f"web+{n}" for n in known_site_adapters()],
        f"no site adapter named {name!r} — register one with "
        "preimage.connectors.web.register_site_adapter() or the entry-point group "
        f"{GROUP!r}",
    )
