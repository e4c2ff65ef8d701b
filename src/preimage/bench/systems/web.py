"""Browser-driven systems: client-side storage, the isso comment server, Trac.

All three drive one Chromium profile per scenario run through the same
process-wide context the ``browser`` and ``web+`` connectors use, so the
agent's tab, preimage's captures and restores share a browser as they would
in the agent's process.  MCP calls are Playwright MCP tools, executed the way
the Playwright MCP server does: ``browser_navigate {url}`` goes to a URL in
the run's tab, ``browser_evaluate {function}`` runs the function in the
page, ``browser_click {element}`` clicks — the system says what its
scenarios' clicks press (Trac: the confirm button of the page's delete
form).

The backup layer is configured as a user of the Playwright MCP server would
configure it: the server's profile directory, and each app's origin mapped to
its site adapter (``sites``).

isso and Trac are the test launchers' servers (``fixtures/isso.py``,
``fixtures/trac.py``), started once per benchmark run — or servers those
launchers started in another process (a test run's), attached to when
``PREIMAGE_BENCH_ISSO`` holds isso's URL and ``PREIMAGE_BENCH_TRAC`` and
``PREIMAGE_BENCH_TRAC_ENV`` tracd's URL and the environment it serves.  Every
run seeds records of its own (named after the run), so a shared server is
fine.
"""

from __future__ import annotations

import http.server
import os
import re
import threading
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlencode

from preimage.bench.systems.base import CallOutcome, Sandbox, System, load_fixture
from preimage.interface.errors import UsageError

BROWSER_TOOLS = ("browser_navigate", "browser_evaluate", "browser_click")


class WebSystem(System):
    """A Chromium profile per run and the Playwright MCP executor."""

    name: ClassVar[str] = "browser"
    schemes: ClassVar[tuple[str, ...]] = ("file", "browser")
    files_only: ClassVar[bool] = False

    def __init__(self) -> None:
        self.pages: dict[str, Any] = {}
        self._saved_profile: str | None = None

    # ------------------------------------------------------------ browser
    def credentials(self) -> dict[str, Any]:
        """Options of the profile's browser context (HTTP logins)."""
        return {}

    def context(self, sandbox: Sandbox) -> Any:
        """The run profile's browser context (shared with the connectors in this process)."""
        from preimage.connectors.browser.chromium import browser_context

        return browser_context(Path(sandbox.variables["profile"]), **self.credentials())

    def page(self, sandbox: Sandbox) -> Any:
        """The agent's tab for this run."""
        run = sandbox.variables["run"]
        page = self.pages.get(run)
        if page is None or page.is_closed():
            page = self.context(sandbox).new_page()
            self.pages[run] = page
        return page

    def prepare(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """``{profile}``: the run's Chromium profile directory.

        It is also ``PREIMAGE_BROWSER_PROFILE`` for the run — what a user of a
        browser agent sets so that ``web+`` targets read with the agent's logins.
        """
        profile = str(sandbox.root / "profile")
        sandbox.variables["profile"] = profile
        sandbox.env["PREIMAGE_BROWSER_PROFILE"] = profile
        self._saved_profile = os.environ.get("PREIMAGE_BROWSER_PROFILE")
        os.environ["PREIMAGE_BROWSER_PROFILE"] = profile

    def teardown(self, sandbox: Sandbox) -> None:
        """Close the run's tab and profile."""
        from preimage.connectors.browser.chromium import close_profile

        if self._saved_profile is None:
            os.environ.pop("PREIMAGE_BROWSER_PROFILE", None)
        else:
            os.environ["PREIMAGE_BROWSER_PROFILE"] = self._saved_profile
        page = self.pages.pop(sandbox.variables.get("run", ""), None)
        if page is not None and not page.is_closed():
            page.close()
        if sandbox.variables.get("profile"):
            close_profile(Path(sandbox.variables["profile"]))

    def yield_to_harness(self, sandbox: Sandbox) -> None:
        """Close the run's tab and let go of the profile: through a real harness the
        Playwright MCP server opens it (its logins were saved to disk when it closed), and
        this process reaches that browser over the DevTools protocol when it looks."""
        from preimage.connectors.browser.chromium import close_profile

        page = self.pages.pop(sandbox.variables.get("run", ""), None)
        if page is not None and not page.is_closed():
            page.close()
        close_profile(Path(sandbox.variables["profile"]))

    # ------------------------------------------------------------ MCP
    def run_mcp(
        self, server: str, tool: str, arguments: dict[str, Any], sandbox: Sandbox
    ) -> CallOutcome:
        """Playwright MCP: navigate, evaluate, click in the run's tab."""
        if tool not in BROWSER_TOOLS:
            return super().run_mcp(server, tool, arguments, sandbox)
        page = self.page(sandbox)
        try:
            if tool == "browser_navigate":
                # Like the MCP server, answer once the page has settled: the browser's own
                # follow-up requests (the favicon) may set cookies too.  Like it too, a page
                # that does not settle in time is answered anyway (@playwright/mcp waits for
                # the load at most 10 s and ignores running over).
                from playwright.sync_api import TimeoutError as PlaywrightTimeout

                page.goto(str(arguments["url"]))
                try:
                    page.wait_for_load_state("networkidle", timeout=10_000)
                except PlaywrightTimeout:
                    pass
                return CallOutcome(0, page.url)
            if tool == "browser_evaluate":
                result = page.evaluate(str(arguments["function"]))
                return CallOutcome(0, repr(result)[:500])
            self.click(page, arguments, sandbox)
            return CallOutcome(0, page.url)
        except Exception as exc:  # what the MCP server would answer the agent
            return CallOutcome(1, f"{type(exc).__name__}: {exc}"[:500])

    def click(self, page: Any, arguments: dict[str, Any], sandbox: Sandbox) -> None:
        """Press what the element names; systems say what their scenarios' clicks press."""
        page.get_by_text(str(arguments.get("element", ""))).first.click()

    def layer_settings(self, sandbox: Sandbox) -> dict[str, Any]:
        """The Playwright MCP server's profile, and the sites with their adapters."""
        profile = sandbox.variables["profile"]
        return {
            "mcp": {"playwright": {"kind": "browser", "profile": profile}},
            "browser_profile": profile,
            "sites": self.sites(sandbox),
        }

    def sites(self, sandbox: Sandbox) -> dict[str, str]:
        """Origin → site adapter name."""
        return {}


def attach_launcher(attach: Any, *args: Any) -> Any:
    """A launcher's ``attach`` (a server of the launcher's, running in another process);
    its refusal as a one-line :class:`UsageError`."""
    try:
        return attach(*args)
    except RuntimeError as exc:
        raise UsageError(str(exc)) from exc


# ---------------------------------------------------------------- plain storage
class _Shop(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # a page that sets cookies the way sites do
        body = b"<!doctype html><title>shop</title><p>hello</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Set-Cookie", "sid=s3cr3t; HttpOnly; Path=/; Max-Age=86400; SameSite=Strict")
        self.send_header("Set-Cookie", "cart=3; Path=/; Max-Age=3600; SameSite=Lax")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


SEED_STORAGE = """async () => {
  localStorage.setItem('theme', 'dark'); localStorage.setItem('unicode', 'żółw 🐢');
  localStorage.setItem('cart', JSON.stringify({items: [3, 14], coupon: 'SPRING'}));
  sessionStorage.setItem('draft', 'half-written reply');
  document.cookie = 'js_pref=compact; max-age=7200; samesite=strict; path=/';
  await new Promise((ok, bad) => {
    const open = indexedDB.open('app', 3);
    open.onupgradeneeded = () => {
      const db = open.result;
      const notes = db.createObjectStore('notes', {keyPath: 'id', autoIncrement: true});
      notes.createIndex('by_tag', 'tag', {unique: false});
      db.createObjectStore('kv');
    };
    open.onsuccess = () => {
      const db = open.result;
      const tx = db.transaction(['notes', 'kv'], 'readwrite');
      const notes = tx.objectStore('notes');
      notes.add({tag: 'todo', text: 'renew passport', at: new Date(Date.UTC(2025, 0, 2))});
      notes.add({tag: 'idea', text: 'offline mode', votes: 7});
      notes.add({tag: 'todo', text: 'call the bank'});
      tx.objectStore('kv').put(new Map([['a', 1]]), 'settings');
      tx.oncomplete = () => { db.close(); ok(); };
      tx.onerror = () => bad(tx.error);
    };
    open.onerror = () => bad(open.error);
  });
}"""


class BrowserStorageSystem(WebSystem):
    """Cookies, Web Storage and IndexedDB of a small local site in the run's profile.

    ``setup.browser.seed`` is a JavaScript function run in the site's page
    (default: two storages, a script cookie, an IndexedDB database with an
    index and a key generator); the site itself sets an httpOnly cookie.
    Variables: ``{site_url}``, ``{site_port}``, ``{profile}``, ``{browser_uri}``.
    """

    name: ClassVar[str] = "browser"

    def __init__(self) -> None:
        super().__init__()
        self.server: http.server.ThreadingHTTPServer | None = None

    def start(self, workdir: Path) -> None:
        """Serve the little site on a free loopback port."""
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Shop)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Stop the site and the browser."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def prepare(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """The site's URL and the ``browser://`` target of the profile."""
        super().prepare(setup, sandbox)
        assert self.server is not None
        port = self.server.server_address[1]
        url = f"http://127.0.0.1:{port}"
        sandbox.variables.update(
            site_port=str(port), site_url=url,
            browser_uri=f"browser://{sandbox.variables['profile']}?origin={url}",
        )

    def seed_system(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """Open the site in the agent's tab and let it store its data."""
        page = self.page(sandbox)
        page.goto(sandbox.variables["site_url"] + "/")
        page.evaluate(str((setup.get("browser") or {}).get("seed", SEED_STORAGE)))


# ---------------------------------------------------------------- isso
class IssoSystem(WebSystem):
    """The isso comment server; one thread per run, the profile signed in as admin.

    ``setup.isso.thread`` names the thread (seeded with the launcher's
    ``seed_thread``: nesting, authors, e-mails, websites, votes);
    ``setup.isso.threads`` names several, and ``setup.isso.spammer``
    (``author``, ``email``, ``website``, ``comments``) adds that many comments
    of one more commenter to each of them, the first one answered by another.
    Variables: ``{isso_url}``, ``{thread}``, ``{isso_uri}`` (the
    ``web+isso://`` target of the first thread), ``{isso_site}``
    (``web+isso://host:port``), ``{profile}``.
    """

    name: ClassVar[str] = "isso"
    schemes: ClassVar[tuple[str, ...]] = ("file", "browser", "web+isso")

    def __init__(self) -> None:
        super().__init__()
        self.server: Any = None
        self.fixture: Any = None

    def start(self, workdir: Path) -> None:
        """Attach to the launcher's isso at ``$PREIMAGE_BENCH_ISSO`` or start one in its own
        directory."""
        self.fixture = load_fixture("isso.py")
        workdir.mkdir(parents=True, exist_ok=True)
        given = os.environ.get("PREIMAGE_BENCH_ISSO")
        self.server = (attach_launcher(self.fixture.IssoServer.attach, given, workdir / "isso")
                       if given else self.fixture.IssoServer(workdir / "isso").start())

    def stop(self) -> None:
        """Stop isso."""
        if self.server is not None:
            self.server.stop()
            self.server = None

    def prepare(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """The threads and their target URIs."""
        super().prepare(setup, sandbox)
        spec = setup.get("isso") or {}
        named = spec.get("threads") or [spec.get("thread", "/post/{run}")]
        threads = [sandbox.fill(str(t)) for t in named]
        site = f"web+isso://127.0.0.1:{self.server.port}"
        sandbox.variables.update(
            isso_url=self.server.url, thread=threads[0], threads="\n".join(threads), isso_site=site,
            isso_uri=f"{site}{threads[0]}?profile={sandbox.variables['profile']}",
        )

    def seed_system(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """Seed the threads (and the spammer's comments); sign the profile in to isso's admin page."""
        spammer = (setup.get("isso") or {}).get("spammer")
        for n, thread in enumerate(sandbox.variables["threads"].split("\n")):
            self.fixture.seed_thread(self.server, thread)
            if spammer:
                self._seed_spammer(thread, n, spammer)
        page = self.page(sandbox)
        page.goto(self.server.url + "/admin/")
        page.fill("input[type=password]", self.fixture.ADMIN_PASSWORD)
        page.press("input[type=password]", "Enter")
        page.wait_for_selector("#isso-root", state="attached")

    def _seed_spammer(self, thread: str, n: int, spammer: dict[str, Any]) -> None:
        who = {k: spammer.get(k) for k in ("author", "email", "website")}
        first = None
        for i in range(int(spammer.get("comments", 3))):
            got = self.server.post(thread, f"Cheap watches, thread {n}, offer {i}: visit my site!",
                                   title="Release notes", addr=f"10.9.{n}.{i + 1}", **who)
            first = first or got["id"]
        if first is not None:  # someone answered the spammer: deleting leaves a placeholder
            self.server.post(thread, "Please stop posting this here.", author="erin",
                             email="erin@example.org", parent=first, title="Release notes",
                             addr="10.1.0.9")

    def sites(self, sandbox: Sandbox) -> dict[str, str]:
        """isso's origin is read through the isso adapter."""
        return {self.server.url: "isso"}


# ---------------------------------------------------------------- Trac
def _git_worktree(path: Path, branches: dict[str, int]) -> None:
    """A git repository at ``path`` whose branches (the first is the default) each carry
    that many commits of their own, made from the default branch's tip."""
    import subprocess

    path.mkdir(parents=True, exist_ok=True)
    names = list(branches)

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(path), "-c", "user.name=dev",
                        "-c", "user.email=dev@forge.example", *args],
                       check=True, capture_output=True)

    git("init", "-q", "-b", names[0])
    for name in names:
        if name != names[0]:
            git("checkout", "-q", "-b", name, names[0])
        for k in range(branches[name]):
            (path / f"{name}.txt").write_text(f"{name} {k}\n")
            git("add", "-A")
            git("commit", "-q", "-m", f"{name}: step {k}")
    git("checkout", "-q", names[0])



class TracSystem(WebSystem):
    """Trac (tracd); each run seeds its own milestone and tickets, the profile signed in.

    ``setup.trac`` is the launcher's seed spec (``milestones``, ``tickets``
    with dated, authored changes); the first ticket's number is ``{ticket}``, the
    next ones' ``{ticket2}``, ``{ticket3}`` ….
    Variables: ``{trac_url}``, ``{trac_uri}`` (``web+trac://host:port``; add
    the path and ``?profile={profile}&env={trac_env}``), ``{trac_env}``.
    A click presses the confirm button of the page's delete form, as a
    browser agent confirming "Delete" does.
    """

    name: ClassVar[str] = "trac"
    schemes: ClassVar[tuple[str, ...]] = ("file", "browser", "web+trac")

    def __init__(self) -> None:
        super().__init__()
        self.server: Any = None
        self.fixture: Any = None

    def start(self, workdir: Path) -> None:
        """Attach to the launcher's tracd at ``$PREIMAGE_BENCH_TRAC`` (its environment:
        ``$PREIMAGE_BENCH_TRAC_ENV``) or create an environment and start tracd."""
        self.fixture = load_fixture("trac.py")
        workdir.mkdir(parents=True, exist_ok=True)
        given = os.environ.get("PREIMAGE_BENCH_TRAC")
        if not given:
            self.server = self.fixture.TracServer(workdir / "trac").start()
            return
        env = os.environ.get("PREIMAGE_BENCH_TRAC_ENV")
        if not env:
            raise UsageError("PREIMAGE_BENCH_TRAC names a running tracd: set "
                             "PREIMAGE_BENCH_TRAC_ENV to the environment it serves too")
        self.server = attach_launcher(self.fixture.TracServer.attach, given, Path(env),
                                      workdir / "trac")

    def stop(self) -> None:
        """Stop tracd."""
        if self.server is not None:
            self.server.stop()
            self.server = None

    def credentials(self) -> dict[str, Any]:
        """Trac's HTTP digest login."""
        return {"http_credentials": {"username": self.fixture.ADMIN_USER,
                                     "password": self.fixture.ADMIN_PASSWORD}}

    def prepare(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """The site's URL, the environment and the target prefix."""
        super().prepare(setup, sandbox)
        sandbox.variables.update(
            trac_url=self.server.url, trac_env=str(self.server.env),
            trac_uri=f"web+trac://127.0.0.1:{self.server.port}",
        )

    def seed_system(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """Seed milestones, tickets, wiki pages and repositories (a repository with a
        ``worktree`` and ``branches`` — name → commits of its own — is built with git
        first); sign the profile in."""
        spec = (setup.get("trac") or {})
        repos = []
        for repo in spec.get("repositories", []):
            if repo.get("worktree"):
                _git_worktree(Path(repo["worktree"]), repo.get("branches") or {"main": 1})
                repo = {k: v for k, v in repo.items() if k not in ("worktree", "branches")} | {
                    "dir": str(Path(repo["worktree"]) / ".git")}
            repos.append(repo)
        ids = self.server.seed({k: v for k, v in spec.items()
                                if k in ("milestones", "tickets", "wiki")} | {"repositories": repos})
        for n, tid in enumerate(ids, 1):
            sandbox.variables["ticket" if n == 1 else f"ticket{n}"] = str(tid)
        page = self.page(sandbox)
        page.goto(self.server.url + "/login")

    def click(self, page: Any, arguments: dict[str, Any], sandbox: Sandbox) -> None:
        """Confirm the delete form of the page the agent is on."""
        form = page.locator("form#delete-confirm input[type=submit]")
        if not form.count():
            raise UsageError(f"no delete form on {page.url} — navigate to ?action=delete first")
        wanted = [b for b in form.all() if re.search(r"delete", b.get_attribute("value") or "", re.I)]
        (wanted[0] if wanted else form.first).click()
        page.wait_for_load_state()

    def sites(self, sandbox: Sandbox) -> dict[str, str]:
        """Trac's origin is read through the trac adapter, which writes through its environment."""
        return {self.server.url: "trac?" + urlencode({"env": str(self.server.env)})}
