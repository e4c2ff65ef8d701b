"""preimage: capture external state before an agent changes it, restore it by
backup ID, and score how faithfully it came back.

Importing this package imports no heavy client (psycopg, kubernetes,
imapclient, playwright, litellm); connectors load them when first used.
"""

from preimage._blobs import BlobStore
from preimage._connector import Connector
from preimage._engine import Backup, RestoreResult, capture, diff, restore, score, show
from preimage._errors import (
    BackupNotFoundError,
    BlobCorruptError,
    BlobMissingError,
    ConnectorError,
    InvalidTargetError,
    NoSuchConnectorError,
    PreimageError,
    RestoreConflictError,
    RestoreError,
    StoreError,
    StoreUnavailableError,
    TerminalConnectorError,
    TransientConnectorError,
    UnsafePathError,
    UsageError,
)
from preimage._registry import get_connector, known_schemes, register_connector
from preimage._store import Store
from preimage._target import Target

__version__ = "0.1.0"

# The in-process agent API lives with the backup layer; it is imported on first use.
_LAZY = {"protect": "preimage.layer.protect", "protected": "preimage.layer.protect",
         "Guard": "preimage.layer.protect", "UnprotectedCallError": "preimage.layer.protect",
         "ToolCall": "preimage.layer.call"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'preimage' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Backup",
    "BackupNotFoundError",
    "BlobCorruptError",
    "BlobMissingError",
    "BlobStore",
    "Connector",
    "ConnectorError",
    "Guard",
    "InvalidTargetError",
    "NoSuchConnectorError",
    "PreimageError",
    "RestoreConflictError",
    "RestoreError",
    "RestoreResult",
    "Store",
    "StoreError",
    "StoreUnavailableError",
    "Target",
    "TerminalConnectorError",
    "ToolCall",
    "TransientConnectorError",
    "UnprotectedCallError",
    "UnsafePathError",
    "UsageError",
    "__version__",
    "capture",
    "diff",
    "get_connector",
    "known_schemes",
    "protect",
    "protected",
    "register_connector",
    "restore",
    "score",
    "show",
]
