"""The connector conformance kit, run against the isso, Trac and copyparty site adapters and
the real apps."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest

from fixtures.copyparty import CopypartyServer
from fixtures.isso import IssoServer, seed_thread
from fixtures.trac import TracServer
from preimage.testing import ConnectorContract

from .conftest import moderator_deletes
from .observers import Observed, observe_copyparty, observe_isso, observe_trac

pytestmark = [pytest.mark.browser, pytest.mark.webapp]


class TestIssoAdapterContract(ConnectorContract):
    """capture → mutate → restore → score on one isso thread, through the agent's profile."""

    connector = "web+isso"

    @pytest.fixture
    def thread(self, isso_server: IssoServer, request: pytest.FixtureRequest) -> tuple[str, dict[str, int]]:
        """A thread of its own for each test: nested replies, authors, e-mails, votes, and
        two comments with the same author and text (told apart only by their order)."""
        name = f"/contract/{request.node.name}"
        ids = seed_thread(isso_server, name)
        for n, site in enumerate(("https://eve.example.org", "https://eve.example.net")):
            ids[f"same{n}"] = isso_server.post(name, "+1 from me", author="eve", website=site,
                                               title="Release notes")["id"]
        return name, ids

    @pytest.fixture
    def target_uri(
        self, isso_server: IssoServer, profile: Path, thread: tuple[str, dict[str, int]]
    ) -> str:
        """The thread, read through the profile's isso admin session."""
        return f"web+isso://127.0.0.1:{isso_server.port}{thread[0]}?profile={profile}"

    @pytest.fixture
    def mutate(
        self, isso_server: IssoServer, profile: Path, thread: tuple[str, dict[str, int]]
    ) -> Callable[[str], None]:
        """A moderator deletes a reply, a top-level comment and both "+1 from me"s; a spammer posts."""
        name, ids = thread

        def damage(_uri: str) -> None:
            moderator_deletes(isso_server, profile, name,
                              [ids["reply3"], ids["root2"], ids["same0"], ids["same1"]])
            isso_server.post(name, "Cheap watches at example.com", author="spam-bot",
                             addr="10.9.9.9")

        return damage

    @pytest.fixture
    def observe(self, isso_server: IssoServer) -> Callable[[str], Observed]:
        """The thread read from isso's own SQLite database."""
        return observe_isso(isso_server.db)

    @pytest.fixture
    def malformed_uris(self, isso_server: IssoServer, profile: Path) -> list[str]:
        return ["web+isso://", f"web+://127.0.0.1:{isso_server.port}/t?profile={profile}",
                f"web+no-such-adapter://127.0.0.1:{isso_server.port}/t?profile={profile}"]

    @pytest.fixture
    def sub_scope(self, target_uri: str, thread: tuple[str, dict[str, int]]) -> str:
        """The anonymous comment the moderator deleted; alice's deleted reply and the
        spam stay as they are."""
        return f"{target_uri}#{quote(thread[0] + ' anonymous')}"

    @pytest.fixture
    def absent_uri(self, isso_server: IssoServer, profile: Path,
                   request: pytest.FixtureRequest) -> str:
        return f"web+isso://127.0.0.1:{isso_server.port}/contract/none-{request.node.name}?profile={profile}"

    @pytest.fixture
    def create(self, isso_server: IssoServer) -> Callable[[str], None]:
        def make(uri: str) -> None:
            isso_server.post(uri.split("?", maxsplit=1)[0].split(str(isso_server.port), 1)[1], "First!",
                             author="zed")

        return make

    @pytest.fixture
    def unreachable_uri(self, dead_port: int, profile: Path) -> str:
        return f"web+isso://127.0.0.1:{dead_port}/t?profile={profile}"

    @pytest.fixture
    def elsewhere_uri(self, second_isso: tuple[IssoServer, Path]) -> str:
        """The same thread in another, empty isso, through that instance's own login."""
        srv, prof = second_isso
        return f"web+isso://127.0.0.1:{srv.port}/?profile={prof}"


class TestTracAdapterContract(ConnectorContract):
    """capture → mutate → restore → score on one Trac milestone and its tickets."""

    connector = "web+trac"

    @pytest.fixture
    def milestone(
        self, trac_server: TracServer, request: pytest.FixtureRequest
    ) -> tuple[str, list[int]]:
        """A milestone of its own for each test, with two tickets that have histories."""
        name = f"contract-{request.node.name.removeprefix('test_')[:40]}"
        ids = trac_server.seed({
            "milestones": [{"name": name, "description": "Contract *milestone*.",
                            "due": "2025-03-01T12:00:00Z"}],
            "tickets": [
                {"time": "2024-06-01T10:00:00Z",
                 "fields": {"summary": "Export to CSV", "reporter": "alice", "milestone": name,
                            "priority": "major", "keywords": "export", "status": "new"},
                 "changes": [{"author": "bob", "time": "2024-06-02T10:00:00.500000Z",
                              "comment": "Which columns?", "set": {"owner": "bob"}}]},
                {"time": "2024-06-03T10:00:00Z",
                 "fields": {"summary": "Typo on the login page", "reporter": "carol",
                            "milestone": name, "type": "defect", "status": "new"},
                 "changes": [{"author": "dave", "time": "2024-06-04T10:00:00Z",
                              "comment": "Fixed in the next build.",
                              "set": {"status": "closed", "resolution": "fixed"}}]},
            ]})
        return name, ids

    @pytest.fixture
    def target_uri(
        self, trac_server: TracServer, profile: Path, milestone: tuple[str, list[int]]
    ) -> str:
        """The milestone and its tickets, read through the profile's Trac login."""
        return (f"web+trac://127.0.0.1:{trac_server.port}/milestone/{milestone[0]}"
                f"?profile={profile}&env={trac_server.env}")

    @pytest.fixture
    def mutate(
        self, trac_server: TracServer, milestone: tuple[str, list[int]]
    ) -> Callable[[str], None]:
        """One ticket gets a new comment and priority, the other is deleted, a third is filed."""
        name, (first, second) = milestone

        def damage(_uri: str) -> None:
            trac_server.change_ticket(first, "mallory", "2024-07-01T09:00:00Z",
                                      "Not needed any more.", {"priority": "trivial"})
            trac_server.delete_ticket(second)
            trac_server.seed({"tickets": [
                {"time": "2024-07-02T09:00:00Z",
                 "fields": {"summary": "Spam", "reporter": "mallory", "milestone": name,
                            "status": "new"}}]})

        return damage

    @pytest.fixture
    def observe(self, trac_server: TracServer) -> Callable[[str], Observed]:
        """The milestone and its tickets read from Trac's own SQLite database."""
        return observe_trac(trac_server.env / "db" / "trac.db")

    @pytest.fixture
    def malformed_uris(self, trac_server: TracServer, profile: Path) -> list[str]:
        return ["web+trac://", f"web+trac://127.0.0.1:{trac_server.port}/milestone/x?profile="]

    @pytest.fixture
    def sub_scope(self, target_uri: str) -> str:
        """The deleted ticket (reported by carol); the changed one stays changed."""
        return f"{target_uri}#{quote('ticket:2024-06-03T10:00:00Z carol')}"

    @pytest.fixture
    def elsewhere_uri(self, second_trac: tuple[TracServer, Path]) -> str:
        """The milestone and its tickets in another, empty Trac, through its own login."""
        srv, prof = second_trac
        return f"web+trac://127.0.0.1:{srv.port}/?profile={prof}&env={srv.env}"

    @pytest.fixture
    def absent_uri(self, trac_server: TracServer, profile: Path) -> str:
        return (f"web+trac://127.0.0.1:{trac_server.port}/milestone/never-made"
                f"?profile={profile}&env={trac_server.env}")

    @pytest.fixture
    def create(self, trac_server: TracServer) -> Callable[[str], None]:
        return lambda _uri: trac_server.seed({"milestones": [{"name": "never-made"}]})

    @pytest.fixture
    def unreachable_uri(self, dead_port: int, profile: Path, trac_server: TracServer) -> str:
        return f"web+trac://127.0.0.1:{dead_port}/milestone/x?profile={profile}&env={trac_server.env}"


def _key(folder: str) -> str:
    """A share key made from a folder name (copyparty takes letters, digits, _ and -)."""
    return re.sub(r"[^0-9A-Za-z_-]", "", folder)


class TestCopypartyAdapterContract(ConnectorContract):
    """capture → mutate → restore → score on one copyparty folder, its versions and shares."""

    connector = "web+copyparty"

    @pytest.fixture
    def folder(self, copyparty: CopypartyServer, request: pytest.FixtureRequest) -> str:
        """A folder of its own for each test: nested folders, a binary file with its time,
        a text file with two old versions, an empty folder and two share links."""
        name = f"/contract-{request.node.name.removeprefix('test_')[:40]}"
        copyparty.seed({
            "folders": [f"{name}/empty"],
            "files": [
                {"path": f"{name}/notes.md", "text": "# final\n",
                 "versions": ["# draft 1\n", "# draft 2\n"]},
                {"path": f"{name}/img/logo.bin", "base64": "AAECA/7/", "mtime": 1700000000},
                {"path": f"{name}/img/readme.txt", "text": "logos\n", "mtime": 1600000000},
            ],
            "shares": [
                {"key": f"{_key(name)}-img", "paths": [f"{name}/img/"],
                 "minutes": 600},
                {"key": f"{_key(name)}-notes", "paths": [f"{name}/notes.md"]},
            ]})
        return name

    @pytest.fixture
    def target_uri(self, copyparty: CopypartyServer, cp_profile: Path, folder: str) -> str:
        """The folder, read through the profile's copyparty login."""
        return f"web+copyparty://127.0.0.1:{copyparty.port}{folder}/?profile={cp_profile}"

    @pytest.fixture
    def mutate(self, copyparty: CopypartyServer, folder: str) -> Callable[[str], None]:
        """The logo is deleted, the notes edited (one more old version), a share revoked and
        a file uploaded."""

        def damage(_uri: str) -> None:
            copyparty.delete(f"{folder}/img/logo.bin")
            copyparty.edit(f"{folder}/notes.md", "# vandalised\n")
            copyparty.request("POST", f"/?eshare=rm&skey={_key(folder)}-img")
            copyparty.put(f"{folder}/later.txt", "new\n")

        return damage

    @pytest.fixture
    def observe(self, copyparty: CopypartyServer) -> Callable[[str], Observed]:
        """The folder read from copyparty's volume on disk and its share database."""
        return observe_copyparty(copyparty.files, copyparty.state / "shares.db")

    @pytest.fixture
    def malformed_uris(self, copyparty: CopypartyServer, cp_profile: Path) -> list[str]:
        return ["web+copyparty://", f"web+copyparty://127.0.0.1:{copyparty.port}/x/?profile="]

    @pytest.fixture
    def sub_scope(self, target_uri: str, folder: str) -> str:
        """The image folder: the deleted logo comes back; the notes stay edited."""
        return f"{target_uri}#{quote(folder + '/img/')}"

    @pytest.fixture
    def absent_uri(self, copyparty: CopypartyServer, cp_profile: Path,
                   request: pytest.FixtureRequest) -> str:
        return (f"web+copyparty://127.0.0.1:{copyparty.port}/contract-none-"
                f"{request.node.name.removeprefix('test_')[:40]}/?profile={cp_profile}")

    @pytest.fixture
    def create(self, copyparty: CopypartyServer) -> Callable[[str], None]:
        def make(uri: str) -> None:
            copyparty.put(uri.split("?", 1)[0].split(str(copyparty.port), 1)[1] + "made.txt",
                          "made\n")

        return make

    @pytest.fixture
    def unreachable_uri(self, dead_port: int, cp_profile: Path) -> str:
        return f"web+copyparty://127.0.0.1:{dead_port}/x/?profile={cp_profile}"

    @pytest.fixture
    def elsewhere_uri(self, second_copyparty: tuple[CopypartyServer, Path]) -> str:
        """The same folder in another, empty copyparty, through that instance's own login."""
        srv, prof = second_copyparty
        return f"web+copyparty://127.0.0.1:{srv.port}/?profile={prof}"
