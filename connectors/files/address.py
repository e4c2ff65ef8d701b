"""``file://`` target URIs, built here and read by :class:`~preimage.connectors.files.FileConnector`.

::

    file:///abs/path        a file, a directory tree, or a path that does not exist yet

The host is empty (or ``localhost``): file targets are local.
"""

from __future__ import annotations

from preimage._uri import quote_path


def file_uri(path: str) -> str:
    """``file:///abs/path``."""
    return "file://" + quote_path(path)
