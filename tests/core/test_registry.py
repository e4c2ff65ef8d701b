"""One registry mechanism: run-time registrations, lazy built-ins, entry points, clear misses."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

import preimage
from preimage.interface.errors import NoSuchConnectorError
from preimage.interface.registry import BuiltIn, PluginLoader, connector_problem, connectors


class Thing:
    """A stand-in plug-in."""


def _loader(builtins: dict[str, BuiltIn], group: str = "preimage.test_things") -> PluginLoader[object]:
    return PluginLoader("thing", group, builtins, miss=NoSuchConnectorError)


def test_registered_connector_is_found_and_forgotten() -> None:
    """register_connector makes a scheme usable at once; unregister takes it away."""
    from preimage.connectors.files import FileConnector

    preimage.register_connector("myfiles", FileConnector)
    try:
        assert isinstance(preimage.get_connector("MyFiles"), FileConnector)
        assert "myfiles" in preimage.known_schemes()
        assert connector_problem("myfiles") is None
    finally:
        preimage.interface.registry.unregister_connector("myfiles")
    with pytest.raises(NoSuchConnectorError, match=r"known schemes: .*file"):
        preimage.get_connector("myfiles")


def test_unknown_scheme_names_the_known_ones() -> None:
    """A miss says which schemes exist, and the layer's question answers without importing."""
    with pytest.raises(NoSuchConnectorError) as info:
        preimage.get_connector("gopher")
    assert "k8s" in info.value.known and "file" in info.value.known
    assert connector_problem("gopher") == "no connector for gopher://"


def test_family_prefix_serves_every_member() -> None:
    """A built-in ending in '+' serves the whole family (mysql+pymysql, web+isso)."""
    assert connectors.builtin_for("mysql+pymysql") == connectors.builtins["mysql+"]
    assert connectors.builtin_for("web+anything") == connectors.builtins["web+"]
    assert connectors.builtin_for("web") is None


def test_missing_client_names_the_extra_to_install() -> None:
    """A built-in whose client is not installed says which extra brings it."""
    loader = _loader({"x": BuiltIn("preimage_test_absent_client.mod:Thing", "xextra",
                                   "preimage_test_absent_client")})
    assert loader.problem("x") == "the x thing is not in this build"
    loader = _loader({"x": BuiltIn("json:JSONDecoder", "xextra", "preimage_test_absent_client")})
    assert loader.problem("x") == "the x thing needs pip install 'preimage[xextra]'"


def test_built_ins_are_not_imported_until_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Listing and checking a built-in imports nothing; loading imports it once."""
    (tmp_path / "preimage_test_lazy.py").write_text("class Thing:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    loader = _loader({"lazy": BuiltIn("preimage_test_lazy:Thing")})
    assert loader.names() == ["lazy"]
    assert loader.problem("lazy") is None
    assert "preimage_test_lazy" not in sys.modules
    first = loader.load("lazy")
    assert type(first).__name__ == "Thing" and loader.load("LAZY") is first
    sys.modules.pop("preimage_test_lazy", None)


def test_entry_point_plugins_are_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package that declares the entry-point group is found by name, as pip would install it."""
    (tmp_path / "preimage_test_plugin.py").write_text("class Thing:\n    pass\n")
    info = tmp_path / "preimage_test_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: preimage-test-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent("""\
        [preimage.test_things]
        gizmo = preimage_test_plugin:Thing
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    loader = _loader({})
    assert loader.names() == ["gizmo"]
    assert loader.source("gizmo") == "entry point"
    assert loader.problem("gizmo") is None
    assert type(loader.load("gizmo")).__name__ == "Thing"
    sys.modules.pop("preimage_test_plugin", None)


def test_connectors_and_site_adapters_share_the_mechanism() -> None:
    """Site adapters are looked up by the same loader class, and a wrong type is refused."""
    from preimage.connectors.web import register_site_adapter, unregister_site_adapter
    from preimage.connectors.web.registry import site_adapters

    assert isinstance(site_adapters, PluginLoader)
    assert {"isso", "trac"} <= set(site_adapters.names())
    register_site_adapter("bogus", Thing)
    try:
        with pytest.raises(TypeError, match=r"not a preimage\.connectors\.web\.SiteAdapter"):
            site_adapters.load("bogus")
    finally:
        unregister_site_adapter("bogus")
    with pytest.raises(NoSuchConnectorError, match=r"web\+nope"):
        site_adapters.load("nope")


def test_a_connector_without_the_protocol_is_refused() -> None:
    """Registering something that is not a connector fails on first use, naming what is missing."""
    preimage.register_connector("broken", Thing)
    try:
        with pytest.raises(TypeError, match="has no 'scheme'"):
            preimage.get_connector("broken")
    finally:
        preimage.interface.registry.unregister_connector("broken")


def test_benchmark_systems_and_copiers_use_the_same_mechanism() -> None:
    """The benchmark's systems and content-only copiers are plug-ins of the same kind; a system
    is made anew for every run (it starts a server), and an unknown name says what exists."""
    from preimage.bench.content_only import copiers, get_copier
    from preimage.bench.systems.base import get_system, systems

    assert isinstance(systems, PluginLoader) and isinstance(copiers, PluginLoader)
    assert get_system("files") is not get_system("files")
    assert get_copier("web+isso") is not None and get_copier("gopher") is None
    with pytest.raises(preimage.UsageError, match=r"unknown benchmark system 'nope'.*files"):
        get_system("nope")
