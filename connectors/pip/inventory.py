"""What an environment holds, read into snapshot items: its interpreter and every installed
distribution with its files."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

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
from preimage.interface.blobs import BlobStore
from preimage.interface.errors import InvalidTargetError
from preimage.interface.target import Target
from preimage.snapshot_schemas.files import FileEntry
from preimage.snapshot_schemas.pip import PipDistribution, PipInterpreter, PipItem


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
