"""An environment's package set re-addressed to another environment (``restore --to
pip:///other/venv``, ``score --against``), as a fresh ``pip install`` there would make it.

The destination is an existing environment on the same Python (create it with
``python -m venv``).  Every distribution keeps its files, versions and installer
metadata; what names the source's prefix is rewritten to the destination's, each file
reported as an identity mapping, never as a loss:

* the prefix, the interpreter and the install scheme (``purelib``, ``scripts``…),
  which must sit at the same places below each prefix (a directory outside the prefix,
  the base interpreter's ``include``, must be the destination's too);
* text files that name the old prefix — console-script shebangs, ``.pth`` files,
  scripts from a wheel's ``.data/scripts`` — with the new prefix in their bytes, so
  their RECORD hashes are those of the rewritten bytes (the restore writes RECORD from
  the files on disk);
* ``direct_url.json`` when it names a path below the old prefix.

A binary file (a NUL byte, or not UTF-8) that names the old prefix is not rewritten:
its bytes could hold a length or an offset; it is restored as captured and named in the
notes.  Refused, with the reason: a destination that is the source or lies inside it (or
holds it), one that is not an environment, runs another Python or lays out its
directories otherwise, and another kind of target.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from preimage.connectors.files.relocate import nested
from preimage.connectors.pip.inventory import open_environment
from preimage.connectors.pip.wheel import blob_digest, record_hash
from preimage.interface.blobs import BlobStore
from preimage.interface.errors import UsageError
from preimage.interface.target import Target
from preimage.restoration import IdentityMapping, Relocation
from preimage.snapshot_schemas.pip import PipDistribution, PipInterpreter, PipSnapshot


class _PrefixRewriter:
    """Replaces the old prefix where it stands as a whole path component."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old.encode(), new.encode()
        # not followed by a character that would make it another name (/venv2, /venv.bak)
        self.pattern = re.compile(re.escape(self.old) + rb"(?![\w.-])")

    def text(self, data: bytes) -> bytes | None:
        """The rewritten bytes; ``None`` when nothing names the prefix."""
        if self.old not in data:
            return None
        moved = self.pattern.sub(self.new.replace(b"\\", b"\\\\"), data)
        return None if moved == data else moved


def _is_text(data: bytes) -> bool:
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def relocate_environment(snapshot: PipSnapshot, destination: Target,
                         blobs: BlobStore | None) -> Relocation:
    """``snapshot`` as the package set of the environment at ``destination``."""
    if destination.scheme != "pip":
        raise UsageError(f"{destination.redacted}: a Python environment restores into a "
                         "pip:// target")
    old_prefix = Path(snapshot.prefix)
    if destination.host in (None, "", "localhost") and destination.path.startswith("/") \
            and nested(Path(os.path.normpath(destination.path)), old_prefix):
        raise UsageError(f"--to {destination.redacted} overlaps the backup's own environment "
                         f"{snapshot.prefix}; pick another environment. Nothing was written")
    env = open_environment(destination)  # the destination must exist: python -m venv DIR
    new_prefix = env.prefix
    if nested(new_prefix, old_prefix):
        raise UsageError(f"--to {destination.redacted} is or overlaps the backup's own "
                         f"environment {snapshot.prefix}. Nothing was written")
    python = next((i for i in snapshot.items if isinstance(i, PipInterpreter)), None)
    if python is not None and python.version.split(".")[:2] != env.version.split(".")[:2]:
        raise UsageError(
            f"--to {destination.redacted} runs Python {env.version}, the backup's environment "
            f"ran {python.version}: its packages would not fit; create the destination with "
            f"Python {'.'.join(python.version.split('.')[:2])}. Nothing was written")
    paths: dict[str, str] = {}
    for key, where in snapshot.paths.items():
        theirs = env.paths.get(key)
        try:
            below = Path(where).relative_to(old_prefix)
        except ValueError:
            if theirs is not None and os.path.normpath(theirs) == os.path.normpath(where):
                paths[key] = where  # the base interpreter's, shared by both (include)
                continue
            raise UsageError(
                f"{snapshot.target}: its {key} directory {where} lies outside its prefix "
                f"{snapshot.prefix}, so it cannot be moved with it; restore it in place. "
                "Nothing was written") from None
        paths[key] = str(new_prefix / below)
        if theirs is not None and os.path.normpath(theirs) != os.path.normpath(paths[key]):
            raise UsageError(
                f"--to {destination.redacted} keeps its {key} at {theirs}, not at {paths[key]} "
                "as the backup's layout would: create it with the same kind of venv. "
                "Nothing was written")
    if blobs is None:
        raise UsageError(f"{snapshot.target}: relocating an environment rewrites files and "
                         "needs the backup store")
    rewriter = _PrefixRewriter(str(old_prefix), str(new_prefix))
    mappings = [IdentityMapping(what="prefix", old=str(old_prefix), new=str(new_prefix))]
    notes: list[str] = []
    items: list[PipInterpreter | PipDistribution] = []
    for item in snapshot.items:
        if not isinstance(item, PipDistribution):
            items.append(item)
            continue
        files = dict(item.files)
        for rel, recorded in item.files.items():
            data = blobs.get_bytes(blob_digest(recorded), path=rel)
            if rewriter.old not in data:
                continue
            if not _is_text(data):
                notes.append(f"{item.name} {rel}: a binary file that names {old_prefix} is "
                             "restored as captured (its bytes are not rewritten)")
                continue
            moved = rewriter.text(data)
            if moved is not None:
                files[rel] = record_hash(blobs.put_bytes(moved))
                mappings.append(IdentityMapping(
                    what=f"{item.name} {rel}", old=str(old_prefix), new=str(new_prefix),
                    note="names the environment's prefix"))
        update: dict[str, object] = {"files": files}
        if item.direct_url is not None:
            moved_url = rewriter.text(item.direct_url.encode())
            if moved_url is not None:
                update["direct_url"] = moved_url.decode()
                mappings.append(IdentityMapping(
                    what=f"{item.name} direct_url.json", old=str(old_prefix),
                    new=str(new_prefix), note="an install from inside the environment"))
        items.append(item.model_copy(update=update))
    moved_snap = snapshot.model_copy(update={
        "target": destination.redacted,
        "interpreter": str(env.interpreter), "prefix": str(new_prefix), "paths": paths,
        "items": items,
    })
    return Relocation(moved_snap, tuple(mappings), tuple(notes))
