"""What a plain ``restore`` of an MCP call's workspace snapshot puts back by default.

When the layer cannot tell what an MCP tool call changes (a server of unknown kind), it
snapshots the workspace and, as a precaution, the depth-limited state of the home
(``~/.config`` and the like) — the server may keep state there.  Restoring all of it by
default would also roll back everything the user, the harness and other programs
changed in the home since, for a call that most likely never touched it.  So a plain
restore of such a backup puts back the targets inside the call's working directory and
names the rest, with the ``--only`` to restore them too; ``--only`` (or ``undo``, which
writes only what the call changed) reaches every target.
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlsplit

from preimage.store.backend import BackupRow

__all__ = ["default_scope"]


def _file_path(uri: str) -> str | None:
    parts = urlsplit(uri)
    return os.path.normpath(unquote(parts.path)) if parts.scheme == "file" else None


def default_scope(backup: BackupRow) -> tuple[list[str], list[str]]:
    """``(targets a plain restore writes, targets it leaves)`` — both empty unless
    ``backup`` is the workspace snapshot of an MCP call that also holds targets outside the
    call's working directory."""
    call = backup.tool_call or {}
    tool, cwd = call.get("tool"), call.get("cwd")
    if (backup.kind != "layer" or backup.tier != "workspace" or not isinstance(tool, str)
            or not tool.startswith("mcp__") or not isinstance(cwd, str) or not cwd):
        return [], []
    root = os.path.normpath(cwd)
    inside: list[str] = []
    outside: list[str] = []
    for row in backup.snapshots:
        path = _file_path(row.target)
        within = path is not None and (path == root or path.startswith(root.rstrip("/") + "/"))
        (inside if within else outside).append(row.target)
    if not inside or not outside:
        return [], []
    return inside, outside
