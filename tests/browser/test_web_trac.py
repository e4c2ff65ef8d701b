"""The Trac adapter against a real Trac, through real Chromium: read-only capture and bad input.

B-delete-issue and B-delete-label run through the CLI in test_browser_scenarios.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import preimage
from fixtures.trac import TracServer
from preimage import Store
from preimage.connectors.web import LoginRequiredError

pytestmark = [pytest.mark.browser, pytest.mark.webapp]


def _uri(server: TracServer, path: str, profile: Path) -> str:
    return f"web+trac://127.0.0.1:{server.port}{path}?profile={profile}&env={server.env}"


def test_capture_changes_nothing_in_trac(
    trac_server: TracServer, profile: Path, store: Store
) -> None:
    """Reading a milestone and its tickets through the pages writes nothing to Trac's database."""
    before = trac_server.dump()
    preimage.capture([_uri(trac_server, "/milestone/1.0", profile)], store=store)
    assert trac_server.dump() == before


def test_profile_without_trac_login_is_refused(
    trac_server: TracServer, unsigned_profile: Path, store: Store
) -> None:
    """A profile not signed in to Trac gets a login error naming the adapter."""
    fresh = unsigned_profile
    with pytest.raises(LoginRequiredError, match="'trac'"):
        preimage.capture([_uri(trac_server, "/ticket/1", fresh)], store=store)
