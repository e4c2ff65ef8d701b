"""What a restore may do: dry run, conflict handling and scope."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class ConflictMode(enum.StrEnum):
    """What to do with live state that differs from the capture.

    * ``overwrite`` (default) — bring the target back exactly as captured:
      changed items are reverted and items created since the capture removed;
    * ``merge`` — only put back what is missing; leave changed and new items alone;
    * ``refuse`` — stop before writing anything if any captured item changed;
    * ``revert`` — undo one call: revert only what the call changed (the delta
      between the backup and the capture taken right after the call), keep
      everything changed since, report conflicts (``preimage.undo``).  A
      connector never sees it: the undo hands it ``overwrite`` limited to
      exact :attr:`RestorePolicy.keys`.
    """

    OVERWRITE = "overwrite"
    MERGE = "merge"
    REFUSE = "refuse"
    REVERT = "revert"


@dataclass(frozen=True)
class RestorePolicy:
    """How a connector restores a snapshot.

    ``only`` narrows the restore to item keys (or paths) starting with one of
    its entries; empty means everything.  ``keys``, when set, narrows it to
    exactly these natural keys — never a prefix, never a parent or child of
    one — and a connector writes, creates or removes nothing else (an undo of
    one call restores this way).
    """

    dry_run: bool = False
    conflict: ConflictMode = ConflictMode.OVERWRITE
    only: tuple[str, ...] = field(default_factory=tuple)
    keys: frozenset[str] | None = None
    # Restoring into another target than the one captured (``restore --to``): state
    # outside the destination's own scope is read, never taken (an IMAP restore copies
    # a message it finds elsewhere in the account instead of moving it out of there).
    elsewhere: bool = False

    def in_scope(self, item_key: str) -> bool:
        """Whether ``item_key`` is inside the policy's scope filters (``only`` as
        prefixes; ``keys`` exactly)."""
        if self.keys is not None and item_key not in self.keys:
            return False
        return not self.only or any(item_key.startswith(prefix) for prefix in self.only)

    @property
    def exact(self) -> bool:
        """Whether the restore is limited to exact item keys."""
        return self.keys is not None
