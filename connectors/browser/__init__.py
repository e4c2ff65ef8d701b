"""The ``browser://`` connector: cookies, Web Storage and IndexedDB of a Chromium profile.

Names are imported on first use, so that reading this connector's URI grammar
does not import the connector.
"""

from typing import TYPE_CHECKING

from preimage.interface.lazy import lazy_exports

if TYPE_CHECKING:
    from preimage.connectors.browser.chromium import browser_context, close_profile
    from preimage.connectors.browser.connector import BrowserConnector

__all__ = ["BrowserConnector", "browser_context", "close_profile"]
__getattr__ = lazy_exports(__name__, {
    "BrowserConnector": "connector",
    "browser_context": "chromium",
    "close_profile": "chromium",
})
