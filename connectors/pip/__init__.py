"""The ``pip://`` connector: the package set of a Python environment, restorable offline.

Names are imported on first use, so that reading this connector's URI grammar
does not import the connector.
"""

from typing import TYPE_CHECKING

from preimage.interface.lazy import lazy_exports

if TYPE_CHECKING:
    from preimage.connectors.pip.connector import PipConnector

__all__ = ["PipConnector"]
__getattr__ = lazy_exports(__name__, {"PipConnector": "connector"})
