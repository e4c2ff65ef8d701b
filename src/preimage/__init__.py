"""preimage: capture external state before an agent changes it, restore it by
backup ID, and score how faithfully it came back.

Importing this package imports no heavy client (psycopg, kubernetes,
imapclient, playwright, litellm); connectors load them when first used.
Names are imported on first use (PEP 562), so ``import preimage.services.hook_client``
— the hook's path — costs nothing beyond the standard library.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing itself is not imported: the hook's path never needs it
if TYPE_CHECKING:
    from preimage.engine.against import diff_backups, score_against
    from preimage.engine.backups import Backup, RestoreResult, show
    from preimage.engine.capture import capture
    from preimage.engine.compare import diff, score
    from preimage.engine.elsewhere import RelocatedResult, restore_to
    from preimage.engine.restore import restore
    from preimage.engine.undo import CallEntry, UndoResult, timeline, undo
    from preimage.interface.blobs import BlobStore
    from preimage.interface.connector import Capabilities, Connector, ConnectorBase, Granularity
    from preimage.interface.errors import (
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
    from preimage.interface.registry import get_connector, known_schemes, register_connector
    from preimage.interface.target import Target
    from preimage.layer.call import ToolCall
    from preimage.layer.harnesses.protect import Guard, UnprotectedCallError, protect, protected
    from preimage.store.store import Store

_EXPORTS = {
    "BlobStore": "interface.blobs",
    **dict.fromkeys(("Capabilities", "Connector", "ConnectorBase", "Granularity"),
                    "interface.connector"),
    **dict.fromkeys(("Backup", "RestoreResult", "show"), "engine.backups"),
    "capture": "engine.capture", "restore": "engine.restore",
    **dict.fromkeys(("diff", "score"), "engine.compare"),
    **dict.fromkeys(("diff_backups", "score_against"), "engine.against"),
    **dict.fromkeys(("RelocatedResult", "restore_to"), "engine.elsewhere"),
    **dict.fromkeys(("BackupNotFoundError", "BlobCorruptError", "BlobMissingError",
                     "ConnectorError", "InvalidTargetError", "NoSuchConnectorError",
                     "PreimageError", "RemoteUnavailableError", "RestoreConflictError",
                     "RestoreError", "StoreBusyError", "StoreConfigError", "StoreError",
                     "StoreFormatError", "StoreUnavailableError", "TerminalConnectorError",
                     "TransientConnectorError", "UnsafePathError", "UsageError",
                     "WrongKeyError"), "interface.errors"),
    **dict.fromkeys(("get_connector", "known_schemes", "register_connector"),
                    "interface.registry"),
    "Store": "store.store", "Target": "interface.target",
    **dict.fromkeys(("CallEntry", "UndoResult", "timeline", "undo"), "engine.undo"),
    # The in-process agent API lives with the backup layer's harness fitting.
    **dict.fromkeys(("protect", "protected", "Guard", "UnprotectedCallError"),
                    "layer.harnesses.protect"),
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
    "RelocatedResult",
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
    "diff_backups",
    "get_connector",
    "known_schemes",
    "protect",
    "protected",
    "register_connector",
    "restore",
    "restore_to",
    "score",
    "score_against",
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
