"""What a restore may do: dry run, conflict handling and scope."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class ConflictMode(enum.StrEnum):
    """What to do with live state that differs from the capture.

    * ``overwrite`` (default) — bring the target back exactly as captured:
      changed items are reverted and items created since the capture removed;
    * ``merge`` — only put back what is missing; leave changed and new items alone;
    * ``refuse`` — stop before writing anything if any captured item changed.
    """

    OVERWRITE = "overwrite"
    MERGE = "merge"
    REFUSE = "refuse"


@dataclass(frozen=True)
class RestorePolicy:
    """How a connector restores a snapshot.

    ``only`` narrows the restore to item keys (or paths) starting with one of
    its entries; empty means everything.
    """

    dry_run: bool = False
    conflict: ConflictMode = ConflictMode.OVERWRITE
    only: tuple[str, ...] = field(default_factory=tuple)

    def in_scope(self, item_key: str) -> bool:
        """Whether ``item_key`` is inside the policy's scope filters."""
        return not self.only or any(item_key.startswith(prefix) for prefix in self.only)
