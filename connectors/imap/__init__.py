"""The ``imap://`` / ``imaps://`` connector: folders and messages with flags, dates and placement.

Names are imported on first use, so that reading this connector's URI grammar
does not import the connector.
"""

from typing import TYPE_CHECKING

from preimage.interface.lazy import lazy_exports

if TYPE_CHECKING:
    from preimage.connectors.imap.connector import ImapConnector

__all__ = ["ImapConnector"]
__getattr__ = lazy_exports(__name__, {"ImapConnector": "connector"})
