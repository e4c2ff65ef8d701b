"""preimage: capture external state before an agent changes it, restore it by
backup ID, and score how faithfully it came back.

Importing this package imports no heavy client (psycopg, kubernetes,
imapclient, playwright, litellm); connectors load them when first used.
Names are imported on first use (PEP 562), so ``import preimage.layer.hook_client``
— the hook's path — costs nothing beyond the standard library.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing itself is not imported: the hook's path never needs it
if TYPE_CHECKING:
    from preimage._blobs import BlobStore
    from preimage._connector import Capabilities, Connector, ConnectorBase, Granularity
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
    from preimage._undo import CallEntry, UndoResult, timeline, undo
    from preimage.layer.call import ToolCall
    from preimage.layer.protect import Guard, UnprotectedCallError, protect, protected

_EXPORTS = {
    "BlobStore": "_blobs",
    **dict.fromkeys(("Capabilities", "Connector", "ConnectorBase", "Granularity"),
                    "_connector"),
    **dict.fromkeys(("Backup", "RestoreResult", "capture", "diff", "restore", "score", "show"),
                    "_engine"),
    **dict.fromkeys(("BackupNotFoundError", "BlobCorruptError", "BlobMissingError",
                     "ConnectorError", "InvalidTargetError", "NoSuchConnectorError",
                     "PreimageError", "RemoteUnavailableError", "RestoreConflictError",
                     "RestoreError", "StoreBusyError", "StoreConfigError", "StoreError",
                     "StoreFormatError", "StoreUnavailableError", "TerminalConnectorError",
                     "TransientConnectorError", "UnsafePathError", "UsageError",
                     "WrongKeyError"), "_errors"),
    **dict.fromkeys(("get_connector", "known_schemes", "register_connector"), "_registry"),
    "Store": "_store", "Target": "_target",
    **dict.fromkeys(("CallEntry", "UndoResult", "timeline", "undo"), "_undo"),
    # The in-process agent API lives with the backup layer.
    **dict.fromkeys(("protect", "protected", "Guard", "UnprotectedCallError"), "layer.protect"),
    "ToolCall": "layer.call",
}

__version__ = "0.1.0"

__all__ = [
    "Backup",
    "BackupNotFoundError",
    "BlobCorruptError",
    "BlobMissingError",
    "BlobStore",
    "CallEntry",
    "Capabilities",
    "Connector",
    "ConnectorBase",
    "ConnectorError",
    "Granularity",
    "Guard",
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
    "ToolCall",
    "TransientConnectorError",
    "UndoResult",
    "UnprotectedCallError",
    "UnsafePathError",
    "UsageError",
    "WrongKeyError",
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
    "timeline",
    "undo",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'preimage' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"preimage.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
