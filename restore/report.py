"""The account a restore gives of itself: per item, and every identity remap."""

from __future__ import annotations

import enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Outcome(enum.StrEnum):
    """What happened to one item."""

    RESTORED = "restored"     # written back (created or changed)
    UNCHANGED = "unchanged"   # live state already matched
    REMOVED = "removed"       # created after the capture and taken away again
    SKIPPED = "skipped"       # deliberately not restored (policy, scope, impossible)
    FAILED = "failed"         # tried and failed; the reason says why
    PLANNED = "planned"       # dry run: would be written


class ItemResult(BaseModel):
    """The outcome for one item, with the action taken or planned."""

    model_config = ConfigDict(frozen=True)

    key: str
    outcome: Outcome
    action: str = ""
    reason: str = ""


class IdRemap(BaseModel):
    """A server-assigned identity that changed: follow references with it.

    ``key`` names the item as the report's item results do — its natural key or its
    label (``deployments.apps/shop/web``, ``comment:<name>``) — and ``field`` the
    field that changed, so the meter can explain the difference it makes.
    """

    model_config = ConfigDict(frozen=True)

    key: str
    field: str
    old: Any
    new: Any


class RestoreReport(BaseModel):
    """What a connector did (or, in a dry run, would do) for one snapshot."""

    target: str
    connector: str
    dry_run: bool = False
    items: list[ItemResult] = Field(default_factory=list)
    remaps: list[IdRemap] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def add(self, key: str, outcome: Outcome, action: str = "", reason: str = "") -> None:
        """Record one item's outcome."""
        self.items.append(ItemResult(key=key, outcome=outcome, action=action, reason=reason))

    def count(self, outcome: Outcome) -> int:
        """How many items ended with ``outcome``."""
        return sum(1 for i in self.items if i.outcome is outcome)

    @property
    def changes(self) -> list[ItemResult]:
        """Items that were (or would be) written or removed."""
        return [
            i
            for i in self.items
            if i.outcome in (Outcome.RESTORED, Outcome.REMOVED, Outcome.PLANNED)
        ]

    @property
    def ok(self) -> bool:
        """True when no item failed."""
        return self.count(Outcome.FAILED) == 0
