"""Restoring into another place: a snapshot re-addressed to a destination target, and
the identity fields that had to change on the way.

A backup of ``file:///srv/app`` restored into ``file:///tmp/staging``, a database
into another database, a namespace into another namespace: the connector rewrites
the snapshot so it describes the destination (its root, database name, namespace,
the references inside objects) and lists every such rewrite as an
:class:`IdentityMapping`.  The meter scores the rewritten snapshot against the
destination, so a mapped field is reported as mapped, never as lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from preimage.snapshot_schemas import Snapshot

__all__ = ["IdentityMapping", "Relocation", "rewrite_oracle"]


class IdentityMapping(BaseModel):
    """One identity that differs by design in the destination: ``what`` names the field
    (``root``, ``database``, ``namespace``, ``folder``, a reference inside an object),
    ``old`` its value in the backup, ``new`` in the destination."""

    model_config = ConfigDict(frozen=True)

    what: str
    old: str
    new: str
    note: str = ""

    def text(self) -> str:
        """``namespace: shop → staging (why)`` as a person reads it."""
        why = f" ({self.note})" if self.note else ""
        return f"{self.what}: {self.old} → {self.new}{why}"


@dataclass(frozen=True)
class Relocation:
    """A snapshot re-addressed to a destination, with every identity that changed and
    what could not be carried over (``notes``: said in the restore and score reports)."""

    snapshot: Snapshot
    mappings: tuple[IdentityMapping, ...] = ()
    notes: tuple[str, ...] = field(default=())


def rewrite_oracle(oracle: Any, rewrite: Callable[[str], str], blobs: Any | None) -> Any:
    """A schema oracle's record (:class:`~preimage.snapshot_schemas.oracle.SchemaOracle`)
    whose dump names the destination: every line passed through ``rewrite``, the text
    stored in ``blobs``.  Without ``blobs`` (a restore, which never reads the dump) or a
    dump, the record is returned as it is."""
    if blobs is None or oracle is None or not oracle.ran or oracle.digest is None:
        return oracle
    text = b"".join(blobs.chunks(oracle.digest)).decode("utf-8")
    lines = [rewrite(line) for line in text.split("\n")]
    moved = "\n".join(lines)
    if moved == text:
        return oracle
    return oracle.model_copy(update={"digest": blobs.put_bytes(moved.encode("utf-8"))})
