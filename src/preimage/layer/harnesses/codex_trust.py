"""Whether Codex will run preimage's hooks: Codex runs a hook only after the user trusted
it, and ``codex exec`` skips an untrusted one without a word.

Codex keeps the trust it was given in ``$CODEX_HOME/config.toml``, one
``[hooks.state."<hook>"]`` table with a ``trusted_hash`` per trusted hook.  The key's
format is Codex's own and not documented; a table is taken as the trust of preimage's
hook only when its key names the hooks file preimage wrote.  Anything else reads as
*not trusted* — the safe side: the user is told to trust the hook, never told that a
hook runs which Codex skips.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from preimage.layer.harnesses._base import home

__all__ = ["TRUST_HINT", "codex_home", "trusted"]

TRUST_HINT = ("Codex runs it only once you trust it: start `codex` in the project and trust "
              "preimage's hooks (`/hooks`, or \"Trust all and continue\"); `codex exec` skips "
              "an untrusted hook silently")


def codex_home() -> Path:
    """``$CODEX_HOME`` or ``~/.codex``."""
    base = os.environ.get("CODEX_HOME")
    return Path(base) if base else home() / ".codex"


def trusted(hooks_file: Path) -> bool:
    """Whether Codex's config records trust for a hook of ``hooks_file``."""
    try:
        doc = tomllib.loads((codex_home() / "config.toml").read_text())
    except (OSError, ValueError):
        return False
    hooks = doc.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    if not isinstance(state, dict):
        return False
    names = {str(hooks_file), str(hooks_file.resolve()) if hooks_file.exists() else ""} - {""}
    return any(isinstance(entry, dict) and entry.get("trusted_hash")
               and any(name in key for name in names) for key, entry in state.items())
