"""The ``browser://`` connector: cookies, Web Storage and IndexedDB of a Chromium profile."""

from preimage.connectors.browser.chromium import browser_context, close_profile
from preimage.connectors.browser.connector import BrowserConnector

__all__ = ["BrowserConnector", "browser_context", "close_profile"]
