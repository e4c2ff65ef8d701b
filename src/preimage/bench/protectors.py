"""The protectors a benchmark run compares, by name."""

from __future__ import annotations

from preimage.bench.content_only import ContentOnly
from preimage.bench.preimage_protector import DeclaredTargets, layer_available
from preimage.bench.protector import Protector
from preimage.bench.workspace import WorkspaceOnly
from preimage.interface.errors import UsageError

NAMES = ("none", "workspace", "content", "preimage", "declared", "overwrite", "undo",
         "backupper")
#: What the undo suite compares unless --protectors says otherwise.
UNDO_PROTECTORS = "workspace,overwrite,undo"


def resolve_protectors(spec: str) -> list[Protector]:
    """Protectors from a comma list of :data:`NAMES`.

    ``preimage`` is the backup layer when this build ships it, else the
    declared-targets protector (labelled as such).
    """
    out: list[Protector] = []
    for raw in spec.split(","):
        name = raw.strip()
        if not name:
            continue
        if name == "none":
            out.append(Protector())
        elif name == "workspace":
            out.append(WorkspaceOnly())
        elif name == "content":
            out.append(ContentOnly())
        elif name == "declared" or (name == "preimage" and not layer_available()):
            out.append(DeclaredTargets())
        elif name == "preimage":
            from preimage.bench.layer_protector import LayerProtector

            out.append(LayerProtector())
        elif name == "backupper":
            from preimage.bench.backupper import BackUpper

            out.append(BackUpper())
        elif name in ("overwrite", "undo"):
            from preimage.bench.undo_protector import OverwriteProtector, UndoProtector

            out.append(OverwriteProtector() if name == "overwrite" else UndoProtector())
        else:
            raise UsageError(f"unknown protector {name!r}; choose from {', '.join(NAMES)}")
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        raise UsageError(f"protector listed twice: {spec}")
    if not out:
        raise UsageError("--protectors is empty")
    return out
