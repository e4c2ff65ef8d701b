"""Target URIs the layer names that no connector reads yet.

Every other grammar belongs to its connector, which parses and builds it
(``preimage.connectors.files.address``, ``….kubernetes.address``,
``….postgres.scope``, ``….imap.selection``, …); the layer calls those builders.
A URI here is still planned, so the decision can say what it would have
protected, and is reported as dropped because no connector can capture it.
"""

from __future__ import annotations

from urllib.parse import quote


def crontab_uri(user: str) -> str:
    """``crontab:///user``."""
    return "crontab:///" + quote(user, safe="")
