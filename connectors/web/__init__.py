"""The ``web+<adapter>://`` connector: web-application records through site adapters.

Write an adapter by subclassing :class:`SiteAdapter` and register it with
:func:`register_site_adapter` or the entry-point group
``preimage.site_adapters``; see docs/browser.md for the guide.

Names are imported on first use, so that reading the URI grammar (``address``)
does not import the connector or the adapters.
"""

from typing import TYPE_CHECKING

from preimage.interface.lazy import lazy_exports

if TYPE_CHECKING:
    from preimage.connectors.web.adapter import (
        LoginRequiredError,
        RecordRefusedError,
        Refs,
        Response,
        SelectorMismatchError,
        Site,
        SiteAdapter,
    )
    from preimage.connectors.web.connector import WebAppConnector
    from preimage.connectors.web.registry import (
        get_site_adapter,
        known_site_adapters,
        register_site_adapter,
        unregister_site_adapter,
    )

__all__ = [
    "LoginRequiredError",
    "RecordRefusedError",
    "Refs",
    "Response",
    "SelectorMismatchError",
    "Site",
    "SiteAdapter",
    "WebAppConnector",
    "get_site_adapter",
    "known_site_adapters",
    "register_site_adapter",
    "unregister_site_adapter",
]
__getattr__ = lazy_exports(__name__, {
    **dict.fromkeys(
        ("LoginRequiredError", "RecordRefusedError", "Refs", "Response", "SelectorMismatchError",
         "Site", "SiteAdapter"), "adapter"),
    "WebAppConnector": "connector",
    **dict.fromkeys(
        ("get_site_adapter", "known_site_adapters", "register_site_adapter",
         "unregister_site_adapter"), "registry"),
})
