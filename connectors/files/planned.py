"""The compact form of a snapshot entry that a restore plan holds.

A restore plan keeps every entry it will write or set metadata on until the
metadata pass, which runs bottom-up after every write.  A validated
:class:`~preimage.snapshot_schemas.files.FileEntry` takes about 1.7 KB (a
pydantic model's dict and bookkeeping); the plan needs only what it writes
back, held in slots, about a quarter of that.  The plan reads the snapshot's
items once, in capture order, and keeps only this form.
"""

from __future__ import annotations

from dataclasses import dataclass

from preimage.snapshot_schemas.files import FileEntry

_NO_XATTRS: dict[str, str] = {}   # shared by every entry without xattrs; never written to


@dataclass(frozen=True, slots=True, eq=False)
class PlannedEntry:
    """What a restore writes back of one captured entry (the fields a client can set)."""

    path: str
    type: str
    size: int
    digest: str | None
    link_target: str | None
    hardlink_to: str | None
    mode: int
    uid: int
    gid: int
    mtime_ns: int
    atime_ns: int
    xattrs: dict[str, str]
    rdev: tuple[int, int] | None
    extents: list[tuple[int, int]] | None

    @classmethod
    def of(cls, e: FileEntry) -> PlannedEntry:
        """The compact form of ``e`` (strings shared, not copied)."""
        return cls(e.path, e.type, e.size, e.digest, e.link_target, e.hardlink_to, e.mode,
                   e.uid, e.gid, e.mtime_ns, e.atime_ns, e.xattrs or _NO_XATTRS, e.rdev,
                   e.extents)


__all__ = ["PlannedEntry"]
