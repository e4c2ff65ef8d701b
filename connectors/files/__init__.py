"""The ``file://`` connector: a file or a directory tree with its hard metadata."""

from preimage.connectors.files.connector import FileConnector

__all__ = ["FileConnector"]
