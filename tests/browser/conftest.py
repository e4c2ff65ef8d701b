"""Session fixtures for the browser area: real Chromium, a real isso, a real Trac.

One Chromium per test session: every test uses the process-wide context of
the shared profile (``profile``), which is signed in to isso's admin page and
to Trac.  Servers are launched on free loopback ports in temp dirs and torn
down at the end.
"""

from __future__ import annotations

import http.server
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from preimage.connectors.browser.chromium import DEFAULT_CHROMIUM, browser_context, close_profile

from preimage import Store

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fixtures.isso import ADMIN_PASSWORD as ISSO_PASSWORD  # noqa: E402
from fixtures.isso import IssoServer  # noqa: E402
from fixtures.trac import ADMIN_PASSWORD as TRAC_PASSWORD  # noqa: E402
from fixtures.trac import ADMIN_USER as TRAC_USER  # noqa: E402
from fixtures.trac import TracServer  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def chromium() -> str:
    """The Chromium binary; fail (never skip) with the setup hint when it is missing."""
    path = os.environ.get("PREIMAGE_CHROMIUM") or DEFAULT_CHROMIUM
    if not shutil.which(path):
        pytest.fail(f"Chromium not found at {path}: run fixtures/setup.d/40-chromium.sh as root")
    return path


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    """A fresh backup store (PREIMAGE_HOME points at it for the CLI too)."""
    home = tmp_path / "preimage-home"
    monkeypatch.setenv("PREIMAGE_HOME", str(home))
    return Store(home)


class _Site(http.server.ThreadingHTTPServer):
    hits: int = 0


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # a page that sets cookies the way sites do
        assert isinstance(self.server, _Site)
        self.server.hits += 1
        body = b"<!doctype html><title>shop</title><p>hello</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Set-Cookie", "sid=s3cr3t; HttpOnly; Path=/; Max-Age=86400; SameSite=Strict")
        self.send_header("Set-Cookie", "cart=3; Path=/shop; Max-Age=3600; SameSite=Lax")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="session")
def shop_site() -> Iterator[_Site]:
    """A tiny loopback site that sets an httpOnly and a path-scoped cookie."""
    server = _Site(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def isso_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IssoServer]:
    """A real isso comment server (admin interface on, moderation off)."""
    srv = IssoServer(tmp_path_factory.mktemp("isso")).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def trac_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TracServer]:
    """A real Trac (tracd) with milestones and tickets that have authored, dated changes."""
    srv = TracServer(tmp_path_factory.mktemp("trac")).start()
    srv.seed()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def profile(
    tmp_path_factory: pytest.TempPathFactory, isso_server: IssoServer, trac_server: TracServer
) -> Iterator[Path]:
    """The agent's browser profile, signed in to isso's admin page and to Trac."""
    prof = tmp_path_factory.mktemp("profile")
    ctx = browser_context(prof, http_credentials={"username": TRAC_USER, "password": TRAC_PASSWORD})
    page = ctx.new_page()
    page.goto(isso_server.url + "/admin/")
    page.fill("input[type=password]", ISSO_PASSWORD)
    page.press("input[type=password]", "Enter")
    page.wait_for_selector("#isso-root", state="attached")
    page.goto(trac_server.url + "/login")
    page.close()
    assert {"admin-session", "trac_auth"} <= {c["name"] for c in ctx.cookies()}
    yield prof
    close_profile(prof)
