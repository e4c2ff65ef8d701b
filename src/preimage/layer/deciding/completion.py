"""What happened after a tool call ran: the harness-neutral result and its record.

Every harness reports a finished tool call differently (Claude Code's
``PostToolUse`` with an object and ``duration_ms``, Codex's with a string,
Gemini CLI's ``AfterTool``, OpenCode's ``tool.execute.after``).  Adapters turn
each into a :class:`ToolResult`; :meth:`BackupLayer.after` turns that into a
:class:`Completion` tied to the backup taken before the call.

The tie between the two hook processes is a *pending note*: when the pre-call
hook took a backup (or failed to), it leaves a small JSON file keyed by the
session and the harness's call id (or, for harnesses without one, a digest of
the tool and its input); the post-call hook reads and removes it.  Notes live
beside the hook log, not in the store, so a store that cannot be written still
gets its failure reported after the call.  A read-only call leaves no note and
costs the post-call hook one ``stat``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from preimage.layer.call import ToolCall
from preimage.layer.decision import Decision

Status = Literal["ok", "error", "unknown"]

# Notes older than this are left from calls whose post-call event never came (a crash,
# a harness that skips it on failure) and are removed the next time one is written.
STALE_SECONDS = 24 * 3600


@dataclass(frozen=True)
class ToolResult:
    """How a tool call ended, as the harness reported it."""

    status: Status = "unknown"
    duration_ms: float | None = None
    output: str = ""            # the start of the tool's output (for the log)
    error: str | None = None


@dataclass
class Completion:
    """A finished call, tied to the backup taken before it (when there was one)."""

    tool: str
    status: Status
    backup_id: str | None = None
    error: str | None = None          # why the call was NOT backed up, when it was not
    duration_ms: float | None = None
    targets: list[str] = field(default_factory=list)
    session_id: str | None = None
    tool_use_id: str | None = None
    post_backup_id: str | None = None  # the same targets captured right after the call
    post_error: str | None = None      # why that capture failed, when it did
    post_capture_seconds: float = 0.0  # time that capture took
    post_pending: bool = False         # the note is given before that capture (answered first)

    @property
    def note(self) -> str:
        """One sentence for the agent about the finished call ("" when there is nothing to say)."""
        if self.error:
            return f"preimage: this call was NOT backed up — {self.error}"
        if self.backup_id and (self.post_backup_id or self.post_pending):
            return (f"preimage backup {self.backup_id} holds the state before this call; "
                    f"undo just this call with `preimage undo {self.backup_id}` (later changes "
                    f"are kept), or bring it all back with `preimage restore {self.backup_id}`.")
        if self.backup_id:
            extra = f" ({self.post_error})" if self.post_error else ""
            return (f"preimage backup {self.backup_id} holds the state before this call; "
                    f"undo with `preimage restore {self.backup_id}`.{extra}")
        return ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view (the hook log's ``completed`` event)."""
        return asdict(self)


def pending_dir() -> Path:
    """Where pre-call hooks leave notes for post-call hooks (beside the hook log)."""
    from preimage.layer.config import log_path

    return log_path().parent / "pending"


def call_key(call: ToolCall) -> str:
    """A file name for ``call``: session and call id, or a digest of tool and input."""
    ident = call.tool_use_id or hashlib.sha256(
        json.dumps([call.tool, call.input], sort_keys=True, default=str).encode()).hexdigest()[:32]
    raw = f"{call.harness}-{call.session_id or 'nosession'}-{ident}"
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in raw)[:200]


def remember(call: ToolCall, *, backup_id: str | None, error: str | None,
             targets: list[str], also: ToolCall | None = None) -> None:
    """Leave the pre-call outcome for the post-call hook (failures to write are ignored).

    ``also`` is the same call as the harness may report it afterwards (a rewritten input,
    for a harness without call ids): the note is left under both keys, each naming the
    other, so whichever the after-event finds takes both and none is left behind."""
    if backup_id is None and error is None:
        return
    folder = pending_dir()
    keys = list(dict.fromkeys([call_key(call), *([call_key(also)] if also else [])]))
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        note = {"backup_id": backup_id, "error": error, "targets": targets,
                "tool": call.tool, "started": time.time(), "keys": keys}
        for key in keys:
            path = folder / f"{key}.json"
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(note))
            os.replace(tmp, path)
        _sweep(folder)
    except OSError:
        pass


def take(call: ToolCall) -> dict[str, Any] | None:
    """The pre-call note for ``call``, removed as it is read with every other copy of it
    (``None`` when there is none)."""
    folder = pending_dir()
    path = folder / f"{call_key(call)}.json"
    try:
        note = json.loads(path.read_text())
        path.unlink()
    except (OSError, ValueError):
        return None
    if not isinstance(note, dict):
        return None
    for key in note.get("keys") or []:
        if isinstance(key, str) and key == Path(key).name:   # a bare file name, never a path
            (folder / f"{key}.json").unlink(missing_ok=True)
    return note


def complete(call: ToolCall, result: ToolResult,
             decision: Decision | None = None) -> Completion:
    """The :class:`Completion` of ``call``: its decision (or pre-call note) joined with ``result``."""
    if decision is not None:
        note: dict[str, Any] = {"backup_id": decision.backup_id, "error": decision.error,
                                "targets": list(decision.targets)}
    else:
        note = take(call) or {}
    duration = result.duration_ms
    started = note.get("started")
    if duration is None and isinstance(started, (int, float)):
        duration = round((time.time() - started) * 1000, 1)
    return Completion(
        tool=call.tool, status=result.status,
        backup_id=note.get("backup_id") if isinstance(note.get("backup_id"), str) else None,
        error=note.get("error") if isinstance(note.get("error"), str) else None,
        duration_ms=duration, targets=list(note.get("targets") or []),
        session_id=call.session_id, tool_use_id=call.tool_use_id,
    )


def _sweep(folder: Path) -> None:
    cutoff = time.time() - STALE_SECONDS
    try:
        for entry in os.scandir(folder):
            if entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
    except OSError:
        pass
