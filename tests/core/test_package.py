"""The package surface: light import, sorted exports, every export present."""

from __future__ import annotations

import subprocess
import sys

import preimage

HEAVY = ("psycopg", "kubernetes", "imapclient", "playwright", "litellm", "sqlalchemy")


def test_import_preimage_loads_no_heavy_client() -> None:
    """`import preimage` imports none of the heavy clients."""
    code = (
        "import sys, preimage, preimage.cli.main; "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_all_is_sorted_and_complete() -> None:
    """`preimage.__all__` is sorted and every name in it exists."""
    assert preimage.__all__ == sorted(preimage.__all__, key=str)
    for name in preimage.__all__:
        assert hasattr(preimage, name), name


def test_error_names_end_in_error() -> None:
    """Every exported exception class is named …Error."""
    for name in preimage.__all__:
        obj = getattr(preimage, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert name.endswith("Error"), name


def test_no_name_is_both_a_submodule_and_another_object() -> None:
    """No package exports a function or class under the name of one of its submodules."""
    import importlib
    import pkgutil
    import types

    clashes = []
    for info in pkgutil.walk_packages(preimage.__path__, "preimage."):
        if not info.ispkg:
            continue
        package = importlib.import_module(info.name)
        for sub in pkgutil.iter_modules(package.__path__):
            value = package.__dict__.get(sub.name)
            if value is not None and not isinstance(value, types.ModuleType):
                clashes.append(f"{info.name}.{sub.name}")
    top = {m.name for m in pkgutil.iter_modules(preimage.__path__)}
    clashes += [f"preimage.{n}" for n in top if not isinstance(preimage.__dict__.get(n), types.ModuleType | None)]
    assert clashes == []
