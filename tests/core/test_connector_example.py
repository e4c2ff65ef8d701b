"""The worked example of docs/connectors.md — a third-party connector for the keys of a
JSON file — passes the conformance kit, registered the way its own package would be."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import preimage
from preimage.testing import TARGET_ITEM, ConnectorContract

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "jsonfile_connector.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("jsonfile_connector", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


example = _load()

SETTINGS = {
    "editor.tabSize": 4,
    "editor.rulers": [80, 100],
    "files.exclude": {"**/.git": True, "**/node_modules": True},
    "python.defaultInterpreterPath": ".venv/bin/python",
    "telemetry": False,
}


@pytest.fixture(autouse=True)
def _registered() -> Iterator[None]:
    """The example registered for the test, as an installed package's entry point would be."""
    preimage.register_connector("jsonfile", example.JsonFileConnector)
    yield
    preimage.interface.registry.unregister_connector("jsonfile")


class TestJsonFileConnector(ConnectorContract):
    """Every test of the kit that the example's capabilities call for."""

    connector = example.JsonFileConnector

    @pytest.fixture
    def target_uri(self, tmp_path: Path) -> str:
        path = tmp_path / ".vscode" / "settings.json"
        path.parent.mkdir()
        path.write_text(json.dumps(SETTINGS, indent=2))
        path.chmod(0o640)
        return str(example.jsonfile_uri(str(path)))

    @pytest.fixture
    def mutate(self) -> Callable[[str], None]:
        """An agent deletes a key, changes two, adds one and loosens the mode."""

        def damage(uri: str) -> None:
            path = Path(uri.removeprefix("jsonfile://"))
            doc = json.loads(path.read_text())
            del doc["files.exclude"]
            doc["editor.tabSize"] = 2
            doc["editor.rulers"] = [120]
            doc["workbench.colorTheme"] = "Default Dark+"
            path.write_text(json.dumps(doc))
            path.chmod(0o666)

        return damage

    @pytest.fixture
    def observe(self) -> Callable[[str], dict[str, dict[str, Any]]]:
        """The file as the system shows it, without the connector: its mode from a stat,
        its keys (in order) and values from a JSON parse; a ``#key`` URI: that key only."""

        def read(uri: str) -> dict[str, dict[str, Any]]:
            path, _, part = uri.removeprefix("jsonfile://").partition("#")
            if not os.path.exists(path):
                return {}
            doc = json.loads(Path(path).read_text())
            items = {f"key {k}": {"value": v} for k, v in doc.items() if part in ("", k)}
            if not part:
                items[TARGET_ITEM] = {"mode": stat.S_IMODE(os.stat(path).st_mode), "order": list(doc)}
            return items

        return read

    @pytest.fixture
    def malformed_uris(self) -> list[str]:
        return ["jsonfile://elsewhere/x.json", "jsonfile://", "jsonfile:///srv/dir/"]

    @pytest.fixture
    def sub_scope(self, target_uri: str) -> str:
        """One key the agent deleted; its other changes stay."""
        return f"{target_uri}#files.exclude"

    @pytest.fixture
    def absent_uri(self, tmp_path: Path) -> str:
        return str(example.jsonfile_uri(str(tmp_path / "not-yet.json")))

    @pytest.fixture
    def create(self) -> Callable[[str], None]:
        return lambda uri: Path(uri.removeprefix("jsonfile://")).write_text('{"new": 1}')


def test_the_score_names_keys_and_shows_modes_in_octal(tmp_path: Path) -> None:
    """What a user of the example sees after an agent's edit: keys by name, mode in octal."""
    from preimage.similarity.render import report_lines

    store = preimage.Store(tmp_path / "home")
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(SETTINGS))
    path.chmod(0o600)
    backup = preimage.capture([example.jsonfile_uri(str(path))], store=store)
    path.write_text(json.dumps({**SETTINGS, "telemetry": True}))
    path.chmod(0o644)
    total, _ = preimage.score(backup.id, store=store)
    lines = report_lines(total)
    assert "content  changed value  key telemetry  value: False → True" in lines
    assert "metadata changed value  file  mode: 0o600 → 0o644" in lines
    assert total.classes["server"].text() == "n/a"
    store.close()
