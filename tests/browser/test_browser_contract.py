"""The connector conformance kit, run against the browser connector and real Chromium."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from preimage.connectors.browser import browser_context, close_profile
from preimage.connectors.browser.pages import session_tab
from preimage.testing import ConnectorContract

from .conftest import SHOP_HOST, clear_site_data, seeded_tab
from .observers import Observed, observe_browser

pytestmark = pytest.mark.browser


class TestBrowserConnectorContract(ConnectorContract):
    """capture → mutate → restore → score on one origin of the agent's profile."""

    connector = "browser"

    @pytest.fixture
    def shop_tab(self, profile: Path, shop_site: Any) -> Iterator[Any]:
        """An open tab at the shop site, seeded with cookies, both storages and IndexedDB."""
        page = seeded_tab(profile, shop_site)
        yield page
        for tab in browser_context(profile).pages:  # a restore may keep a session tab open
            if tab.url.startswith(shop_site.origin):
                tab.close()

    @pytest.fixture
    def target_uri(self, profile: Path, shop_site: Any, shop_tab: Any) -> str:
        """The shop origin of the agent's profile, sessionStorage included (its tab is open)."""
        return f"browser://{profile}?origin={shop_site.origin}"

    @pytest.fixture
    def mutate(self, profile: Path, shop_site: Any, shop_tab: Any) -> Callable[[str], None]:
        """Clear the site's data, then let the site write a little new state."""

        def damage(_uri: str) -> None:
            tab = session_tab(browser_context(profile), shop_site.origin)
            assert tab is not None
            clear_site_data(profile, tab)
            tab.evaluate("() => sessionStorage.setItem('fresh', 'tab state')")
            browser_context(profile).add_cookies([{
                "name": "consent", "value": "no", "domain": SHOP_HOST, "path": "/",
                "expires": 1_900_000_000, "sameSite": "Lax",
            }])

        return damage

    @pytest.fixture
    def observe(self, profile: Path, shop_site: Any, shop_tab: Any) -> Callable[[str], Observed]:
        """The shop origin read through Playwright's cookie jar and page JavaScript."""
        return observe_browser(lambda: browser_context(profile), shop_site.origin)

    @pytest.fixture
    def malformed_uris(self, profile: Path) -> list[str]:
        return ["browser://", f"browser://{profile}", f"browser://{profile}?origin=ftp://x"]

    @pytest.fixture
    def sub_scope(self, target_uri: str) -> str:
        """localStorage only; the cookies the mutation cleared stay cleared."""
        return f"{target_uri}#localStorage"

    @pytest.fixture
    def elsewhere_uri(self, tmp_path: Path, shop_site: Any) -> Iterator[str]:
        """Another profile that never visited the shop (its Chromium closed afterwards)."""
        prof = tmp_path / "elsewhere-profile"
        prof.mkdir()
        yield f"browser://{prof}?origin={shop_site.origin}"
        close_profile(prof)

    @pytest.fixture
    def absent_uri(self, tmp_path: Path, shop_site: Any) -> str:
        return f"browser://{tmp_path}/no-profile?origin={shop_site.origin}"
