"""Making an environment exactly the captured package set again, offline.

Order:

1. refuse when the environment now runs another Python (major.minor): its
   packages would not fit — recreate the environment and restore again;
2. plan per distribution by comparing the live set with the snapshot:
   *install* what is missing, *reinstall* what has another version or other
   file bytes, *remove* what the snapshot does not have, *fix* installer
   metadata (INSTALLER, REQUESTED, ``direct_url.json``, executable bits);
3. verify every blob the plan needs — nothing is changed when one is missing;
4. uninstall the distributions to remove (pip itself last, when it is the
   pip doing the work);
5. build a wheel per distribution to (re)install from its captured files and
   ``pip install --no-index --find-links <dir> --no-deps --force-reinstall``
   them (bytecode compiled only where the capture had bytecode);
6. write back byte for byte what pip writes its own way (INSTALLER,
   REQUESTED, ``direct_url.json``, entry-point scripts) and rewrite RECORD in
   the captured order with the hashes of the files now on disk;
7. read the environment again and check every distribution against the
   snapshot — each RECORD hash and each installer field; a mismatch is
   reported as failed.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import os
import tempfile
from pathlib import Path

from preimage.connectors.pip.environment import Environment, is_bytecode, read_record
from preimage.connectors.pip.installer import install, pip_command, uninstall
from preimage.connectors.pip.inventory import describe, open_environment
from preimage.connectors.pip.wheel import (
    INSTALLER_FILES,
    after_install_files,
    blob_digest,
    build_wheel,
    installed_path,
    record_hash,
)
from preimage.interface.blobs import BlobStore
from preimage.interface.errors import RestoreConflictError, RestoreError
from preimage.interface.target import Target
from preimage.restoration import ConflictMode, Outcome, RestorePolicy, RestoreReport
from preimage.snapshot_schemas.pip import PipDistribution, PipInterpreter, PipSnapshot


def _major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _same_files(a: PipDistribution, b: PipDistribution) -> bool:
    return (a.version, a.location, a.dist_info, a.files) == (
        b.version,
        b.location,
        b.dist_info,
        b.files,
    )


class PipRestorer:
    """Restores one :class:`PipSnapshot` under the policy given."""

    def __init__(self, snap: PipSnapshot, blobs: BlobStore, policy: RestorePolicy) -> None:
        self.snap = snap
        self.blobs = blobs
        self.policy = policy
        self.report = RestoreReport(target=snap.target, connector="pip", dry_run=policy.dry_run)

    def _in_scope(self, name: str) -> bool:
        return not self.policy.only or any(name == o.strip("/") for o in self.policy.only)

    # ------------------------------------------------------------ plan
    def _plan(
        self, env: Environment
    ) -> tuple[
        list[tuple[PipDistribution, str]], list[PipDistribution], list[PipDistribution], list[str]
    ]:
        """(to install with the reason, to remove, to fix metadata, unchanged names)."""
        wanted_python = next(i for i in self.snap.items if isinstance(i, PipInterpreter))
        if _major_minor(env.version) != _major_minor(wanted_python.version):
            raise RestoreError(
                f"{self.snap.target} now runs Python {env.version}, the capture was of Python "
                f"{wanted_python.version}: its packages would not fit — recreate the environment "
                f"with Python {_major_minor(wanted_python.version)} and restore again; "
                "nothing was changed"
            )
        live_items, _ = describe(env, self.blobs, store_content=False)
        live = {i.name: i for i in live_items if isinstance(i, PipDistribution)}
        want = {i.name: i for i in self.snap.items if isinstance(i, PipDistribution)}
        to_install: list[tuple[PipDistribution, str]] = []
        to_remove: list[PipDistribution] = []
        to_fix: list[PipDistribution] = []
        unchanged: list[str] = []
        conflicts: list[str] = []
        overwrite = self.policy.conflict is ConflictMode.OVERWRITE
        for name in sorted(set(want) | set(live)):
            if not self._in_scope(name):
                continue
            w, have = want.get(name), live.get(name)
            if have is None:
                assert w is not None
                to_install.append((w, f"install {w.version} (missing)"))
            elif w is None:
                conflicts.append(name)
                if overwrite:
                    to_remove.append(have)
                else:
                    self.report.add(
                        name, Outcome.SKIPPED, "remove", "installed after the capture; merge keeps it"
                    )
            elif w == have:
                unchanged.append(name)
            else:
                conflicts.append(name)
                if not overwrite:
                    self.report.add(
                        name, Outcome.SKIPPED, "restore", "changed since the capture; merge keeps it"
                    )
                elif not _same_files(w, have):
                    why = (
                        f"install {w.version} (now {have.version})"
                        if w.version != have.version
                        else f"reinstall {w.version} (installed files changed)"
                    )
                    to_install.append((w, why))
                else:
                    to_fix.append(w)
        if self.policy.conflict is ConflictMode.REFUSE and conflicts:
            raise RestoreConflictError(self.snap.target, conflicts)
        return to_install, to_remove, to_fix, unchanged

    # ------------------------------------------------------------ run
    def run(self) -> RestoreReport:
        """Plan, then (unless a dry run) uninstall, install, fix up and verify."""
        env = open_environment(Target.parse(self.snap.target))
        to_install, to_remove, to_fix, unchanged = self._plan(env)
        for name in unchanged:
            self.report.add(name, Outcome.UNCHANGED)
        if self.policy.dry_run:
            for dist, why in to_install:
                self.report.add(dist.name, Outcome.PLANNED, why)
            for dist in to_remove:
                self.report.add(dist.name, Outcome.PLANNED, f"remove {dist.version}")
            for dist in to_fix:
                self.report.add(dist.name, Outcome.PLANNED, "set installer metadata")
            return self.report
        if not (to_install or to_remove or to_fix):
            return self.report
        for dist, _ in to_install:
            for recorded in dist.files.values():
                self.blobs.verify(blob_digest(recorded), path=dist.display_name)
        command = pip_command(env.interpreter, self.snap.target)
        own_pip = str(env.interpreter) == command[0]
        later = [d for d in to_remove if d.name == "pip" and own_pip]
        uninstall(command, [d.display_name for d in to_remove if d not in later])
        self._install(env, command, [d for d, _ in to_install])
        for dist in [d for d, _ in to_install] + to_fix:
            self._write_back(env, dist)
        uninstall(command, [d.display_name for d in later])
        self._verify(env, to_install, to_remove, to_fix)
        return self.report

    def _install(self, env: Environment, command: list[str], dists: list[PipDistribution]) -> None:
        if not dists:
            return
        with tempfile.TemporaryDirectory(prefix="preimage-wheels-") as tmp:
            wheel_dir = Path(tmp)
            groups: dict[bool, list[str]] = {True: [], False: []}
            for dist in dists:
                skip = after_install_files(dist, env, self.blobs)
                build_wheel(dist, env, self.blobs, wheel_dir, skip)
                compiled = any(is_bytecode(p) for p in dist.record_paths)
                groups[compiled].append(f"{dist.display_name}=={dist.version}")
            for compiled, requirements in groups.items():
                install(command, wheel_dir, requirements, compile=compiled)

    # ------------------------------------------------------------ write back
    def _write_back(self, env: Environment, dist: PipDistribution) -> None:
        """Make every captured file byte-identical, drop installer files the capture lacked,
        and rewrite RECORD in the captured order."""
        executable = set(dist.executable)
        for rel, recorded in dist.files.items():
            path = installed_path(dist, env, rel)
            if _file_hash(path) != recorded:
                _write_atomic(path, self.blobs.get_bytes(blob_digest(recorded), path=str(path)))
            with contextlib.suppress(FileNotFoundError):
                mode = os.stat(path).st_mode & 0o7777
                want = mode | 0o111 if rel in executable else mode & ~0o111
                if want != mode:
                    os.chmod(path, want)
        dist_info = installed_path(dist, env, dist.dist_info)
        for name in INSTALLER_FILES[1:]:
            if f"{dist.dist_info}/{name}" not in dist.files:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(dist_info / name)
        record = dist_info / "RECORD"
        try:
            extra = [r for r in read_record(record.read_text()) if r[0] not in set(dist.record_paths)]
        except FileNotFoundError:
            extra = []
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        record_rel = f"{dist.dist_info}/RECORD"
        for rel in dist.record_paths:
            path = installed_path(dist, env, rel)
            if rel == record_rel or not path.is_file():
                writer.writerow((rel, "", ""))
            else:
                writer.writerow((rel, _file_hash(path), str(path.stat().st_size)))
        for rel, _, _ in extra:
            path = installed_path(dist, env, rel)
            if path.is_file():
                writer.writerow((rel, _file_hash(path), str(path.stat().st_size)))
        _write_atomic(record, buf.getvalue().encode())

    # ------------------------------------------------------------ verify
    def _verify(
        self,
        env: Environment,
        to_install: list[tuple[PipDistribution, str]],
        to_remove: list[PipDistribution],
        to_fix: list[PipDistribution],
    ) -> None:
        live_items, _ = describe(env, self.blobs, store_content=False)
        live = {i.name: i for i in live_items if isinstance(i, PipDistribution)}
        for dist, why in [*to_install, *((d, "set installer metadata") for d in to_fix)]:
            have = live.get(dist.name)
            if have == dist:
                self.report.add(dist.name, Outcome.RESTORED, why)
                continue
            if have is None:
                reason = "not installed after pip ran"
            else:
                fields = [
                    f for f in PipDistribution.model_fields if getattr(have, f) != getattr(dist, f)
                ]
                bad = sorted(rel for rel, h in dist.files.items() if have.files.get(rel) != h)[:5]
                reason = f"differs after restore in {', '.join(fields)}" + (
                    f" (files: {', '.join(bad)})" if bad else ""
                )
            self.report.add(dist.name, Outcome.FAILED, why, reason)
        for dist in to_remove:
            if dist.name in live:
                self.report.add(dist.name, Outcome.FAILED, f"remove {dist.version}", "still installed")
            else:
                self.report.add(dist.name, Outcome.REMOVED, f"remove {dist.version}")


def _file_hash(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            return record_hash(hashlib.file_digest(fh, "sha256").hexdigest())
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".preimage-tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        if not path.exists():
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


__all__ = ["PipRestorer"]
