"""Session fixtures for the browser area: real Chromium, a real isso, a real Trac, a real
copyparty.

Everything expensive starts once per session: isso, Trac (created and seeded
through one long-lived Trac process), a tiny cookie-setting site, and one
Chromium for the agent's profile (``profile``), signed in to isso's admin page
and to Trac.  Tests seed what they need cheaply (a new isso thread, a few Trac
tickets) and never share records.

The CLI tests run ``python -m preimage`` as subprocesses.  A profile directory
can be open in one Chromium at a time, so they read and write through a second
profile (``cli_profile``), signed in once at the start and kept open with remote
debugging on, so that every CLI process attaches to that one browser, while the
agent's destructive actions go through ``profile`` as before.

Servers listen on free loopback ports in temp dirs and are torn down at the end;
isso and Trac are defined in tests/conftest.py, as the benchmark tests use them too.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from preimage import Store
from preimage.connectors.browser.chromium import DEFAULT_CHROMIUM, browser_context, close_profile

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fixtures.copyparty import MEMBER_PASSWORD as COPYPARTY_MEMBER_PASSWORD  # noqa: E402
from fixtures.copyparty import CopypartyServer  # noqa: E402
from fixtures.copyparty import sign_in as copyparty_sign_in  # noqa: E402
from fixtures.isso import ADMIN_PASSWORD as ISSO_PASSWORD  # noqa: E402
from fixtures.isso import IssoServer  # noqa: E402
from fixtures.trac import ADMIN_PASSWORD as TRAC_PASSWORD  # noqa: E402
from fixtures.trac import ADMIN_USER as TRAC_USER  # noqa: E402
from fixtures.trac import TracServer  # noqa: E402

# The cookie-setting site listens on its own loopback address: cookies are kept per
# host (not per port), and the profile's isso and Trac logins live on 127.0.0.1.
SHOP_HOST = "127.0.0.2"


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
    daemon_threads = False  # handler threads are tracked, so settle() can wait for them

    @property
    def origin(self) -> str:
        return f"http://{SHOP_HOST}:{self.server_port}"

    def settle(self) -> int:
        """Every request that reached the site so far, counted — call it once nothing can
        send any more (the browser closed).  A fence request is accepted after every
        earlier connection, then every handler thread is waited for."""
        with urllib.request.urlopen(f"{self.origin}/fence", timeout=60) as answer:
            answer.read()
        for thread in list(getattr(self, "_threads", []) or []):
            thread.join(timeout=60)
        return self.hits


class _Handler(http.server.BaseHTTPRequestHandler):
    # A connection the browser opens ahead and never sends on (Chromium preconnects) ends
    # after this many idle seconds: the server's close waits for every handler thread,
    # and the session's browser, torn down after the site, still holds such sockets.
    timeout = 5

    def do_GET(self) -> None:  # sets cookies on every answer (favicon too), as many sites do
        assert isinstance(self.server, _Site)
        if self.path == "/fence":  # the test's own request (see _Site.settle)
            self.send_response(204)
            self.end_headers()
            return
        self.server.hits += 1
        body = b"<!doctype html><title>shop</title><p>hello</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Set-Cookie", "sid=s3cr3t; HttpOnly; Path=/; Max-Age=86400; SameSite=Strict")
        self.send_header("Set-Cookie", "cart=3; Path=/shop; Max-Age=3600; SameSite=Lax")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:   # the idle timeout's "Request timed out" too
        pass


@pytest.fixture(scope="session")
def shop_site() -> Iterator[_Site]:
    """A tiny loopback site that sets an httpOnly and a path-scoped cookie."""
    server = _Site((SHOP_HOST, 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def sign_in(ctx: Any, isso: IssoServer, trac: TracServer) -> None:
    """Sign the profile of ``ctx`` in to isso's admin page and to Trac."""
    page = ctx.new_page()
    page.goto(isso.url + "/admin/")
    page.fill("input[type=password]", ISSO_PASSWORD)
    page.press("input[type=password]", "Enter")
    page.wait_for_selector("#isso-root", state="attached")
    page.goto(trac.url + "/login")
    page.close()
    assert {"admin-session", "trac_auth"} <= {c["name"] for c in ctx.cookies()}


@pytest.fixture(scope="session")
def cli_profile(
    tmp_path_factory: pytest.TempPathFactory, isso_server: IssoServer, trac_server: TracServer
) -> Iterator[Path]:
    """A profile signed in to isso's admin page and to Trac, open in a Chromium with remote
    debugging on: the CLI processes attach to that browser (as they would to a user's)
    instead of each starting one."""
    prof = tmp_path_factory.mktemp("cli-profile")
    ctx = browser_context(prof, http_credentials={"username": TRAC_USER, "password": TRAC_PASSWORD},
                          args=["--remote-debugging-port=0"])
    sign_in(ctx, isso_server, trac_server)
    yield prof
    close_profile(prof)


@pytest.fixture(scope="session")
def profile(
    tmp_path_factory: pytest.TempPathFactory,
    isso_server: IssoServer,
    trac_server: TracServer,
) -> Iterator[Path]:
    """The agent's browser profile, signed in to isso's admin page and to Trac."""
    prof = tmp_path_factory.mktemp("profile")
    ctx = browser_context(prof, http_credentials={"username": TRAC_USER, "password": TRAC_PASSWORD})
    sign_in(ctx, isso_server, trac_server)
    yield prof
    close_profile(prof)


@pytest.fixture
def second_isso(tmp_path: Path) -> Iterator[tuple[IssoServer, Path]]:
    """Another isso with an empty database of its own, and a profile signed in to its
    admin page only (a restore elsewhere writes there through that login)."""
    srv = IssoServer(tmp_path / "isso-2").start()
    prof = tmp_path / "profile-isso-2"
    prof.mkdir()
    page = browser_context(prof).new_page()
    page.goto(srv.url + "/admin/")
    page.fill("input[type=password]", ISSO_PASSWORD)
    page.press("input[type=password]", "Enter")
    page.wait_for_selector("#isso-root", state="attached")
    page.close()
    try:
        yield srv, prof
    finally:
        close_profile(prof)
        srv.stop()


@pytest.fixture
def second_trac(tmp_path: Path) -> Iterator[tuple[TracServer, Path]]:
    """Another Trac with an empty environment, and a profile logged in to it only (the
    session's profile keeps its own Trac login: the two share a host, so one cookie)."""
    srv = TracServer(tmp_path / "trac-2").start()
    prof = tmp_path / "profile-trac-2"
    prof.mkdir()
    ctx = browser_context(prof, http_credentials={"username": TRAC_USER,
                                                  "password": TRAC_PASSWORD})
    page = ctx.new_page()
    page.goto(srv.url + "/login")
    page.close()
    try:
        yield srv, prof
    finally:
        close_profile(prof)
        srv.stop()


@pytest.fixture(scope="session")
def copyparty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CopypartyServer]:
    """A real copyparty with share links, old versions and the upload index on, and a
    colleague's share (another account's) that only the share admin sees."""
    srv = CopypartyServer(tmp_path_factory.mktemp("copyparty")).start()
    srv.seed_colleague()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def cp_profile(tmp_path_factory: pytest.TempPathFactory,
               copyparty: CopypartyServer) -> Iterator[Path]:
    """A browser profile signed in to copyparty as its admin (a profile of its own: the
    agent's profile holds Trac's HTTP login for the same host)."""
    prof = tmp_path_factory.mktemp("cp-profile")
    page = browser_context(prof).new_page()
    copyparty_sign_in(page, copyparty.url)
    page.close()
    yield prof
    close_profile(prof)


@pytest.fixture(scope="session")
def cp_member_profile(tmp_path_factory: pytest.TempPathFactory,
                      copyparty: CopypartyServer) -> Iterator[Path]:
    """A browser profile signed in to copyparty as ``member``, who is not the share admin."""
    prof = tmp_path_factory.mktemp("cp-member-profile")
    page = browser_context(prof).new_page()
    copyparty_sign_in(page, copyparty.url, COPYPARTY_MEMBER_PASSWORD)
    page.close()
    yield prof
    close_profile(prof)


@pytest.fixture
def second_copyparty(tmp_path: Path) -> Iterator[tuple[CopypartyServer, Path]]:
    """Another copyparty with no files, and a profile signed in to it only."""
    srv = CopypartyServer(tmp_path / "copyparty-2").start()
    prof = tmp_path / "profile-copyparty-2"
    prof.mkdir()
    page = browser_context(prof).new_page()
    copyparty_sign_in(page, srv.url)
    page.close()
    try:
        yield srv, prof
    finally:
        close_profile(prof)
        srv.stop()


@pytest.fixture(scope="session")
def unsigned_profile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A browser profile that never signed in anywhere (its Chromium closes at the end)."""
    prof = tmp_path_factory.mktemp("unsigned-profile")
    yield prof
    close_profile(prof)


# ---------------------------------------------------------------- the CLI
CliRunner = Callable[..., Any]


@pytest.fixture
def preimage_cli(store: Store) -> CliRunner:
    """Run ``python -m preimage ARGS… --json`` against the test's store; return the JSON.

    Fails the test with the command's stderr when it exits non-zero.
    """

    def run(*args: str) -> Any:
        env = dict(os.environ, PREIMAGE_HOME=str(store.home))
        proc = subprocess.run([sys.executable, "-m", "preimage", *args, "--json"],
                              env=env, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            pytest.fail(f"preimage {' '.join(args)} exited {proc.returncode}:\n"
                        f"{proc.stderr[-3000:]}\n{proc.stdout[-3000:]}")
        return json.loads(proc.stdout)

    return run


# ---------------------------------------------------------------- site data
# What a web app keeps in the browser: both storages, a script-set cookie, and an
# IndexedDB database with indexes, typed values and a key generator past a deleted key.
SEED_JS = """async () => {
  await new Promise((ok) => { const r = indexedDB.deleteDatabase('app'); r.onsuccess = ok; });
  localStorage.clear(); sessionStorage.clear();
  localStorage.setItem('theme', 'dark'); localStorage.setItem('unicode', 'żółw 🐢');
  sessionStorage.setItem('draft', 'half-written reply');
  document.cookie = 'js_pref=compact; max-age=7200; samesite=strict; path=/';
  const open = indexedDB.open('app', 3);
  open.onupgradeneeded = () => {
    const db = open.result;
    const notes = db.createObjectStore('notes', {keyPath: 'id', autoIncrement: true});
    notes.createIndex('by_tag', 'tags', {multiEntry: true});
    notes.createIndex('by_slug', 'slug', {unique: true});
    db.createObjectStore('blobs');
  };
  const db = await new Promise((ok) => { open.onsuccess = () => ok(open.result); });
  const tx = db.transaction(['notes', 'blobs'], 'readwrite');
  const notes = tx.objectStore('notes');
  notes.add({slug: 'a', tags: ['x', 'y'], when: new Date(86400000), n: NaN, big: 2n ** 70n,
             m: new Map([[1, 'one']]), s: new Set(['p']), re: /ab+c/gi, nested: {deep: [1, null]}});
  notes.add({slug: 'b', bytes: new Uint8Array([0, 255, 7]), neg0: -0, inf: -Infinity});
  notes.add({slug: 'c', gone: true});
  const blobs = tx.objectStore('blobs');
  blobs.put(new Blob(['hello blob'], {type: 'text/plain'}), [1, 'compound']);
  blobs.put(new ArrayBuffer(4), new Date(5));
  await new Promise((ok) => { tx.oncomplete = ok; });
  const tx2 = db.transaction('notes', 'readwrite');
  tx2.objectStore('notes').delete(3);  // the key generator stays at 4
  await new Promise((ok) => { tx2.oncomplete = ok; });
  db.close();
}"""

CLEAR_JS = """async () => {
  localStorage.clear(); sessionStorage.clear();
  for (const d of await indexedDB.databases())
    await new Promise((ok) => { const r = indexedDB.deleteDatabase(d.name); r.onsuccess = ok; });
  localStorage.setItem('after', 'clear');
}"""


def visit(page: Any, site: Any) -> None:
    """Open the shop's page and wait until the browser's follow-up requests (the favicon,
    which sets cookies too) are answered, so later cookie changes do not race with them."""
    page.goto(site.origin + "/", wait_until="networkidle")


def seeded_tab(profile: Path, site: Any) -> Any:
    """A tab at the shop site (which sets its cookies) with SEED_JS's data; any older
    data of that origin is gone first."""
    ctx = browser_context(profile)
    ctx.clear_cookies(domain=SHOP_HOST)
    page = ctx.new_page()
    visit(page, site)
    page.evaluate(SEED_JS)
    return page


def clear_site_data(profile: Path, page: Any) -> None:
    """What "clear site data" does: storages, databases and the host's cookies go."""
    page.evaluate(CLEAR_JS)
    browser_context(profile).clear_cookies(domain=SHOP_HOST)


# ---------------------------------------------------------------- what agents do
def moderator_deletes(server: IssoServer, profile: Path, thread: str, ids: list[int]) -> None:
    """What a moderator agent does: isso's admin delete action, in the browser."""
    page = browser_context(profile).new_page()
    for cid in ids:
        page.goto(f"{server.url}/admin/?comment_search_url=http://x{thread}%23isso-{cid}")
        onclick = page.get_attribute(f"#send-edit-btn-{cid}", "onclick") or ""
        key = re.search(r"'([^']+)'", onclick)
        assert key is not None
        status = page.evaluate(
            "async (u) => (await fetch(u, {method: 'POST', headers: {'Content-Type': "
            "'application/json'}, body: '{}'})).status",
            f"{server.url}/id/{cid}/delete/{key.group(1)}",
        )
        assert status == 200
    page.close()


def trac_agent_confirms_delete(server: TracServer, profile: Path, path: str, button: str) -> None:
    """What a browser agent does in Trac: open the delete page and press the button."""
    page = browser_context(profile).new_page()
    page.goto(f"{server.url}{path}?action=delete")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.click(f"form#delete-confirm {button}")
    assert answer.value.status < 400, f"Trac refused the delete: HTTP {answer.value.status}"
    page.wait_for_load_state()
    page.close()
