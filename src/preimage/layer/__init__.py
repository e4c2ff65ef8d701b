"""The backup layer: see every agent tool call before it runs and preserve what it will change.

>>> from preimage.layer import BackupLayer, ToolCall
>>> decision = BackupLayer().before(ToolCall.shell("rm -rf build", cwd="/srv/app"))
>>> decision.backup_id   # restore with preimage.restore(decision.backup_id)
"""

from preimage.layer.call import McpTool, ToolCall
from preimage.layer.config import LayerConfig, McpServer, Mode
from preimage.layer.decision import Action, Decision, Finding, Impact, PlannedTarget, Tier
from preimage.layer.layer import BackupLayer, Plan
from preimage.layer.model import ModelTier
from preimage.layer.rules import Rule, RuleSet, load_rules

__all__ = [
    "Action",
    "BackupLayer",
    "Decision",
    "Finding",
    "Impact",
    "LayerConfig",
    "McpServer",
    "McpTool",
    "Mode",
    "ModelTier",
    "Plan",
    "PlannedTarget",
    "Rule",
    "RuleSet",
    "Tier",
    "ToolCall",
    "load_rules",
]
