"""Byte counts: of a directory tree on disk, and as people read them."""

from __future__ import annotations

import os
from pathlib import Path


def tree_bytes(path: Path | str) -> int:
    """The apparent size of every file under ``path`` (or of ``path`` itself); links not followed."""
    if os.path.isfile(path) and not os.path.islink(path):
        return os.lstat(path).st_size
    total = 0
    for base, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(base, f)).st_size
            except OSError:  # gone while walking
                pass
    return total


def human_bytes(n: float) -> str:
    """``512 B``, ``3.4 KiB``, ``9.0 MiB``, ``1.2 GiB``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
