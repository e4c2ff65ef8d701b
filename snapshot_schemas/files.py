"""Snapshot schema of the ``file`` connector (v1).

One :class:`FileEntry` per path under the target, the target itself included
with the path ``"."``.  What is kept, by class:

* content  — type, bytes (``digest`` + ``size``), symlink target, hardlink grouping;
* metadata — mode bits incl. setuid/setgid/sticky, uid/gid, mtime/atime in
  nanoseconds, extended attributes, device numbers of device nodes;
* server   — inode and ctime: the kernel assigns them and no client can set them.

``atime`` is captured before the file is read (reads use ``O_NOATIME`` where
allowed) so a capture does not move it.  Sockets are recorded but cannot be
re-created by a client; restore reports them as skipped.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from preimage.snapshot_schemas._base import (
    Item,
    Snapshot,
    content,
    key,
    metadata,
    register_snapshot_type,
    server,
)

FileType = Literal["file", "dir", "symlink", "fifo", "chardev", "blockdev", "socket"]


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
    mode: int = metadata(description="permission bits incl. setuid/setgid/sticky (0o7777)")
    uid: int = metadata()
    gid: int = metadata()
    mtime_ns: int = metadata()
    atime_ns: int = metadata()
    xattrs: dict[str, str] = metadata(
        default_factory=dict, description="name → hex value; security.* included when readable"
    )
    rdev: tuple[int, int] | None = metadata(None, description="(major, minor) of device nodes")
    inode: int = server()
    ctime_ns: int = server()


@register_snapshot_type
class FileSnapshot(Snapshot):
    """A file or a directory tree."""

    schema_name: ClassVar[str] = "file"
    schema_version: int = 1
    connector: str = "file"
    root: str = Field(description="absolute path of the target")
    root_type: FileType | None = Field(None, description="None when the target did not exist")
    items: list[FileEntry] = Field(default_factory=list)
