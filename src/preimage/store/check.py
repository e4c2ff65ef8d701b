"""``check``: every link of the store's contract, each problem named.

What is checked (``docs/store.md`` is the contract):

* the catalog database itself (``PRAGMA integrity_check`` for SQLite), and
  snapshot or reference rows whose backup is gone;
* every backup that is not ``failed``/``abandoned``: an ``open`` one must have
  a live capture holding its lease; its ``tool_call`` must read back; a
  finished one must have as many snapshot rows as it recorded;
* every snapshot: its document blob and the chunks of its items are present
  (and hash right with ``read_data``), parse as its connector's schema, name
  the catalog row's target, and every blob they name is among the snapshot's
  references (recorded directly or through a chunk's links);
* every referenced blob is present — with ``read_data`` also read and hashed;
* blob files that are not named like blobs; trash entries whose files are gone.

``repair`` fixes what can be fixed without inventing data: an abandoned
capture is marked ``abandoned``, an unreadable ``tool_call`` is dropped,
missing reference rows are added, orphan rows are deleted, a corrupt blob is
moved aside (so the next capture of its bytes writes it again), and a backup
with a missing or corrupt part is marked ``damaged`` — it stays listed (what
is left of it may still matter) until you ``forget`` it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from preimage.interface.blobs import BlobProblem
from preimage.interface.errors import PreimageError
from preimage.interface.registry import get_connector
from preimage.snapshot_schemas import Snapshot, load_snapshot
from preimage.store.backend import BackupRow, SnapshotRow
from preimage.store.documents import chunk_list, is_chunked
from preimage.store.format import digests_in
from preimage.store.snapshots import item_naming
from preimage.store.store import Store


@dataclass
class Problem:
    """One thing wrong with the store."""

    kind: str
    subject: str
    message: str
    repair: str = ""
    repaired: bool = False
    fixed: bool = False   # the repair removed the problem (not just contained it)

    def to_dict(self) -> dict[str, Any]:
        """The problem as JSON."""
        return {"kind": self.kind, "subject": self.subject, "message": self.message,
                "repair": self.repair, "repaired": self.repaired}


@dataclass
class CheckReport:
    """What ``check`` found."""

    read_data: bool
    repair: bool
    backups: int = 0
    blobs_checked: int = 0
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing is wrong (or everything found was fixed by ``repair``)."""
        return all(p.fixed for p in self.problems)


class _Checker:
    def __init__(self, store: Store, read_data: bool, repair: bool,
                 say: Callable[[str], None]) -> None:
        self.store = store
        self.cat = store.catalog
        self.blobs = store.blobs
        self.report = CheckReport(read_data=read_data, repair=repair)
        self.say = say
        self._inspected: dict[str, BlobProblem | None] = {}

    def problem(self, kind: str, subject: str, message: str, repair: str = "",
                fix: Callable[[], None] | None = None, fixes: bool = False) -> None:
        p = Problem(kind, subject, message, repair)
        if self.report.repair and fix is not None:
            try:
                fix()
                p.repaired, p.fixed = True, fixes
            except PreimageError as exc:
                p.message += f" (repair failed: {exc})"
        self.report.problems.append(p)

    def inspect(self, digest: str) -> BlobProblem | None:
        if digest not in self._inspected:
            self._inspected[digest] = self.blobs.inspect(digest, read_data=self.report.read_data)
            self.report.blobs_checked += 1
        return self._inspected[digest]

    def damage(self, backup: BackupRow) -> Callable[[], None]:
        def fix() -> None:
            self.cat.set_status(backup.id, "damaged", only_if="complete")
        return fix

    # ------------------------------------------------------------ the walk
    def run(self) -> CheckReport:
        # packs the local store's index does not name (its rows lost, or a writer killed
        # before writing them) are indexed again from their trailers before any blob is
        # looked up: a lost index row must never read as a lost blob
        adopt = getattr(self.blobs, "adopt_unindexed", None)
        if adopt is not None:
            adopt()
        for text in self.cat.integrity_problems():
            self.problem("catalog-integrity", "catalog", text)
        for text in self.cat.orphan_rows():
            self.problem("orphan-rows", "catalog", text, "delete the rows",
                         self.cat.drop_orphan_rows, fixes=True)
        backups = self.cat.list_backups(None)
        self.report.backups = len(backups)
        for backup in backups:
            self.backup(backup)
        self.store_level(backups)
        return self.report

    def backup(self, backup: BackupRow) -> None:
        cat = self.cat
        if backup.status == "open":
            if not cat.lease_held(backup.id):
                def abandon() -> None:
                    cat.set_status(backup.id, "abandoned", only_if="open")

                self.problem(
                    "abandoned-capture", backup.id,
                    f"backup {backup.id} is open but no process is capturing it (the capture "
                    "was killed)", "mark it abandoned (prune then reclaims what it stored)",
                    abandon, fixes=True)
            else:
                self.report.notes.append(f"backup {backup.id} is being captured right now")
            return
        for text in backup.problems:
            self.problem("tool-call", backup.id, f"backup {backup.id}: {text}",
                         "drop the unreadable record", lambda: cat.clear_tool_call(backup.id),
                         fixes=True)
        if backup.status in ("failed", "abandoned"):
            return
        expected = backup.expected_snapshots
        if expected is not None and len(backup.snapshots) != expected:
            self.problem(
                "snapshot-rows", backup.id,
                f"backup {backup.id} recorded {expected} snapshot(s) but the catalog holds "
                f"{len(backup.snapshots)}", "mark the backup damaged", self.damage(backup))
        for row in backup.snapshots:
            self.snapshot(backup, row)

    def snapshot(self, backup: BackupRow, row: SnapshotRow) -> None:
        where = f"backup {backup.id} {row.target}"
        refs = self.cat.refs(backup.id, row.idx)
        bad = self.inspect(row.digest)
        snap: Snapshot | None = None
        if bad is not None:
            self.blob_problem(backup, row.digest, bad, f"{where}: its snapshot document")
        else:
            snap = self.document(backup, row, where, refs)
        for digest in sorted(refs - {row.digest}):
            bad = self.inspect(digest)
            if bad is not None:
                item = item_naming(snap, digest) if snap is not None else ""
                self.blob_problem(backup, digest, bad, f"{where}{' ' + item if item else ''}")

    def document(self, backup: BackupRow, row: SnapshotRow, where: str,
                 refs: set[str]) -> Snapshot | None:
        try:
            raw = self.blobs.get_bytes(row.digest)
        except PreimageError as exc:
            self.blob_problem(backup, row.digest, BlobProblem(row.digest, "corrupt", str(exc)),
                              f"{where}: its snapshot document")
            return None
        chunks: list[bytes] = []
        try:
            conn = get_connector(row.connector)
            document = json.loads(raw)
            if is_chunked(document):
                for digest, _count in chunk_list(document):
                    bad = self.inspect(digest)
                    if bad is None:
                        try:
                            chunks.append(self.blobs.get_bytes(digest))
                            continue
                        except PreimageError as exc:
                            bad = BlobProblem(digest, "corrupt", str(exc))
                    if digest not in refs:   # else the walk over the references names it
                        self.blob_problem(backup, digest, bad,
                                          f"{where}: a chunk of its snapshot document")
                    return None
                document = {**document, "items": [x for c in chunks for x in json.loads(c)]}
            snap = load_snapshot(document, conn.snapshot_type)
        except PreimageError as exc:
            self.report.notes.append(f"{where}: not checked in depth ({exc})")
            return None
        except (ValueError, TypeError, KeyError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.problem("document-malformed", f"{backup.id}#{row.idx}",
                         f"{where}: the snapshot document {row.digest[:16]}… does not parse "
                         f"({first})", "mark the backup damaged", self.damage(backup))
            return None
        if snap.target != row.target:
            self.problem("document-target", f"{backup.id}#{row.idx}",
                         f"{where}: the snapshot document names {snap.target}",
                         "mark the backup damaged", self.damage(backup))
        named = {d for part in (raw, *chunks) for d in digests_in(part)
                 if self.blobs.stored_size(d)} | {row.digest}
        missing = sorted(named - refs)
        if missing:
            self.problem(
                "unrecorded-refs", f"{backup.id}#{row.idx}",
                f"{where}: {len(missing)} blob(s) named by the snapshot are not among its "
                f"recorded references ({', '.join(d[:16] + '…' for d in missing[:3])})",
                "record them", lambda: self.cat.add_refs(backup.id, row.idx, missing), fixes=True)
        return snap

    def blob_problem(self, backup: BackupRow, digest: str, bad: BlobProblem, where: str) -> None:
        def fix() -> None:
            if bad.kind == "corrupt":
                self.blobs.set_aside(digest)
            self.cat.set_status(backup.id, "damaged", only_if="complete")

        status = "" if backup.status == "complete" else f" (backup is {backup.status})"
        self.problem(
            f"blob-{bad.kind}", digest,
            f"blob {digest[:16]}… of {where} is {bad.kind}: {bad.detail}{status}",
            "move the blob aside and mark the backup damaged" if bad.kind == "corrupt"
            else "mark the backup damaged", fix)

    def store_level(self, backups: list[BackupRow]) -> None:
        store, blobs = self.store, self.blobs
        stray = getattr(blobs, "stray_files", None)
        for name in stray() if stray is not None else []:
            self.problem("stray-file", name, f"blobs/{name} is not named like a blob")
        known = {b.id for b in backups}
        gone = [e for e in self.cat.trash() if e.backup_id in known and not _exists(e.stored_at)]
        if gone:   # a restore renames trash entries back; nothing tells that from a loss
            self.report.notes.append(
                f"{len(gone)} trash entr(ies) are no longer in the trash (renamed back by a "
                f"restore, or removed): {', '.join(e.original for e in gone[:3])}")
        live = self.cat.referenced(skip_statuses=("failed", "abandoned"))
        unref = [d for d in blobs.digests() if d not in live]
        if unref:
            size = sum(blobs.stored_size(d) for d in unref)
            self.report.notes.append(
                f"{len(unref)} blob(s), {size} bytes, are referenced by no backup; "
                "`preimage prune` reclaims them")
        left = blobs.leftovers() + store.local_leftovers()
        if left:
            self.report.notes.append(
                f"{len(left)} partial write(s) or scratch area(s) of killed processes; "
                "`preimage prune` removes them")
        hidden = blobs.hidden()
        if hidden:
            n = sum(len(v) for v in hidden.values())
            self.report.notes.append(
                f"{n} blob(s) hidden by an unfinished prune; the next `preimage prune` finishes it")
        for journal in self.cat.restores():
            if journal.status == "running":
                self.report.notes.append(
                    f"a restore of {journal.backup_id} did not finish; running the same restore "
                    "again resumes it")


def _exists(path: str) -> bool:
    import os

    return os.path.lexists(path)


def check(
    store: Store,
    *,
    read_data: bool = False,
    repair: bool = False,
    say: Callable[[str], None] | None = None,
) -> CheckReport:
    """Check the store (see the module docstring); never raises for what it finds."""
    report = _Checker(store, read_data, repair, say or (lambda _t: None)).run()
    store.blobs.flush()
    return report
