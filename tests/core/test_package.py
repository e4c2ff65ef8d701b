"""The package surface: light import, sorted exports, every export present."""

from __future__ import annotations

import subprocess
import sys

import preimage

HEAVY = ("psycopg", "kubernetes", "imapclient", "playwright", "litellm", "sqlalchemy")


def test_import_preimage_loads_no_heavy_client() -> None:
    """`import preimage` imports none of the heavy clients."""
    code = (
        "import sys, preimage, preimage.cli; "
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
