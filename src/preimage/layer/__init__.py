"""The backup layer: see every agent tool call before it runs and preserve what it will change.

>>> from preimage.layer import BackupLayer, ToolCall
>>> decision = BackupLayer().before(ToolCall.shell("rm -rf build", cwd="/srv/app"))
>>> decision.backup_id   # restore with preimage.restore(decision.backup_id)

Names are imported on first use, so ``preimage``'s other commands do not pay
for the shell parser.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing itself is not imported: the hook's path never needs it
if TYPE_CHECKING:
    from typing import Any

_EXPORTS = {
    "Action": "decision", "Decision": "decision", "Finding": "decision", "Impact": "decision",
    "PlannedTarget": "decision", "Tier": "decision",
    "BackupLayer": "deciding.backup_layer", "Plan": "deciding.backup_layer",
    "LayerConfig": "config", "McpServer": "config", "Mode": "config",
    "McpTool": "call", "ToolCall": "call",
    "ModelTier": "deciding.model",
    "Rule": "deciding.rules", "RuleSet": "deciding.rules", "load_rules": "deciding.rules",
}

__all__ = [
    "Action", "BackupLayer", "Decision", "Finding", "Impact", "LayerConfig", "McpServer",
    "McpTool", "Mode", "ModelTier", "Plan", "PlannedTarget", "Rule", "RuleSet", "Tier",
    "ToolCall", "load_rules",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'preimage.layer' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"preimage.layer.{module}"), name)
    globals()[name] = value
    return value
