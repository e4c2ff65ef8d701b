"""Phase two of deleting from a pack repository, and the leftovers of killed writers.

``purge`` (called by ``prune`` once every capture that was open when the blobs
were hidden has finished):

1. reload the index and note every pack it names: only those packs may be
   deleted or rewritten — a pack uploaded later belongs to a capture that may
   be writing a hidden blob anew;
2. claim the blobs to purge in the catalog, atomically: a blob a capture
   brought back before this step is not claimed, and a capture that asks for
   a claimed blob afterwards writes it anew (into a later pack);
3. reload the index again (captures that finished meanwhile) and keep every
   chunk any blob outside the claimed set uses;
4. delete the noted packs that hold no kept chunk, and repack those that hold
   some: their kept boxes move unchanged into a new pack (a box is bound to
   its chunk id, not to its pack);
5. write one index file replacing the noted ones, delete them, then delete
   the old packs.  A reader holding the old index finds a pack gone, reloads
   the index and reads the new pack.

A crash anywhere leaves at worst extra packs and index files (duplicates are
harmless; the next prune removes them) — never a chunk a kept blob needs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from preimage.interface.blobs import Leftover
from preimage.store.packs._crypto import BoxError
from preimage.store.packs._format import Entry, pack_name
from preimage.store.packs._storage import ObjectMissing

if TYPE_CHECKING:
    from preimage.store.packs._blobstore import Coordinator
    from preimage.store.packs._repository import PackRepository

# A pack is rewritten when at least this share of its bytes is garbage; below
# that, its garbage is kept until a later prune (a rewrite costs a download
# and an upload of the rest).
REPACK_SHARE = 0.2


def purge(repo: PackRepository, coord: Coordinator, generation: str,
          digests: Iterable[str]) -> int:
    """Delete the hidden blobs ``digests`` of ``generation``; return bytes freed."""
    repo.refresh()
    old_index = repo.index_files()
    noted = {p for packs in old_index.values() for p in packs}
    claimed = coord.claim_hidden(generation, digests)
    if not claimed:
        return 0
    repo.refresh()
    keep: set[str] = set()
    blobs = repo.all_blobs()
    for digest, (_size, cids) in blobs.items():
        if digest not in claimed:
            keep.update(cids)
    packs = repo.all_packs()
    stored = repo.stored_packs()
    freed = 0
    drop: list[str] = []
    new_packs: dict[str, list[Entry]] = {}
    for pack_id in sorted(noted):
        entries = packs.get(pack_id, [])
        live = [e for e in entries if e[0] in keep]
        if len(live) == len(entries) and pack_id in stored:
            continue
        dead_bytes = sum(e[2] for e in entries if e[0] not in keep)
        size = stored.get(pack_id, 0)
        if live and size and dead_bytes < REPACK_SHARE * size:
            continue
        if live:
            try:
                data = repo.read_pack(pack_id)
            except ObjectMissing:
                continue
            new_id, new_entries = repo.write_pack(
                [(e, data[e[1] : e[1] + e[2]]) for e in live])
            new_packs[new_id] = new_entries
            freed -= sum(e[2] for e in new_entries)
        drop.append(pack_id)
        freed += size
    # One index file for everything the noted index files named, minus what goes.
    merged_packs: dict[str, list[Entry]] = dict(new_packs)
    merged_blobs: dict[str, tuple[int, tuple[str, ...]]] = {}
    gone = set(drop)
    for name in old_index:
        ipacks, iblobs = repo.index_contents(name)
        for p, es in ipacks.items():
            if p not in gone:
                merged_packs[p] = es
        for d, v in iblobs.items():
            if d not in claimed:
                merged_blobs[d] = v
    if merged_packs or merged_blobs:
        repo.write_index(merged_packs, merged_blobs)
    repo.storage.delete(sorted(old_index))
    repo.storage.delete([pack_name(p) for p in drop])
    coord.drop_claimed(generation)
    repo.refresh()
    return max(freed, 0)


def orphan_packs(repo: PackRepository, coord: Coordinator) -> list[Leftover]:
    """Packs no index names whose writer no longer holds its lease (killed writers)."""
    repo.refresh()
    named = {p for packs in repo.index_files().values() for p in packs}
    out = []
    for pack_id, size in sorted(repo.stored_packs().items()):
        if pack_id in named:
            continue
        try:
            writer, _entries = repo.pack_header(pack_id, size)
        except (BoxError, ObjectMissing):
            writer = ""   # damaged or half there: nobody can be writing it any more
        if writer and coord.lease_held(f"writer-{writer}"):
            continue
        out.append(Leftover(pack_name(pack_id), size))
    return out


def remove_orphans(repo: PackRepository, coord: Coordinator, names: list[str]) -> int:
    """Delete orphan packs listed earlier that are still orphans; bytes freed."""
    still = {o.name: o.size for o in orphan_packs(repo, coord)}
    chosen = [n for n in names if n in still]
    repo.storage.delete(chosen)
    return sum(still[n] for n in chosen)
