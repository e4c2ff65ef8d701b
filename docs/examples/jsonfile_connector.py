"""A third-party connector, as a package of its own would ship it: the keys of a JSON file.

::

    jsonfile:///abs/path/settings.json

An agent that rewrites ``.vscode/settings.json`` or ``package.json`` changes a
few keys and keeps the rest; this connector captures the file key by key, so
``diff`` names the keys that changed, ``--policy merge`` puts back only the
keys that were deleted, and ``--only jsonfile:///…/settings.json#editor.tabSize``
restores one key.  It is the worked example of docs/connectors.md and is run
through preimage's conformance kit by the test suite.

Register it from your package's ``pyproject.toml``::

    [project.entry-points."preimage.connectors"]
    jsonfile = "my_package.jsonfile_connector:JsonFileConnector"

or at run time with ``preimage.register_connector("jsonfile", JsonFileConnector)``.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import quote

from pydantic import Field

import preimage
from preimage.restoration import ConflictMode, Outcome, RestorePolicy, RestoreReport
from preimage.snapshot_schemas import Item, Snapshot, content, key, metadata, register_snapshot_type

# ------------------------------------------------------------------ the schema


class JsonFile(Item):
    """The file itself: what a client can write back about it besides its keys."""

    kind: Literal["file"] = key("file")
    mode: int = metadata(description="permission bits", display="mode")
    order: list[str] = metadata(description="the keys in file order (position matters)")


class JsonKey(Item):
    """One top-level key and its value (nested objects and lists are compared leaf by leaf)."""

    kind: Literal["key"] = key("key")
    name: str = key()
    value: Any = content()


JsonItem = Annotated[JsonFile | JsonKey, Field(discriminator="kind")]


@register_snapshot_type
class JsonFileSnapshot(Snapshot):
    """The keys of one JSON file, or the fact that it did not exist."""

    schema_name: ClassVar[str] = "example-jsonfile"
    schema_version: int = 1
    connector: str = "jsonfile"
    path: str = Field(description="absolute path of the file")
    exists: bool = Field(True, description="False: restoring this snapshot removes the file")
    items: list[JsonItem] = Field(default_factory=list)


# ------------------------------------------------------------------ the URI grammar


def parse_path(target: preimage.Target) -> str:
    """The file a ``jsonfile:///abs/path.json`` target names."""
    if target.host not in (None, "", "localhost"):
        raise preimage.InvalidTargetError(target.redacted, "jsonfile targets are local files")
    if not target.path.startswith("/") or target.path.endswith("/"):
        raise preimage.InvalidTargetError(
            target.redacted, "name a file by its absolute path: jsonfile:///abs/settings.json"
        )
    return os.path.normpath(target.path)


def jsonfile_uri(path: str) -> str:
    """``jsonfile:///abs/path.json`` — the inverse of :func:`parse_path`."""
    return "jsonfile://" + quote(path, safe="/-._~")


# ------------------------------------------------------------------ the connector


class JsonFileConnector(preimage.ConnectorBase):
    """Top-level keys of a JSON object file, with the file's mode and key order."""

    scheme: ClassVar[str] = "jsonfile"
    snapshot_type: ClassVar[type[Snapshot]] = JsonFileSnapshot
    # Every policy, restores narrowed to keys, a missing file captured as absent; a
    # local file has no server, no server-assigned ids and nothing it cannot read.
    capabilities: ClassVar[preimage.Capabilities] = preimage.Capabilities()

    def capture(self, target: preimage.Target, blobs: preimage.BlobStore) -> JsonFileSnapshot:
        """Read the file (values are small: they stay in the snapshot, not in blobs)."""
        path = parse_path(target)
        try:
            with open(path, "rb") as fh:
                raw, mode = fh.read(), os.fstat(fh.fileno()).st_mode & 0o7777
        except FileNotFoundError:
            return JsonFileSnapshot(target=jsonfile_uri(path), path=path, exists=False)
        except OSError as exc:
            raise preimage.TerminalConnectorError(f"cannot read {path}: {exc.strerror}") from exc
        try:
            doc = json.loads(raw)
        except ValueError as exc:
            raise preimage.TerminalConnectorError(f"{path} is not JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise preimage.TerminalConnectorError(f"{path} holds a JSON {type(doc).__name__}, "
                                                  "not an object with keys")
        items: list[Any] = [JsonFile(mode=mode, order=list(doc))]
        items += [JsonKey(name=k, value=v) for k, v in doc.items()]
        return JsonFileSnapshot(target=jsonfile_uri(path), path=path, items=items)

    def restore(
        self, snapshot: Snapshot, blobs: preimage.BlobStore, *, policy: RestorePolicy
    ) -> RestoreReport:
        """Bring the keys back as ``policy`` allows; write the file once, atomically."""
        assert isinstance(snapshot, JsonFileSnapshot)
        report = RestoreReport(target=snapshot.target, connector=self.scheme,
                               dry_run=policy.dry_run)
        live = self.capture(preimage.Target.parse(snapshot.target), blobs)
        if not snapshot.exists:
            return self._remove(snapshot, live, policy, report)
        want = {i.name: i.value for i in snapshot.items if isinstance(i, JsonKey)}
        have = {i.name: i.value for i in live.items if isinstance(i, JsonKey)}
        merge = policy.conflict is ConflictMode.MERGE
        result = dict(have)
        for name, value in want.items():
            if not policy.in_scope(name):
                continue
            if name in have and have[name] == value:
                report.add(name, Outcome.UNCHANGED)
            elif name in have and merge:
                report.add(name, Outcome.SKIPPED, "write", "changed since the capture; merge keeps it")
            else:
                result[name] = value
                report.add(name, Outcome.PLANNED if policy.dry_run else Outcome.RESTORED,
                           "put back" if name not in have else "overwrite")
        for name in have.keys() - want.keys():
            if policy.in_scope(name) and not merge:
                del result[name]
                report.add(name, Outcome.PLANNED if policy.dry_run else Outcome.REMOVED,
                           "remove (added since the capture)")
        if policy.conflict is ConflictMode.REFUSE and report.changes:
            raise preimage.RestoreConflictError(snapshot.target, [i.key for i in report.changes])
        if policy.dry_run or not report.changes:
            return report
        file = next(i for i in snapshot.items if isinstance(i, JsonFile))
        order = [k for k in file.order if k in result] + [k for k in result if k not in file.order]
        _write(snapshot.path, {k: result[k] for k in order}, file.mode)
        return report

    @staticmethod
    def _remove(
        snapshot: JsonFileSnapshot, live: JsonFileSnapshot, policy: RestorePolicy,
        report: RestoreReport,
    ) -> RestoreReport:
        """The file did not exist at capture: an overwrite removes it, merge keeps it."""
        if not live.exists:
            return report
        if policy.conflict is ConflictMode.REFUSE:
            raise preimage.RestoreConflictError(snapshot.target, [snapshot.path])
        if policy.conflict is ConflictMode.MERGE:
            report.add(snapshot.path, Outcome.SKIPPED, "remove", "created since; merge keeps it")
        elif policy.dry_run:
            report.add(snapshot.path, Outcome.PLANNED, "remove (created since the capture)")
        else:
            os.unlink(snapshot.path)
            report.add(snapshot.path, Outcome.REMOVED, "remove (created since the capture)")
        return report


def _write(path: str, doc: dict[str, Any], mode: int) -> None:
    """Replace ``path`` atomically: a temporary file beside it, then a rename."""
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".preimage-")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh, indent=2)
            fh.write("\n")
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
