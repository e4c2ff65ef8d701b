"""``FileConnector``: capture, restore and diff of ``file://`` targets."""

from __future__ import annotations

import os
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

from preimage.connectors.files.address import scope_query
from preimage.connectors.files.apply import TreeRestorer, check_snapshot
from preimage.connectors.files.revert import FilesReverter
from preimage.connectors.files.walk import Exclude, Walker, file_type, resolve_root
from preimage.interface.blobs import BlobStore
from preimage.interface.connector import Capabilities, ConnectorBase, Granularity, ItemStream
from preimage.interface.errors import (
    InvalidTargetError,
    PreimageError,
    TerminalConnectorError,
    UnsafePathError,
)
from preimage.interface.target import Target
from preimage.restoration import Relocation, RestorePolicy, RestoreReport
from preimage.snapshot_schemas import Snapshot
from preimage.snapshot_schemas.files import FileSnapshot


def file_uri(root: os.PathLike[str] | str) -> str:
    """``file://`` + the path; bytes that are not UTF-8 (surrogate escapes) as ``%XX``."""
    text = "".join(
        "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogateescape"))
        if "\udc80" <= ch <= "\udcff" else ch
        for ch in os.fspath(root)
    )
    return f"file://{text}"


class FileConnector(ConnectorBase):
    """A file or a directory tree: bytes, types, hardlinks, modes, owners, ns times, xattrs.

    Targets are ``file:///abs/path`` (a host other than empty or ``localhost``
    is rejected).  A target that does not exist captures as "absent", so that
    restoring it removes whatever was created there later.

    ``?depth=N`` keeps the walk to N levels below the target: ``depth=0`` is
    the directory's own entry (mode, owner, times, xattrs) and none of its
    children — what a command that adds or removes an entry changes in the
    directory that holds it.  The restore of such a snapshot leaves deeper
    paths alone, neither compared nor removed — except inside an entry that
    did not exist at capture, which is removed whole.

    ``?exclude=rel/path`` (repeatable) leaves that path below the target out of
    the snapshot and out of the restore: it is neither captured, compared nor
    removed — the backup store, when a target holds it.
    """

    scheme: ClassVar[str] = "file"
    snapshot_type: ClassVar[type[Snapshot]] = FileSnapshot
    capabilities: ClassVar[Capabilities] = Capabilities(
        audits_completeness=True, relocates=True, undo=Granularity(
            "file by path", "metadata field (mode, owner, times, xattrs)",
            "text files line by line where the changes do not overlap"))
    reverter: ClassVar[FilesReverter] = FilesReverter()

    def capture(self, target: Target, blobs: BlobStore) -> FileSnapshot:
        """Walk the target and store every regular file's bytes in ``blobs``."""
        snap = self.capture_stream(target, blobs)
        return snap.model_copy(update={"items": list(snap.items)})

    def capture_stream(self, target: Target, blobs: BlobStore) -> FileSnapshot:
        """:meth:`capture` with the entries yielded as the walk reaches them
        (:class:`~preimage.store.documents.ItemStream`): the tree is walked, and its
        files stored, while the caller consumes them; ``uncaptured`` is complete
        once they are all read."""
        if target.host not in (None, "", "localhost"):
            raise InvalidTargetError(
                target.redacted, "file:// targets are local; write file:///abs/path"
            )
        root = resolve_root(target.path)
        depth, left_out = walk_limits(target)
        try:
            root_type = file_type(os.lstat(root).st_mode)
        except FileNotFoundError:
            root_type = None
        except OSError as exc:
            raise TerminalConnectorError(
                f"cannot read {target.redacted}: {exc.strerror}", target=target.redacted
            ) from exc
        target_uri = file_uri(root) + scope_query(depth, left_out)
        previous = blobs.previous(target_uri) if blobs.previous is not None else None
        walker = Walker(root, blobs, max_file_size=blobs.max_file_size,
                        exclude=scope_exclude(depth, left_out), previous=previous)
        notes = []
        if root_type is None:
            notes.append("target did not exist at capture time")
        if depth is not None:
            notes.append(f"entries deeper than {depth} level(s) below the target are not part "
                         "of this snapshot")
        if left_out:
            notes.append(f"left out of this snapshot: {', '.join(left_out)}")
        # the walker's own values, already of the schema's types: no validation pass
        return FileSnapshot.model_construct(
            target=target_uri,
            root=str(root),
            root_parent=os.path.realpath(root.parent),
            root_type=root_type,
            items=ItemStream(walker.entries()),  # type: ignore[arg-type]
            notes=notes,
            uncaptured=walker.uncaptured,
        )

    def restore(
        self, snapshot: Snapshot, blobs: BlobStore, *, policy: RestorePolicy
    ) -> RestoreReport:
        """Bring the tree back to ``snapshot`` (see :mod:`.apply` for the order)."""
        # items read from the store as they are used stay so: the plan reads them once
        # and keeps their compact form, and checks the entries as it reads them
        depth, left_out = self._checked_scope(snapshot, entries=False)
        assert isinstance(snapshot, FileSnapshot)
        if not policy.dry_run:
            from preimage.connectors.files.live_servers import owned_folders

            root = resolve_root(snapshot.root)
            owned = owned_folders(root, below=depth != 0)
            if owned:
                where, why = owned[0]
                more = f" (and {len(owned) - 1} more)" if len(owned) > 1 else ""
                raise UnsafePathError(
                    str(where), f"a running server owns {where}{more}: {why}; a restore "
                    "does not write under a live server — restore its data through the "
                    "server (postgresql://, imap://) or stop it first")
        return TreeRestorer(snapshot, blobs, policy, exclude=scope_exclude(depth, left_out),
                            prune_new=depth is not None).run()

    #: the plan takes every entry into its table before anything is written
    reads_items_before_writing: ClassVar[bool] = True

    def restores_whole_or_nothing(self, snapshot: Snapshot) -> bool:
        """True when the target is not there: the restore builds it beside its place and
        renames it in once every file's blob verified as it was written (:mod:`.dirfd`,
        *staged subtrees*), so a damaged or missing blob leaves it absent."""
        if not isinstance(snapshot, FileSnapshot) or snapshot.root_type is None:
            return False
        try:
            return not os.path.lexists(resolve_root(snapshot.root))
        except (OSError, PreimageError):
            return False

    def check_snapshot(self, snapshot: Snapshot) -> None:
        """Raise :class:`UnsafePathError` when a restore of ``snapshot`` would be refused
        (its root is not its target, or its entries do not form a tree): what ``import``
        checks of every document before it enters a backup."""
        self._checked_scope(snapshot)

    @staticmethod
    def _checked_scope(snapshot: Snapshot, *,
                       entries: bool = True) -> tuple[int | None, list[str]]:
        if not isinstance(snapshot, FileSnapshot):
            raise UnsafePathError(snapshot.target, "not a file snapshot")
        root = resolve_root(snapshot.root)
        query = parse_qs(urlsplit(snapshot.target).query)
        values = query.get("depth")
        depth = _depth(values[-1] if values else None, snapshot.target)
        left_out = _left_out(query.get("exclude", []), snapshot.target)
        expected = file_uri(root) + scope_query(depth, left_out)
        if snapshot.target != expected or str(root) != snapshot.root:
            raise UnsafePathError(
                snapshot.root,
                f"the snapshot's root is not its target {snapshot.target} — the document was "
                "altered",
            )
        if entries:
            check_snapshot(snapshot)
        return depth, left_out


    def relocate(
        self, snapshot: Snapshot, destination: Target, *, other: Snapshot | None = None,
        blobs: BlobStore | None = None,
    ) -> Relocation:
        """The tree rooted at another directory (:mod:`.relocate`)."""
        from preimage.connectors.files.relocate import relocate_tree

        assert isinstance(snapshot, FileSnapshot)
        root = resolve_root(destination.path) if destination.scheme == "file" else None
        return relocate_tree(snapshot, destination, file_uri(root) if root else "")


def walk_limits(target: Target) -> tuple[int | None, list[str]]:
    """A file target's ``depth`` (``None``: the whole tree) and ``exclude`` paths."""
    return (_depth(target.param("depth"), target.redacted),
            _left_out(target.query.get("exclude", []), target.redacted))


def _depth(value: str | None, uri: str) -> int | None:
    if value is None:
        return None
    if not value.isdigit():
        raise InvalidTargetError(uri, f"depth={value!r}: give a number of levels, e.g. depth=0")
    return int(value)


def _left_out(values: list[str], uri: str) -> list[str]:
    """The ``exclude=`` paths: relative, normalised, inside the target."""
    out = []
    for value in values:
        rel = os.path.normpath(value) if value else ""
        if not rel or rel.startswith(("/", "../")) or rel in (".", ".."):
            raise InvalidTargetError(uri, f"exclude={value!r}: give a path relative to the "
                                          "target and inside it, e.g. exclude=build/cache")
        out.append(rel)
    return sorted(set(out))


def scope_exclude(depth: int | None, left_out: list[str]) -> Exclude | None:
    """The walk exclusion of a target's ``depth`` and ``exclude`` parameters."""
    by_depth = depth_exclude(depth)
    if not left_out:
        return by_depth
    prefixes = tuple(rel + "/" for rel in left_out)

    def exclude(rel: str, st: os.stat_result) -> bool:
        return rel in left_out or rel.startswith(prefixes) or (
            by_depth is not None and by_depth(rel, st))

    return exclude


def depth_exclude(depth: int | None) -> Exclude | None:
    """The walk exclusion that keeps a tree to ``depth`` levels below its root."""
    if depth is None:
        return None
    return lambda rel, _st: rel.count("/") >= depth
