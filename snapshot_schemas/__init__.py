"""Pydantic models of every snapshot, versioned, with fidelity classes per field."""

from preimage.snapshot_schemas._base import (
    Fidelity,
    Item,
    Record,
    Snapshot,
    Uncaptured,
    content,
    iter_leaves,
    key,
    load_snapshot,
    metadata,
    register_migration,
    register_snapshot_type,
    server,
    snapshot_types,
)
from preimage.snapshot_schemas.files import FileEntry, FileSnapshot

__all__ = [
    "Fidelity",
    "FileEntry",
    "FileSnapshot",
    "Item",
    "Record",
    "Snapshot",
    "Uncaptured",
    "content",
    "iter_leaves",
    "key",
    "load_snapshot",
    "metadata",
    "register_migration",
    "register_snapshot_type",
    "server",
    "snapshot_types",
]
