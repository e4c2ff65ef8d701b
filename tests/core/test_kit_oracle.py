"""The conformance kit proved on itself: copies of the documented example connector, each
broken in one way a real connector can be lossy, must fail the kit; the example passes."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "jsonfile_connector.py"

# A contract module run by an inner pytest: the example's contract (its fixtures and
# observer, as tests/core/test_connector_example.py has them) once per broken copy.
CONTRACTS = '''
import dataclasses, importlib.util, json, os, stat, sys
from pathlib import Path
import pytest
import preimage
from preimage.restoration import ConflictMode
from preimage.testing import TARGET_ITEM, ConnectorContract

spec = importlib.util.spec_from_file_location("jsonfile_connector", {example!r})
example = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = example
spec.loader.exec_module(example)
Base = example.JsonFileConnector


class DropsAField(Base):
    """Leaves out every key whose value is a list (its own reading agrees with itself)."""
    def capture(self, target, blobs):
        snap = super().capture(target, blobs)
        keep = [i for i in snap.items if not isinstance(getattr(i, "value", None), list)]
        return snap.model_copy(update={{"items": keep}})


class RecordsAConstant(Base):
    """Records every file's mode as 0o644."""
    def capture(self, target, blobs):
        snap = super().capture(target, blobs)
        items = [i.model_copy(update={{"mode": 0o644}}) if isinstance(i, example.JsonFile)
                 else i for i in snap.items]
        return snap.model_copy(update={{"items": items}})


class SkipsRemovals(Base):
    """Never removes a key added since the capture."""
    def restore(self, snapshot, blobs, *, policy):
        live = self.capture(preimage.Target.parse(snapshot.target), blobs)
        added = {{i.name for i in live.items if isinstance(i, example.JsonKey)}}
        added -= {{i.name for i in snapshot.items if isinstance(i, example.JsonKey)}}
        items = list(snapshot.items) + [i for i in live.items
                                        if isinstance(i, example.JsonKey) and i.name in added]
        return super().restore(snapshot.model_copy(update={{"items": items}}), blobs,
                               policy=policy)


class MergesOnOverwrite(Base):
    """Only puts back what is missing when told to overwrite."""
    def restore(self, snapshot, blobs, *, policy):
        if policy.conflict is ConflictMode.OVERWRITE:
            policy = dataclasses.replace(policy, conflict=ConflictMode.MERGE)
        return super().restore(snapshot, blobs, policy=policy)


class IgnoresSubScope(Base):
    """Restores the whole target whatever --only says."""
    def restore(self, snapshot, blobs, *, policy):
        return super().restore(snapshot, blobs, policy=dataclasses.replace(policy, only=()))


SETTINGS = {{"editor.tabSize": 4, "editor.rulers": [80, 100],
            "files.exclude": {{"**/.git": True}}, "telemetry": False}}


class _Example(ConnectorContract):
    @pytest.fixture(autouse=True)
    def _registered(self):
        preimage.register_connector("jsonfile", type(self).connector)
        yield
        preimage.interface.registry.unregister_connector("jsonfile")

    @pytest.fixture
    def target_uri(self, tmp_path):
        path = tmp_path / "settings.json"
        path.write_text(json.dumps(SETTINGS, indent=2))
        path.chmod(0o640)
        return example.jsonfile_uri(str(path))

    @pytest.fixture
    def mutate(self):
        def damage(uri):
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
    def observe(self):
        def read(uri):
            path, _, part = uri.removeprefix("jsonfile://").partition("#")
            if not os.path.exists(path):
                return {{}}
            doc = json.loads(Path(path).read_text())
            items = {{f"key {{k}}": {{"value": v}} for k, v in doc.items() if part in ("", k)}}
            if not part:
                items[TARGET_ITEM] = {{"mode": stat.S_IMODE(os.stat(path).st_mode),
                                      "order": list(doc)}}
            return items
        return read

    @pytest.fixture
    def malformed_uris(self):
        return ["jsonfile://"]

    @pytest.fixture
    def sub_scope(self, target_uri):
        return f"{{target_uri}}#files.exclude"

    @pytest.fixture
    def absent_uri(self, tmp_path):
        return example.jsonfile_uri(str(tmp_path / "not-yet.json"))

    @pytest.fixture
    def create(self):
        return lambda uri: Path(uri.removeprefix("jsonfile://")).write_text('{{"new": 1}}')


class TestSound(_Example):
    connector = Base


class TestDropsAField(_Example):
    connector = DropsAField


class TestRecordsAConstant(_Example):
    connector = RecordsAConstant


class TestSkipsRemovals(_Example):
    connector = SkipsRemovals


class TestMergesOnOverwrite(_Example):
    connector = MergesOnOverwrite


class TestIgnoresSubScope(_Example):
    connector = IgnoresSubScope
'''

BROKEN = ["DropsAField", "RecordsAConstant", "SkipsRemovals", "MergesOnOverwrite",
          "IgnoresSubScope"]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """Class → test → outcome of the kit run over the sound example and each broken copy."""
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("kit")
    (folder / "test_contracts.py").write_text(CONTRACTS.format(example=str(EXAMPLE)))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
         "-rA", "--no-header", "-o", "addopts=", str(folder / "test_contracts.py")],
        capture_output=True, text=True, cwd=folder, timeout=600, check=False,
    )
    found: dict[str, dict[str, str]] = {}
    for line in proc.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR", "SKIPPED") and "::" in rest:
            node = rest.split(" ", 1)[0]
            _, cls, test = node.split("::")[:3]
            found.setdefault(cls.removeprefix("Test"), {})[test] = word
    assert "Sound" in found, proc.stdout[-3000:] + proc.stderr[-3000:]
    return found


def test_the_sound_example_passes_every_test(outcomes: dict[str, dict[str, str]]) -> None:
    """The documented example, with its observer, passes the whole kit."""
    failed = {t: o for t, o in outcomes["Sound"].items() if o != "PASSED"}
    assert failed == {}
    assert "test_overwrite_matches_the_observer" in outcomes["Sound"]


@pytest.mark.parametrize("broken", BROKEN)
def test_every_broken_connector_fails_the_kit(
    broken: str, outcomes: dict[str, dict[str, str]]
) -> None:
    """A connector that drops a field, records a constant, skips removals, merges when told
    to overwrite or ignores a sub-scope fails at least one test of the kit."""
    failed = [t for t, o in outcomes[broken].items() if o in ("FAILED", "ERROR")]
    assert failed, f"{broken} passed the kit: {outcomes[broken]}"


@pytest.mark.parametrize("broken", ["DropsAField", "RecordsAConstant"])
def test_the_observer_catches_lossy_readings(
    broken: str, outcomes: dict[str, dict[str, str]]
) -> None:
    """A field left out or read as a constant fails the observer's overwrite test."""
    assert outcomes[broken]["test_overwrite_matches_the_observer"] == "FAILED"


def test_only_the_observer_catches_a_constant(outcomes: dict[str, dict[str, str]]) -> None:
    """Every mode read as 0o644 passes the tests that compare the connector with itself
    (as the issue found: all 15 of them) and fails only against the observer."""
    failed = sorted(t for t, o in outcomes["RecordsAConstant"].items() if o == "FAILED")
    assert failed and all("observer" in t for t in failed), failed
