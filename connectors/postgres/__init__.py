"""The ``postgresql://`` connector: tables, rows, sequences and everything around them.

Names are imported on first use, so that reading this connector's URI grammar
does not import the connector.
"""

from typing import TYPE_CHECKING

from preimage.interface.lazy import lazy_exports

if TYPE_CHECKING:
    from preimage.connectors.postgres.connector import PostgresConnector

__all__ = ["PostgresConnector"]
__getattr__ = lazy_exports(__name__, {"PostgresConnector": "connector"})
