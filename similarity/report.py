"""The meter's account: scores per fidelity class and every leaf that differs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field

from preimage.restoration import IdentityMapping
from preimage.snapshot_schemas import Fidelity

#: Every class, in the order reports list them.
CLASSES = (
    Fidelity.CONTENT.value, Fidelity.METADATA.value, Fidelity.ACCESS.value, Fidelity.SERVER.value,
)
#: What a client can bring back and reads do not disturb: the number CI gates on.
RESTORABLE = (Fidelity.CONTENT.value, Fidelity.METADATA.value)
#: Named unions of classes that ``value()`` and ``score --on`` accept besides class names.
UNIONS: dict[str, tuple[str, ...]] = {"restorable": RESTORABLE, "overall": CLASSES}


class ClassScore(BaseModel):
    """The score of one fidelity class (or of a union of classes).

    ``score`` is ``None`` when neither side has a leaf of the class: there is
    nothing to compare, and reports show ``n/a`` rather than a perfect score.
    """

    original: int = 0
    matched: int = 0
    extra: int = 0
    score: float | None = None

    @classmethod
    def of(cls, original: int, matched: int, extra: int) -> ClassScore:
        """``matched / (original + extra)``, or ``None`` when both are 0."""
        denominator = original + extra
        return cls(
            original=original, matched=matched, extra=extra,
            score=None if denominator == 0 else matched / denominator,
        )

    @property
    def applicable(self) -> bool:
        """Whether either side had a leaf of this class."""
        return self.score is not None

    def text(self, digits: int = 4) -> str:
        """The score as a person reads it: ``0.9876`` or ``n/a``."""
        return "n/a" if self.score is None else f"{self.score:.{digits}f}"


class LeafDifference(BaseModel):
    """One leaf (or one whole item) that differs between original and restored.

    A missing or extra item is one difference however many leaves it has
    (``leaves`` counts them, ``fidelity`` is the weightiest class among them);
    ``item`` names the item for a person, ``key`` is its natural key.
    """

    item: str
    path: str
    fidelity: str
    reason: str
    original: Any = None
    restored: Any = None
    note: str = ""
    key: str = ""
    display: str = ""
    leaves: int = 1


class SimilarityReport(BaseModel):
    """Per-class and overall similarity, with every differing leaf."""

    classes: dict[str, ClassScore] = Field(default_factory=dict)
    restorable: ClassScore = Field(default_factory=ClassScore)
    overall: ClassScore = Field(default_factory=ClassScore)
    items_original: int = 0
    items_restored: int = 0
    uncaptured: int = 0
    oracles: list[str] = Field(
        default_factory=list,
        description="what each outside oracle (the server's dump tool) found, or why it did "
        "not run",
    )
    differences: list[LeafDifference] = Field(default_factory=list)
    # Identities that differ by design (another root, database, namespace): compared
    # after the mapping, so they are reported here and never as losses.
    mapped: list[IdentityMapping] = Field(default_factory=list)

    def union(self, names: Iterable[str]) -> ClassScore:
        """The score over several classes: their counts summed."""
        parts = [self.classes.get(n, ClassScore()) for n in names]
        return ClassScore.of(
            sum(p.original for p in parts), sum(p.matched for p in parts),
            sum(p.extra for p in parts),
        )

    def value(self, which: str = "restorable") -> float | None:
        """The score named ``which``: ``restorable``, ``overall``, a class name, or
        classes joined by ``+`` (``content+metadata+access``); ``None`` when n/a."""
        return self.score_of(which).score

    def score_of(self, which: str) -> ClassScore:
        """The :class:`ClassScore` named ``which`` (see :meth:`value`)."""
        names = UNIONS.get(which) or tuple(which.split("+"))
        unknown = [n for n in names if n not in CLASSES]
        if unknown:
            raise ValueError(
                f"unknown score {which!r}: use restorable, overall, or classes from "
                f"{', '.join(CLASSES)} joined by '+'"
            )
        if len(names) == 1:
            return self.classes.get(names[0], ClassScore())
        return self.union(names)

    def set_counts(self, counts: Mapping[str, tuple[int, int, int] | list[int]]) -> None:
        """Set every class and union from ``class → (original, matched, extra)``."""
        for c in CLASSES:
            o, m, e = counts.get(c, (0, 0, 0))
            self.classes[c] = ClassScore.of(o, m, e)
        self.restorable = self.union(RESTORABLE)
        self.overall = self.union(CLASSES)


def merge_reports(reports: Iterable[SimilarityReport]) -> SimilarityReport:
    """Combine the reports of several targets by summing their counts."""
    total = SimilarityReport()
    sums = {c: [0, 0, 0] for c in CLASSES}
    for rep in reports:
        total.items_original += rep.items_original
        total.items_restored += rep.items_restored
        total.uncaptured += rep.uncaptured
        total.oracles.extend(rep.oracles)
        total.differences.extend(rep.differences)
        total.mapped.extend(rep.mapped)
        for c in CLASSES:
            s = rep.classes.get(c, ClassScore())
            sums[c][0] += s.original
            sums[c][1] += s.matched
            sums[c][2] += s.extra
    total.set_counts(sums)
    return total
