"""The connector conformance kit, run against the IMAP connector and a real Dovecot."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from preimage.testing import ConnectorContract

from .conftest import Account, date_of, make_message

pytestmark = pytest.mark.imap


class TestImapConnectorContract(ConnectorContract):
    """capture → mutate → restore → score on a whole account."""

    connector = "imap"
    observer_exempt = (
        "no independent observer written for it yet")

    @pytest.fixture
    def target_uri(self, account: Account) -> str:
        """An account with read, unread, flagged and labelled mail in nested and special-use folders."""
        account.seed({
            "INBOX": [
                (make_message(i), (["\\Seen"] if i % 2 else []) + (["$todo"] if i % 3 == 0 else []),
                 date_of(i))
                for i in range(1, 9)
            ],
            "Archive": [(make_message(20), ["\\Seen", "\\Flagged"], date_of(20))],
            "Projects/Alpha": [(make_message(21, message_id=None), [], date_of(21))],
        })
        return str(account.uri())

    @pytest.fixture
    def mutate(self, account: Account) -> Callable[[str], None]:
        """Mark all read, move half of INBOX to Trash, delete a folder, file a new message."""

        def damage(_uri: str) -> None:
            c = account.client()
            c.select_folder("INBOX")
            c.add_flags("1:*", ["\\Seen"], silent=True)
            c.move([1, 2, 3, 4], "Trash")
            c.delete_folder("Projects/Alpha")
            c.append("Archive", make_message(30), flags=["\\Seen"], msg_time=date_of(30))
            c.logout()

        return damage

    @pytest.fixture
    def malformed_uris(self, account: Account) -> list[str]:
        return [account.uri("INBOX", uids="4-7"), account.uri("INBOX", recursive="perhaps"),
                account.uri("INBOX", search=" ")]

    @pytest.fixture
    def sub_scope(self, target_uri: str) -> str:
        """Projects/Alpha, which the mutation deleted; INBOX stays as the agent left it."""
        return target_uri.rstrip("/") + "/Projects/Alpha"

    @pytest.fixture
    def absent_uri(self, account: Account) -> str:
        return account.uri("NotYet")

    @pytest.fixture
    def create(self, account: Account) -> Callable[[str], None]:
        def make(_uri: str) -> None:
            c = account.client()
            c.create_folder("NotYet")
            c.append("NotYet", make_message(40), msg_time=date_of(40))
            c.logout()

        return make

    @pytest.fixture
    def unreachable_uri(self, dead_port: int) -> str:
        return f"imap://alice@127.0.0.1:{dead_port}/INBOX"
