"""The ``git://`` connector: a repository's HEAD, refs, index, stashes and working tree."""

from preimage.connectors.git.connector import GitConnector

__all__ = ["GitConnector"]
