"""The user's cache folder: things preimage can make again (parser tables, the compiled
supervisor loop), never backups."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$PREIMAGE_CACHE_DIR``, ``$XDG_CACHE_HOME/preimage`` or ``~/.cache/preimage``."""
    if os.environ.get("PREIMAGE_CACHE_DIR"):
        return Path(os.environ["PREIMAGE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "preimage"
