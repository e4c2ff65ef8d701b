"""The ``imap://`` / ``imaps://`` connector: folders and messages with flags, dates and placement."""

from preimage.connectors.imap.connector import ImapConnector

__all__ = ["ImapConnector"]
