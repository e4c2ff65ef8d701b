"""The ``postgresql://`` connector: tables, rows, sequences and everything around them."""

from preimage.connectors.postgres.connector import PostgresConnector

__all__ = ["PostgresConnector"]
