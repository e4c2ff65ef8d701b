"""The ``git://`` connector: a repository's HEAD, refs, index, stashes and working tree.

Names are imported on first use, so that reading this connector's URI grammar
does not import the connector.
"""

from typing import TYPE_CHECKING

from preimage.interface.lazy import lazy_exports

if TYPE_CHECKING:
    from preimage.connectors.git.connector import GitConnector

__all__ = ["GitConnector"]
__getattr__ = lazy_exports(__name__, {"GitConnector": "connector"})
