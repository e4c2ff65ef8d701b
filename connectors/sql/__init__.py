"""The SQLAlchemy connector: ``sqlite:///…``, ``mysql+pymysql://…`` and any other dialect.

Names are imported on first use, so that reading this connector's URI grammar
does not import the connector.
"""

from typing import TYPE_CHECKING

from preimage.interface.lazy import lazy_exports

if TYPE_CHECKING:
    from preimage.connectors.sql.connector import SQLAlchemyConnector

__all__ = ["SQLAlchemyConnector"]
__getattr__ = lazy_exports(__name__, {"SQLAlchemyConnector": "connector"})
