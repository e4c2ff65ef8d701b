"""What an extractor may know about the call it is reading."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig


@dataclass
class Context:
    """The call, the configuration, the workspace and the session's memory."""

    call: ToolCall
    config: LayerConfig
    workspace: str
    store_home: Path | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> str:
        """The user's home directory."""
        return self.env.get("HOME") or os.path.expanduser("~")

    def outside_workspace(self, path: str) -> bool:
        """Whether ``path`` lies outside the workspace."""
        ws = self.workspace.rstrip("/") or "/"
        return not (path == ws or path.startswith(ws + "/") or ws == "/")

    # ------------------------------------------------------------ session memory
    def _session_file(self) -> Path | None:
        if self.store_home is None:
            return None
        session = self.call.session_id or "default"
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in session)[:80]
        return self.store_home / "layer" / "sessions" / f"{safe}.json"

    def session_get(self, key: str) -> Any:
        """A value remembered for this session (e.g. the page a browser is on)."""
        path = self._session_file()
        if path is None:
            return None
        try:
            return json.loads(path.read_text()).get(key)
        except (OSError, ValueError):
            return None

    def session_set(self, key: str, value: Any) -> None:
        """Remember ``value`` for this session; failures are ignored (memory is a hint)."""
        path = self._session_file()
        if path is None:
            return
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                data = {}
            data[key] = value
            data["updated_at"] = time.time()
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data))
            os.replace(tmp, path)
        except OSError:
            pass
