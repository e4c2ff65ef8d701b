"""``PipConnector``: capture, restore and diff of ``pip://`` targets."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

from preimage._blobs import BlobStore
from preimage._connector import Capabilities, ConnectorBase
from preimage._errors import InvalidTargetError
from preimage._target import Target
from preimage.connectors.files.walk import Walker
from preimage.connectors.pip.environment import (
    Environment,
    InstalledDist,
    find_interpreter,
    is_bytecode,
    probe,
    scan,
)
from preimage.connectors.pip.wheel import record_hash
from preimage.restoration import RestorePolicy, RestoreReport
from preimage.snapshot_schemas import Snapshot
from preimage.snapshot_schemas.files import FileEntry
from preimage.snapshot_schemas.pip import PipDistribution, PipInterpreter, PipItem, PipSnapshot


def open_environment(target: Target) -> Environment:
    """The environment a ``pip://`` target names (see :func:`find_interpreter`)."""
    if target.host not in (None, "", "localhost"):
        raise InvalidTargetError(
            target.redacted, "pip:// targets are local; write pip:///abs/path/to/venv"
        )
    return probe(find_interpreter(target.path, target.redacted), target.redacted)


def read_files(
    paths: Iterable[Path], roots: list[Path], blobs: BlobStore, *, store_content: bool
) -> dict[Path, FileEntry]:
    """Hash (and with ``store_content`` store) the files at ``paths``, through the file connector.

    Paths are grouped under the site directories (else under their parent)
    and each group is walked once, everything but the wanted files left out;
    the store's stat cache spares re-reading files that did not change.
    """
    groups: dict[Path, set[str]] = {}
    for path in paths:
        root = next((r for r in roots if path.is_relative_to(r)), path.parent)
        groups.setdefault(root, set()).add(path.relative_to(root).as_posix())
    found: dict[Path, FileEntry] = {}
    for root, rels in groups.items():
        dirs = {"/".join(rel.split("/")[:i]) for rel in rels for i in range(1, rel.count("/") + 1)}

        def exclude(rel: str, _st: object, rels: set[str] = rels, dirs: set[str] = dirs) -> bool:
            return rel not in rels and rel not in dirs

        walker = Walker(root, blobs, store_content=store_content, exclude=exclude)  # type: ignore[arg-type]
        for entry in walker.entries():
            if entry.path in rels:
                found[root / entry.path] = entry
    return found


def describe(
    env: Environment, blobs: BlobStore, *, store_content: bool
) -> tuple[list[PipItem], list[str]]:
    """The environment's items: its interpreter and every distribution with its files."""
    dists, notes = scan(env)
    wanted = [
        path
        for d in dists
        for rel, path in d.files.items()
        if not is_bytecode(rel) and rel != f"{d.dist_info}/RECORD"
    ]
    roots = [site for _, site in env.site_dirs()]
    entries = read_files(wanted, roots, blobs, store_content=store_content)
    items: list[PipItem] = [PipInterpreter(implementation=env.implementation, version=env.version)]
    for dist in dists:
        item, missing = _distribution(dist, entries)
        if missing:
            notes.append(
                f"{dist.display_name} {dist.version}: {len(missing)} file(s) its RECORD lists are "
                f"missing or not regular files ({', '.join(sorted(missing)[:3])}…); captured as is"
            )
        items.append(item)
    return items, notes


def _distribution(
    dist: InstalledDist, entries: dict[Path, FileEntry]
) -> tuple[PipDistribution, list[str]]:
    files: dict[str, str] = {}
    executable: list[str] = []
    missing: list[str] = []
    for rel, _, _ in dist.record:
        if is_bytecode(rel) or rel == f"{dist.dist_info}/RECORD":
            continue
        entry = entries.get(dist.files[rel])
        if entry is None or entry.type != "file" or entry.digest is None:
            missing.append(rel)
            continue
        files[rel] = record_hash(entry.digest)
        if entry.mode & 0o111:
            executable.append(rel)
    item = PipDistribution(
        name=dist.name,
        display_name=dist.display_name,
        version=dist.version,
        location=dist.location_kind,
        dist_info=dist.dist_info,
        files=files,
        installer=dist.installer,
        requested=dist.requested,
        direct_url=dist.direct_url,
        executable=sorted(executable),
        record_paths=[rel for rel, _, _ in dist.record],
    )
    return item, missing


class PipConnector(ConnectorBase):
    """The package set of a Python environment, restorable offline.

    Targets are ``pip:///abs/path/to/venv`` (a directory with ``bin/python``)
    or ``pip:///abs/path/to/python``.  A capture keeps every installed file's
    bytes in the backup store; a restore builds wheels from them and makes
    the environment exactly the captured set with pip ``--no-index`` (see
    :mod:`.apply`).
    """

    scheme: ClassVar[str] = "pip"
    snapshot_type: ClassVar[type[Snapshot]] = PipSnapshot
    # A target names an existing environment or interpreter; there is no absent one.
    capabilities: ClassVar[Capabilities] = Capabilities(absent_targets=False)

    def capture(self, target: Target, blobs: BlobStore) -> PipSnapshot:
        """Read the environment's installed set into a :class:`PipSnapshot`.

        Raises :class:`InvalidTargetError` when the path is not a Python
        environment or its interpreter does not run.
        """
        env = open_environment(target)
        items, notes = describe(env, blobs, store_content=True)
        return PipSnapshot(
            target=target.redacted,
            interpreter=str(env.interpreter),
            prefix=str(env.prefix),
            paths=env.paths,
            items=items,
            notes=notes,
        )

    def restore(self, snapshot: Snapshot, blobs: BlobStore, *, policy: RestorePolicy) -> RestoreReport:
        """Make the environment exactly the captured set (order in :mod:`.apply`)."""
        from preimage.connectors.pip.apply import PipRestorer

        assert isinstance(snapshot, PipSnapshot)
        return PipRestorer(snapshot, blobs, policy).run()

