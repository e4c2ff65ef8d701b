"""``git://`` target URIs, built here and read by :class:`~preimage.connectors.git.GitConnector`.

::

    git:///abs/repo         the working tree at that path (or any path inside it)
"""

from __future__ import annotations

from preimage.interface.uri import quote_path


def git_uri(repo: str) -> str:
    """``git:///abs/repo``."""
    return "git://" + quote_path(repo)
