"""One adapter per agent harness: its hook payload in, its answer out.

Each adapter reads the harness's own hook payload into a :class:`HookEvent`
(a harness-neutral :class:`~preimage.layer.call.ToolCall` before the call, and
a :class:`~preimage.layer.deciding.completion.ToolResult` after it) and writes the
layer's :class:`~preimage.layer.decision.Decision` back in the form, and with
the exit code, that harness obeys.  ``preimage.layer.harnesses.hook.handle`` does the
rest, the same for every harness.

============  ==============================  ===========================  =================
harness       before / after the call         answer                       can block / rewrite
============  ==============================  ===========================  =================
claude-code   PreToolUse / PostToolUse(+Fail)  hookSpecificOutput JSON     yes / yes
codex         PreToolUse / PostToolUse         hookSpecificOutput JSON     yes / yes (no ask)
gemini        BeforeTool / AfterTool           decision + hookSpecificOutput yes / yes (no ask)
opencode      tool.execute.before / .after     JSON for preimage's plugin  yes / yes (no ask)
qwen          PreToolUse / PostToolUse(+Fail)  hookSpecificOutput JSON     yes / refuses (no ask)
kilo          tool.execute.before / .after     JSON for preimage's plugin  yes / yes (no ask)
============  ==============================  ===========================  =================

Adapters are found by name in :data:`HARNESSES` and imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from preimage.interface.errors import UsageError

if TYPE_CHECKING:
    from preimage.layer.harnesses._base import Harness

HARNESSES: dict[str, str] = {
    "claude-code": "preimage.layer.harnesses.claude_code:ClaudeCode",
    "codex": "preimage.layer.harnesses.codex:Codex",
    "gemini": "preimage.layer.harnesses.gemini:Gemini",
    "opencode": "preimage.layer.harnesses.opencode:OpenCode",
    "qwen": "preimage.layer.harnesses.qwen:Qwen",
    "kilo": "preimage.layer.harnesses.kilo:Kilo",
}

ALIASES = {"claude": "claude-code", "gemini-cli": "gemini", "codex-cli": "codex", "qwen-code": "qwen",
           "kilocode": "kilo", "kilo-code": "kilo"}

_loaded: dict[str, Harness] = {}


def harness_names() -> list[str]:
    """Every harness preimage has an adapter for, in a stable order."""
    return list(HARNESSES)


def get_harness(name: str) -> Harness:
    """The adapter for harness ``name`` (or an alias such as ``gemini-cli``).

    Raises :class:`UsageError` naming the known harnesses when there is none.
    """
    key = ALIASES.get(name, name)
    if key in _loaded:
        return _loaded[key]
    spec = HARNESSES.get(key)
    if spec is None:
        raise UsageError(f"no adapter for harness {name!r}; known: {', '.join(HARNESSES)}")
    module, _, cls = spec.partition(":")
    adapter: Harness = getattr(importlib.import_module(module), cls)()
    _loaded[key] = adapter
    return adapter
