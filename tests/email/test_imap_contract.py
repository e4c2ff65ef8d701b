"""The connector conformance kit, run against the IMAP connector and a real Dovecot."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from preimage.testing import ConnectorContract

from .conftest import Account, date_of, make_message, new_account

pytestmark = pytest.mark.imap


class TestImapConnectorContract(ConnectorContract):
    """capture → mutate → restore → score on a whole account."""

    connector = "imap"

    @pytest.fixture
    def observe(self, account: Account) -> Callable[[str], dict[str, dict[str, Any]]]:
        """The server over a plain IMAP session (imapclient, not the connector): every
        folder, and every message by folder and the sha256 of its bytes (and which copy)
        with its flags and INTERNALDATE; a folder URI: that folder (and those below it)."""

        def read(uri: str) -> dict[str, dict[str, Any]]:
            scope = unquote(urlsplit(uri).path.strip("/"))
            c = account.client()
            try:
                items: dict[str, dict[str, Any]] = {}
                for attributes, _sep, name in c.list_folders():
                    if scope and name != scope and not name.startswith(scope + "/"):
                        continue
                    if {b"\\Noselect", b"\\NonExistent"} & set(attributes):
                        continue  # a name in the hierarchy, not a folder
                    items[f"folder {name}"] = {"exists": True}
                    c.select_folder(name, readonly=True)
                    seen: dict[str, int] = {}
                    ids = c.search("ALL")
                    got = c.fetch(ids, ["FLAGS", "INTERNALDATE", "BODY.PEEK[]"]) if ids else {}
                    for data in got.values():
                        digest = hashlib.sha256(data[b"BODY[]"]).hexdigest()
                        seen[digest] = seen.get(digest, 0) + 1
                        flags = sorted(f.decode() if isinstance(f, bytes) else str(f)
                                       for f in data[b"FLAGS"] if f != b"\\Recent")
                        items[f"message {name} {digest} #{seen[digest]}"] = {
                            "flags": flags, "internaldate": data[b"INTERNALDATE"].isoformat()}
            finally:
                c.logout()
            return items

        return read

    @pytest.fixture
    def elsewhere_uri(self, account: Account) -> str:
        """Another, empty account on the same server."""
        return new_account(account.server).uri()

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
