"""Field-class similarity scoring, state diffs, their human-readable account and the CI gate."""

from preimage.similarity.diff import ItemChange, StateDiff, diff_snapshots
from preimage.similarity.report import (
    CLASSES,
    RESTORABLE,
    ClassScore,
    LeafDifference,
    SimilarityReport,
    merge_reports,
)
from preimage.similarity.scoring import compare, flatten, score

__all__ = [
    "CLASSES",
    "RESTORABLE",
    "ClassScore",
    "ItemChange",
    "LeafDifference",
    "SimilarityReport",
    "StateDiff",
    "compare",
    "diff_snapshots",
    "flatten",
    "merge_reports",
    "score",
]
