"""Building a wheel from a distribution's captured installed files.

A capture keeps the bytes of every installed file in the blob store (so an
unchanged package costs nothing on the next capture, and identical packages
in two environments share storage); at restore time those files are packed
back into a wheel that pip installs with ``--no-index``.  The mapping back
from installed paths to wheel paths:

* files under the distribution's site directory → the same path in the wheel;
* files under the scripts directory → ``<name>-<version>.data/scripts/``;
* headers under ``<prefix>/include/site/pythonX.Y/<name>/`` → ``.data/headers/``;
* other files under the prefix → ``.data/data/``.

Left out of the wheel, and written back byte for byte after pip ran
(:func:`after_install_files`): what an installer writes itself — RECORD,
INSTALLER, REQUESTED, ``direct_url.json`` and the console/GUI scripts it
generates from ``entry_points.txt`` — and files outside the prefix.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import zipfile
from pathlib import Path, PurePosixPath

from preimage.connectors.pip.environment import Environment, entry_point_scripts
from preimage.interface.blobs import BlobStore
from preimage.snapshot_schemas.pip import PipDistribution

INSTALLER_FILES = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")
_EPOCH = (1980, 1, 1, 0, 0, 0)


def record_hash(hexdigest: str) -> str:
    """A sha256 hex digest in RECORD form: ``sha256=<urlsafe base64, unpadded>``."""
    return "sha256=" + base64.urlsafe_b64encode(bytes.fromhex(hexdigest)).rstrip(b"=").decode()


def blob_digest(recorded: str) -> str:
    """The blob digest (sha256 hex) of a RECORD-form hash."""
    algo, _, value = recorded.partition("=")
    if algo != "sha256":
        raise ValueError(f"unsupported RECORD hash {algo!r}")
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()


def installed_path(dist: PipDistribution, env: Environment, record_path: str) -> Path:
    """The absolute path of a RECORD path (RECORD paths are relative to the site directory)."""
    return Path(os.path.normpath(Path(env.paths[dist.location]) / record_path))


def wheel_path(dist: PipDistribution, env: Environment, record_path: str) -> str | None:
    """Where an installed file goes inside the wheel; ``None`` when the wheel cannot hold it."""
    location = Path(env.paths[dist.location])
    absolute = installed_path(dist, env, record_path)
    data_dir = dist.dist_info[: -len(".dist-info")] + ".data"
    rel = _relative(absolute, location)
    if rel is not None:
        return rel
    rel = _relative(absolute, Path(env.paths["scripts"]))
    if rel is not None:
        return f"{data_dir}/scripts/{rel}"
    rel = _relative(absolute, env.headers_root / dist.display_name)
    if rel is not None:
        return f"{data_dir}/headers/{rel}"
    rel = _relative(absolute, env.prefix)
    if rel is not None:
        return f"{data_dir}/data/{rel}"
    return None


def _relative(path: Path, base: Path) -> str | None:
    try:
        rel = path.relative_to(base)
    except ValueError:
        return None
    return rel.as_posix() if str(rel) != "." else None


def after_install_files(dist: PipDistribution, env: Environment, blobs: BlobStore) -> set[str]:
    """RECORD paths written back after pip ran: installer-written and unmappable files."""
    scripts = entry_point_scripts_of(dist, env, blobs)
    out = set()
    for rel in dist.files:
        name = PurePosixPath(rel).name
        parent = PurePosixPath(rel).parent.name
        if (
            (parent == dist.dist_info and name in INSTALLER_FILES)
            or rel in scripts
            or wheel_path(dist, env, rel) is None
        ):
            out.add(rel)
    return out


def entry_point_scripts_of(dist: PipDistribution, env: Environment, blobs: BlobStore) -> set[str]:
    """RECORD paths of the scripts generated from the distribution's entry points."""
    recorded = dist.files.get(f"{dist.dist_info}/entry_points.txt")
    if recorded is None:
        return set()
    names = entry_point_scripts(blobs.get_bytes(blob_digest(recorded)).decode(errors="replace"))
    scripts_dir = Path(env.paths["scripts"])
    out = set()
    for rel in dist.files:
        absolute = installed_path(dist, env, rel)
        if absolute.parent == scripts_dir and absolute.name in names:
            out.add(rel)
    return out


def _tags(wheel_metadata: str) -> str:
    tags = [
        line.split(":", 1)[1].strip()
        for line in wheel_metadata.splitlines()
        if line.lower().startswith("tag:")
    ]
    if not tags:
        return "py3-none-any"
    parts = [t.split("-") for t in tags]
    pys = sorted({p[0] for p in parts})
    abis = sorted({p[1] for p in parts})
    plats = sorted({p[2] for p in parts})
    return f"{'.'.join(pys)}-{'.'.join(abis)}-{'.'.join(plats)}"


def build_wheel(
    dist: PipDistribution, env: Environment, blobs: BlobStore, out_dir: Path, skip: set[str]
) -> Path:
    """Write the wheel of ``dist`` into ``out_dir`` from its blobs; return its path."""
    wheel_meta_rel = f"{dist.dist_info}/WHEEL"
    wheel_meta = ""
    if wheel_meta_rel in dist.files:
        wheel_meta = blobs.get_bytes(blob_digest(dist.files[wheel_meta_rel])).decode()
    stem = dist.dist_info[: -len(".dist-info")]
    target = out_dir / f"{stem}-{_tags(wheel_meta)}.whl"
    executable = set(dist.executable)
    rows: list[tuple[str, str, str]] = []
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for rel in sorted(dist.files):
            if rel in skip:
                continue
            arc = wheel_path(dist, env, rel)
            if arc is None:
                continue
            data = blobs.get_bytes(blob_digest(dist.files[rel]), path=rel)
            info = zipfile.ZipInfo(arc, date_time=_EPOCH)
            mode = 0o755 if rel in executable else 0o644
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
            digest = hashlib.sha256(data).hexdigest()
            rows.append((arc, record_hash(digest), str(len(data))))
        record_arc = f"{dist.dist_info}/RECORD"
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerows(rows)
        writer.writerow((record_arc, "", ""))
        info = zipfile.ZipInfo(record_arc, date_time=_EPOCH)
        info.external_attr = (0o100000 | 0o644) << 16
        zf.writestr(info, buf.getvalue())
    return target
