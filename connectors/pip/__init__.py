"""The ``pip://`` connector: the package set of a Python environment, restorable offline."""

from preimage.connectors.pip.connector import PipConnector

__all__ = ["PipConnector"]
