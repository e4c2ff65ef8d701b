"""The ``file://`` connector: a file or a directory tree with its hard metadata.

Names are imported on first use, so that reading this connector's URI grammar
does not import the connector.
"""

from typing import TYPE_CHECKING

from preimage.interface.lazy import lazy_exports

if TYPE_CHECKING:
    from preimage.connectors.files.connector import FileConnector

__all__ = ["FileConnector"]
__getattr__ = lazy_exports(__name__, {"FileConnector": "connector"})
