"""Snapshot schema of the ``file`` connector (v2).

One :class:`FileEntry` per path under the target, the target itself included
with the path ``"."``.  What is kept, by class:

* content  — type, bytes (``digest`` + ``size``), symlink target, hardlink grouping;
* metadata — mode bits incl. setuid/setgid/sticky, uid/gid, mtime in
  nanoseconds, extended attributes, device numbers of device nodes, and the
  data extents of a sparse file (where its holes are);
* access   — atime in nanoseconds: restored like mtime, but any reader of the
  restored tree moves it again, so it is scored apart from ``restorable``;
* server   — inode and ctime: the kernel assigns them and no client can set them.

``atime`` is captured before the file is read (reads use ``O_NOATIME`` where
allowed) so a capture does not move it.  Sockets are recorded but cannot be
re-created by a client; restore reports them as skipped.

Paths are the kernel's bytes as ``os.fsdecode`` strings: a name that is not
UTF-8 holds surrogate escapes, stored as ``\\udcXX`` escapes in the JSON document.  A
regular file with no ``digest`` was not read (over the store's per-file cap;
the snapshot's ``uncaptured`` says so): a restore leaves its live content alone.

v2 (this version) added ``FileEntry.extents`` and ``FileSnapshot.root_parent``;
a v1 document migrates with both unset.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import Field

from preimage.snapshot_schemas._base import (
    Item,
    Snapshot,
    access,
    content,
    key,
    metadata,
    register_migration,
    register_snapshot_type,
    server,
)

FileType = Literal["file", "dir", "symlink", "fifo", "chardev", "blockdev", "socket"]


def walk_order(path: str) -> tuple[str, ...]:
    """Where ``path`` comes in a walk of the tree: ``"."`` first, then by components
    (pre-order with each directory's names sorted is the order of these tuples)."""
    return () if path == "." else tuple(path.split("/"))


def _entry_order(entry: FileEntry) -> tuple[str, ...]:
    return walk_order(entry.path)


class FileEntry(Item):
    """One filesystem entry, relative to the target root."""

    kind: str = key("file")
    path: str = key(description="POSIX path relative to the target root; '.' is the root")
    type: FileType = content()
    size: int = content(0)
    digest: str | None = content(None, description="sha256 of the bytes (regular files)")
    link_target: str | None = content(None, description="symlink target, verbatim")
    hardlink_to: str | None = content(
        None, description="path of the first entry sharing this inode, if any"
    )
    mode: int = metadata(
        description="permission bits incl. setuid/setgid/sticky (0o7777)", display="mode"
    )
    uid: int = metadata()
    gid: int = metadata()
    mtime_ns: int = metadata(display="ns")
    atime_ns: int = access(display="ns")
    xattrs: dict[str, str] = metadata(
        default_factory=dict, description="name → hex value; security.* included when readable"
    )
    rdev: tuple[int, int] | None = metadata(None, description="(major, minor) of device nodes")
    extents: list[tuple[int, int]] | None = metadata(
        None, description="(offset, length) of each data region of a sparse file; None: no holes"
    )
    inode: int = server(reason="the filesystem numbers inodes; a re-created file gets a new one")
    ctime_ns: int = server(
        display="ns", reason="the kernel stamps ctime on every change; no call can set it"
    )

    def label(self) -> str:
        """The entry's path under the target (``.`` is the target itself)."""
        return self.path


@register_snapshot_type
class FileSnapshot(Snapshot):
    """A file or a directory tree."""

    schema_name: ClassVar[str] = "file"
    items_from_json_text: ClassVar[bool] = True
    schema_version: int = 2
    connector: str = "file"
    root: str = Field(description="absolute path of the target")
    root_parent: str | None = Field(
        None,
        description="the real path (symlinks resolved) of the target's parent at capture: a "
        "restore refuses to write when it resolves elsewhere now",
    )
    root_type: FileType | None = Field(None, description="None when the target did not exist")
    items: list[FileEntry] = Field(default_factory=list)

    @classmethod
    def item_order(cls) -> Callable[[Any], Any] | None:
        """Entries come in walk order (:func:`walk_order` of their paths): the capture
        walks each directory's names sorted, parents before children."""
        return _entry_order


@register_migration("file", 1)
def _v1_to_v2(document: dict[str, Any]) -> dict[str, Any]:
    """v1 had neither extents nor root_parent: both stay unset."""
    return {**document, "schema_version": 2}
