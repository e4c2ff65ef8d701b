"""Copies that land somewhere other than their text suggests are backed up where they land."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import preimage
from preimage.layer import BackupLayer, ToolCall
from preimage.store.store import Store


def _state(root: Path) -> dict[str, tuple[int, bytes]]:
    """Mode and content of every file under ``root``, by relative path."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = (p.stat().st_mode, p.read_bytes())
    return out


@pytest.mark.parametrize("command", [
    "cp -r templates/. site/",
    "cp -a templates/. site",
    r"find templates -name '*.html' -exec cp {} site/ \;",
    "find templates -name '*.html' -exec cp -t site {} +",
])
def test_a_copy_into_a_directory_is_backed_up_where_it_lands(
    command: str, tmp_path: Path, store: Store,
) -> None:
    """The files a copy overwrites in the destination come back after restore, exactly."""
    proj = tmp_path / "proj"
    (proj / "templates").mkdir(parents=True)
    (proj / "site").mkdir()
    (proj / "templates" / "index.html").write_text("<p>template</p>\n")
    (proj / "site" / "index.html").write_text("<p>the live site, edited by hand</p>\n")
    (proj / "site" / "about.html").write_text("<p>about</p>\n")
    before = _state(proj / "site")
    layer = BackupLayer(store=store, env=dict(os.environ))
    decision = layer.before(ToolCall.shell(command, cwd=str(proj)))
    assert decision.backup_id, decision.additional_context
    subprocess.run(["bash", "-c", command], cwd=proj, check=True)
    assert _state(proj / "site") != before
    preimage.restore(decision.backup_id, store=store)
    assert _state(proj / "site") == before
