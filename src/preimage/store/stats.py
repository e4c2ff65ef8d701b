"""``stats``: what the store holds and what deduplication and compression save.

Sizes, in restic's terms:

* **stored** — bytes the blob files take on disk (compressed, deduplicated);
* **raw** — uncompressed bytes of the distinct blobs backups reference;
* **restore size** — the sum over backups of the uncompressed bytes each one
  references: what the backups would take as separate, uncompressed copies.

``dedup_ratio`` is restore size / raw (what sharing blobs saves),
``compression_ratio`` raw / stored, ``total_ratio`` restore size / stored.
Per target and per session: backups, restore size, and the bytes of blobs
that only that target's (session's) backups reference — what forgetting
them all would reclaim.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from preimage.store.format import FORMAT
from preimage.store.store import Store


def _ratio(a: int, b: int) -> float:
    return round(a / b, 3) if b else 0.0


def stats(store: Store) -> dict[str, Any]:
    """The store's statistics as a JSON-ready dict (see the module docstring)."""
    cat, blobs = store.catalog, store.blobs
    backups = {b.id: b for b in cat.list_backups(None)}
    counted = {bid for bid, b in backups.items()
               if b.status in ("complete", "damaged", "overlapped")}
    target_of: dict[tuple[str, int], str] = {
        (b.id, s.idx): s.target for b in backups.values() for s in b.snapshots
    }
    refs_by_backup: dict[str, set[str]] = defaultdict(set)
    owners_t: dict[str, set[str]] = defaultdict(set)
    owners_s: dict[str, set[str]] = defaultdict(set)
    for backup_id, idx, digest in cat.ref_rows():
        if backup_id not in counted:
            continue
        refs_by_backup[backup_id].add(digest)
        owners_t[digest].add(target_of.get((backup_id, idx), "?"))
        owners_s[digest].add(backups[backup_id].session or "(none)")
    stored_sizes = {d: blobs.stored_size(d) for d in blobs.digests()}
    raw_sizes: dict[str, int] = {}
    for digest in owners_t:
        raw_sizes[digest] = blobs.raw_size(digest) or 0
    restore_size = sum(raw_sizes[d] for refs in refs_by_backup.values() for d in refs)
    raw = sum(raw_sizes.values())
    stored = sum(stored_sizes.values())

    def group(owner_map: dict[str, set[str]], key_of: Any) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = defaultdict(
            lambda: {"backups": 0, "restore_size": 0, "unique_stored": 0})
        for bid in counted:
            for key in key_of(backups[bid]):
                out[key]["backups"] += 1
        for bid, refs in refs_by_backup.items():
            for key in key_of(backups[bid]):
                out[key]["restore_size"] += sum(raw_sizes[d] for d in refs)
        for digest, owners in owner_map.items():
            if len(owners) == 1:
                out[next(iter(owners))]["unique_stored"] += stored_sizes.get(digest, 0)
        return dict(sorted(out.items()))

    statuses: dict[str, int] = defaultdict(int)
    kinds: dict[str, int] = defaultdict(int)
    for b in backups.values():
        statuses[b.status] += 1
        kinds[b.kind] += 1
    trash = store.home / "trash"
    trash_bytes = sum(
        p.lstat().st_size for p in trash.rglob("*") if p.is_file() and not p.is_symlink()
    ) if trash.is_dir() else 0
    return {
        "home": str(store.home),
        "format": FORMAT,
        "backups": len(backups),
        "by_status": dict(sorted(statuses.items())),
        "by_kind": dict(sorted(kinds.items())),
        "blobs": len(stored_sizes),
        "stored_bytes": stored,
        "raw_bytes": raw,
        "restore_size": restore_size,
        "unreferenced_bytes": sum(s for d, s in stored_sizes.items() if d not in owners_t),
        "trash_bytes": trash_bytes,
        "dedup_ratio": _ratio(restore_size, raw),
        "compression_ratio": _ratio(raw, stored),
        "total_ratio": _ratio(restore_size, stored),
        "per_target": group(owners_t, lambda b: {s.target for s in b.snapshots}),
        "per_session": group(owners_s, lambda b: {b.session or "(none)"}),
    }
