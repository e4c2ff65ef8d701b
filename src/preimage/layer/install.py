"""Writing the hook into a harness's settings without disturbing what is there."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from preimage._errors import UsageError

HOOK_MARK = "hook claude-code"


def hook_command(extra: str = "") -> str:
    """The command line the harness runs: this installation's ``preimage`` executable."""
    exe = Path(sys.executable).parent / "preimage"
    found = str(exe) if exe.exists() else (shutil.which("preimage") or "preimage")
    return f"{found} {HOOK_MARK}{(' ' + extra) if extra else ''}"


def install_claude_code(settings: Path, command: str, *, matcher: str = "*",
                        timeout: int = 60) -> tuple[Path, bool]:
    """Add (or update) preimage's ``PreToolUse`` hook in ``settings``.

    Every other key, hook and matcher is kept.  Returns ``(path, changed)``.
    Raises :class:`UsageError` when the file exists but is not a JSON object
    (it is left untouched).
    """
    data: dict[str, Any] = {}
    if settings.exists():
        try:
            loaded = json.loads(settings.read_text() or "{}")
        except ValueError as exc:
            raise UsageError(f"{settings} is not valid JSON ({exc}); fix it first — "
                             "nothing was changed") from exc
        if not isinstance(loaded, dict):
            raise UsageError(f"{settings} does not hold a JSON object; nothing was changed")
        data = loaded
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError(f"{settings}: 'hooks' is not an object; nothing was changed")
    pre = hooks.setdefault("PreToolUse", [])
    if not isinstance(pre, list):
        raise UsageError(f"{settings}: 'hooks.PreToolUse' is not a list; nothing was changed")
    wanted = {"type": "command", "command": command, "timeout": timeout}
    for group in pre:
        for h in group.get("hooks", []) if isinstance(group, dict) else []:
            if isinstance(h, dict) and HOOK_MARK in str(h.get("command", "")):
                if h == wanted and group.get("matcher") == matcher:
                    return settings, False
                h.clear()
                h.update(wanted)
                group["matcher"] = matcher
                _write(settings, data)
                return settings, True
    pre.append({"matcher": matcher, "hooks": [wanted]})
    _write(settings, data)
    return settings, True


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)
