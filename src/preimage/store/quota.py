"""The store's quotas: a size cap with a retention policy, and a per-file size cap.

Quotas belong to the store (its catalog's settings, like restic's repository
config), so every process and machine using one store applies the same caps.
``preimage quota`` shows and sets them.

* ``max_size`` — when the store grows past it, the capture that crossed it
  applies the retention policy (``forget``) and starts a ``prune`` that does
  not wait for other captures (a later prune finishes it), and says so in
  its notes (the layer passes them on to the agent's harness);
* ``max_file_size`` — a file larger than this is not read: the snapshot
  records it in ``uncaptured`` with the reason, so its score stays below 1.0
  and ``diff`` names it, and a restore leaves the live file alone.

The store's size is measured exactly by ``prune`` and then estimated as that
measure plus the bytes each later backup added.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from preimage.interface.errors import StoreBusyError, UsageError
from preimage.interface.sizes import human_bytes
from preimage.store.retention import RetentionPolicy
from preimage.store.store import Store

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20, "mb": 10**6,
          "mib": 1 << 20, "g": 1 << 30, "gb": 10**9, "gib": 1 << 30, "t": 1 << 40, "tb": 10**12,
          "tib": 1 << 40}


def parse_size(text: str) -> int:
    """``10GiB``, ``500M``, ``2gb``, ``1048576`` → bytes; UsageError otherwise."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNITS:
        raise UsageError(f"cannot read the size {text!r} — write it like 20GiB, 500MiB or 4096")
    return int(float(m.group(1)) * _UNITS[unit])


@dataclass(frozen=True)
class Quota:
    """The store's caps and retention policy."""

    max_size: int | None = None
    max_file_size: int | None = None
    policy: RetentionPolicy = field(default_factory=RetentionPolicy)

    def to_dict(self) -> dict[str, object]:
        """For ``quota --json``."""
        return {"max_size": self.max_size, "max_file_size": self.max_file_size,
                "retention": self.policy.to_dict()}


def load(store: Store) -> Quota:
    """The quotas recorded in ``store``."""
    cat = store.catalog
    size, file_size, policy = (cat.setting("quota.max_size"), cat.setting("quota.max_file_size"),
                               cat.setting("retention"))
    return Quota(
        int(size) if size else None,
        int(file_size) if file_size else None,
        RetentionPolicy.from_dict(json.loads(policy)) if policy else RetentionPolicy(),
    )


def save(store: Store, quota: Quota) -> None:
    """Record ``quota`` in ``store``."""
    cat = store.catalog
    cat.set_setting("quota.max_size", str(quota.max_size) if quota.max_size else None)
    cat.set_setting("quota.max_file_size",
                    str(quota.max_file_size) if quota.max_file_size else None)
    cat.set_setting("retention",
                    None if quota.policy.empty else json.dumps(quota.policy.to_dict()))


def measure(store: Store) -> int:
    """The store's exact size (blob files), recorded as the base of later estimates."""
    size = sum(store.blobs.stored_size(d) for d in store.blobs.digests())
    store.catalog.set_setting("usage", json.dumps({"bytes": size, "at": time.time()}))
    return size


def usage(store: Store) -> int:
    """The store's size: the last measure plus what backups added since."""
    raw = store.catalog.setting("usage")
    if not raw:
        return measure(store)
    doc = json.loads(raw)
    return int(doc["bytes"]) + store.catalog.stored_since(float(doc["at"]))


def enforce(store: Store) -> list[str]:
    """Apply the retention policy when the store is over its size cap; notes on what
    was done (empty when the store is within its cap or has none)."""
    quota = load(store)
    if quota.max_size is None:
        return []
    used = usage(store)
    if used <= quota.max_size:
        return []
    cap = human_bytes(quota.max_size)
    if quota.policy.empty:
        return [f"the store is {human_bytes(used)}, over its {cap} cap, and has no retention "
                "policy — set one with `preimage quota --keep-…` or raise the cap"]
    from preimage.store.prune import forget, prune

    forgotten = forget(store, policy=quota.policy)
    try:
        report = prune(store, wait=False)
    except StoreBusyError:
        return [f"the store is {human_bytes(used)}, over its {cap} cap: forgot "
                f"{len(forgotten.forgotten)} backup(s) by the retention policy "
                f"({quota.policy.describe()}); a prune already running reclaims the space"]
    now = measure(store)
    note = (f"the store was {human_bytes(used)}, over its {cap} cap: forgot "
            f"{len(forgotten.forgotten)} backup(s) by the retention policy "
            f"({quota.policy.describe()}) and reclaimed {human_bytes(report.freed_bytes)}")
    if report.pending:
        note += " (the rest once the captures running now finish)"
    if forgotten.in_use:
        note += (f"; kept {len(forgotten.in_use)} backup(s) the policy would forget because "
                 "a restore, diff, score, undo or export is reading them")
    if now > quota.max_size:
        note += f"; it is still {human_bytes(now)} — the policy keeps more than the cap allows"
    return [note]
