"""The file-sharing app of the browser tasks: copyparty, read and restored by ``web+copyparty``.

copyparty is the test launcher's server (``fixtures/copyparty.py``), started
once per benchmark run — or one that launcher started in another process (a
test run's), attached to when ``PREIMAGE_BENCH_COPYPARTY`` holds its URL.
Every run seeds a folder of its own (``/RUN/``) and share links whose keys
start with the run's name, and removes them at the end, so a shared server
stays small.  The server also holds a colleague's share (another account's,
``/colleague/``), so the admin profile can show it sees every account's shares.

``setup.copyparty`` is the launcher's seed spec (``folders``, ``files`` with
``versions``, ``shares``, ``moves``) with ``{run}`` and the other variables
filled in.  Variables: ``{files_url}``, ``{team}`` (``/RUN``), ``{files_uri}``
(``web+copyparty://host:port``; add the path and ``?profile={profile}``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar

from preimage.bench.systems.base import Sandbox, load_fixture
from preimage.bench.systems.web import WebSystem, attach_launcher


def _filled(value: Any, sandbox: Sandbox) -> Any:
    if isinstance(value, str):
        return sandbox.fill(value)
    if isinstance(value, list):
        return [_filled(v, sandbox) for v in value]
    if isinstance(value, dict):
        return {k: _filled(v, sandbox) for k, v in value.items()}
    return value


class CopypartySystem(WebSystem):
    """copyparty; each run seeds its own folder and shares, the profile signed in as admin."""

    name: ClassVar[str] = "copyparty"
    schemes: ClassVar[tuple[str, ...]] = ("file", "browser", "web+copyparty")

    def __init__(self) -> None:
        super().__init__()
        self.server: Any = None
        self.fixture: Any = None

    def start(self, workdir: Path) -> None:
        """Attach to the launcher's copyparty at ``$PREIMAGE_BENCH_COPYPARTY`` or start one."""
        self.fixture = load_fixture("copyparty.py")
        workdir.mkdir(parents=True, exist_ok=True)
        given = os.environ.get("PREIMAGE_BENCH_COPYPARTY")
        self.server = (attach_launcher(self.fixture.CopypartyServer.attach, given,
                                       workdir / "copyparty")
                       if given else self.fixture.CopypartyServer(workdir / "copyparty").start())
        # a colleague's share, which only the share admin sees: it shows the admin
        # profile's captures that they see every account's shares (else they say not)
        self.server.seed_colleague()

    def stop(self) -> None:
        """Stop copyparty."""
        if self.server is not None:
            self.server.stop()
            self.server = None

    def prepare(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """The site's URL, the run's folder and the target prefix."""
        super().prepare(setup, sandbox)
        sandbox.variables.update(
            files_url=self.server.url, team="/" + sandbox.variables["run"],
            files_uri=f"web+copyparty://127.0.0.1:{self.server.port}",
        )

    def seed_system(self, setup: dict[str, Any], sandbox: Sandbox) -> None:
        """Seed the run's folders, files, versions and shares; sign the profile in."""
        self.server.seed(_filled(setup.get("copyparty") or {}, sandbox))
        self.fixture.sign_in(self.page(sandbox), self.server.url)

    def teardown(self, sandbox: Sandbox) -> None:
        """Remove the run's folder and its share links from the shared server."""
        run = sandbox.variables.get("run")
        if run and self.server is not None:
            self.server.request("POST", f"/{run}?delete")
            _, page = self.server.request("GET", "/?shares")
            for key in sorted(set(_share_keys(page.decode(errors="replace")))):
                if key.startswith(run):
                    self.server.request("POST", f"/?eshare=rm&skey={key}")
        super().teardown(sandbox)

    def sites(self, sandbox: Sandbox) -> dict[str, str]:
        """copyparty's origin is read through the copyparty adapter."""
        return {self.server.url: "copyparty"}


def _share_keys(page: str) -> list[str]:
    """The share keys on copyparty's ``/?shares`` page (each row's delete link names one)."""
    return re.findall(r'<a href="#" k="([0-9A-Za-z_-]+)"', page)

