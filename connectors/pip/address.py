"""``pip://`` target URIs, built here and read by :class:`~preimage.connectors.pip.PipConnector`.

::

    pip:///abs/venv             a virtual environment
    pip:///usr/bin/python3      the environment an interpreter runs in
"""

from __future__ import annotations

from preimage.interface.uri import quote_path


def pip_uri(env: str) -> str:
    """``pip:///abs/venv`` or ``pip:///usr/bin/python3``."""
    return "pip://" + quote_path(env)
