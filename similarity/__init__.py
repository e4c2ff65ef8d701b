"""Field-class similarity scoring, state diffs and the CI gate."""

from preimage.similarity.diff import ItemChange, StateDiff, diff_snapshots
from preimage.similarity.scoring import (
    ClassScore,
    LeafDifference,
    SimilarityReport,
    compare,
    flatten,
    merge_reports,
    score,
)

__all__ = [
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
