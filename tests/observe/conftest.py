"""Both supervisor loops: the compiled one (``fastloop.c``) and the Python one.

The ``loop`` fixture runs a test once per loop (``PREIMAGE_OBSERVE_LOOP``); the
compiled loop must be available here (the ``observe-fast`` extra brings the
compiler, and CI installs it), so a missing one fails rather than skips.  The
built library is kept in one cache for the whole run, also for the processes the
tests start with a scratch ``HOME``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from preimage.interface.cache import cache_dir
from preimage.observe import compiled

LOOPS = ("compiled", "python")


@pytest.fixture(autouse=True, scope="session")
def _one_build() -> Iterator[None]:
    """One cache for the built loop, whatever HOME a test gives its processes."""
    mp = pytest.MonkeyPatch()
    mp.setenv("PREIMAGE_CACHE_DIR", str(cache_dir()))
    yield
    mp.undo()


@pytest.fixture(params=LOOPS)
def loop(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The supervisor loop this run of the test uses (the test runs once per loop)."""
    if request.param == "python":
        monkeypatch.setenv("PREIMAGE_OBSERVE_LOOP", "python")
    else:
        monkeypatch.delenv("PREIMAGE_OBSERVE_LOOP", raising=False)
        lib, why = compiled.library()
        assert lib is not None, f"the compiled loop is not available: {why}"
    return str(request.param)

