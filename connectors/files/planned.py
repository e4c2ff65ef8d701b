"""The compact form of a snapshot entry that a restore plan reads back.

A validated :class:`~preimage.snapshot_schemas.files.FileEntry` takes about
1.7 KB (a pydantic model's dict and bookkeeping); the plan needs only what it
compares and writes back, held in slots.  The plan keeps its entries as rows
of a temporary table (:mod:`.plan_table`) and makes this form of one row at a
time, as a pass reaches it.
"""

from __future__ import annotations

from dataclasses import dataclass

NO_XATTRS: dict[str, str] = {}   # shared by every entry without xattrs; never written to


@dataclass(slots=True, eq=False)
class PlannedEntry:
    """What a restore compares and writes back of one entry (the fields a client can set,
    and the live inode, which tells hard links apart).  Never changed once made, but not
    declared frozen: a frozen dataclass sets each of its 15 fields through
    ``object.__setattr__``, 2.3 µs an entry against 0.3, and a restore makes two or three
    of them per entry."""

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
    inode: int | None = None


__all__ = ["NO_XATTRS", "PlannedEntry"]
