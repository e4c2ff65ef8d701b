"""The connector conformance kit, run against the isso site adapter and a real isso."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fixtures.isso import IssoServer, seed_thread
from preimage.testing import ConnectorContract

from .conftest import moderator_deletes

pytestmark = [pytest.mark.browser, pytest.mark.webapp]


class TestIssoAdapterContract(ConnectorContract):
    """capture → mutate → restore → score on one isso thread, through the agent's profile."""

    @pytest.fixture
    def thread(self, isso_server: IssoServer, request: pytest.FixtureRequest) -> tuple[str, dict[str, int]]:
        """A thread of its own for each test: nested replies, authors, e-mails, votes."""
        name = f"/contract/{request.node.name}"
        return name, seed_thread(isso_server, name)

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
        """A moderator deletes a reply and a top-level comment; a spammer posts one."""
        name, ids = thread

        def damage(_uri: str) -> None:
            moderator_deletes(isso_server, profile, name, [ids["reply3"], ids["root2"]])
            isso_server.post(name, "Cheap watches at example.com", author="spam-bot",
                             addr="10.9.9.9")

        return damage
