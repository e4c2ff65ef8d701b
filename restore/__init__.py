"""Restore planning, conflict policy, the restore journal and the id-remap report."""

from preimage.restore.policy import ConflictMode, RestorePolicy
from preimage.restore.report import IdRemap, ItemResult, Outcome, RestoreReport

__all__ = ["ConflictMode", "IdRemap", "ItemResult", "Outcome", "RestorePolicy", "RestoreReport"]
