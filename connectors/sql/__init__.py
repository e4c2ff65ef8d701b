"""The SQLAlchemy connector: ``sqlite:///…``, ``mysql+pymysql://…`` and any other dialect."""

from preimage.connectors.sql.connector import SQLAlchemyConnector

__all__ = ["SQLAlchemyConnector"]
