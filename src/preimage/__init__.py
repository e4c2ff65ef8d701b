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
    RemoteUnavailableError,
    RestoreConflictError,
    RestoreError,
    StoreBusyError,
    StoreConfigError,
    StoreError,
    StoreFormatError,
    StoreUnavailableError,
    TerminalConnectorError,
    TransientConnectorError,
    UnsafePathError,
    UsageError,
    WrongKeyError,
)
from preimage._registry import get_connector, known_schemes, register_connector
from preimage._store import Store
from preimage._target import Target

__version__ = "0.1.0"

__all__ = [
    "Backup",
    "BackupNotFoundError",
    "BlobCorruptError",
    "BlobMissingError",
    "BlobStore",
    "Connector",
    "ConnectorError",
    "InvalidTargetError",
    "NoSuchConnectorError",
    "PreimageError",
    "RemoteUnavailableError",
    "RestoreConflictError",
    "RestoreError",
    "RestoreResult",
    "Store",
    "StoreBusyError",
    "StoreConfigError",
    "StoreError",
    "StoreFormatError",
    "StoreUnavailableError",
    "Target",
    "TerminalConnectorError",
    "TransientConnectorError",
    "UnsafePathError",
    "UsageError",
    "WrongKeyError",
    "__version__",
    "capture",
    "diff",
    "get_connector",
    "known_schemes",
    "register_connector",
    "restore",
    "score",
    "show",
]
