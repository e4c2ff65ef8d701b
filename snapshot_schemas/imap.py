"""Snapshot schema of the ``imap`` / ``imaps`` connector (v1).

One :class:`ImapFolder` per captured folder and one :class:`ImapMessage` per
captured message.  What is kept, by class:

* content  — the raw RFC 822 bytes of every message (``digest`` + ``size``,
  bytes in the blob store), which folders exist and whether they can hold
  messages, how many messages each folder holds;
* metadata — system flags (``\\Seen``, ``\\Answered``, ``\\Flagged``,
  ``\\Deleted``, ``\\Draft``), keywords (``$Forwarded``, ``$label1``, …),
  INTERNALDATE, the hierarchy separator, special-use attributes and
  subscriptions;
* server   — UID, MODSEQ, UIDVALIDITY, UIDNEXT and HIGHESTMODSEQ: the server
  assigns them and no client can set them, so a message put back by APPEND
  gets a new UID (reported as an ``IdRemap``).

``\\Recent`` is not kept: it belongs to one session and no client can set it.

A message's natural key is its folder plus its Message-ID (for a message
without one, ``sha256:`` and the digest of its bytes), plus ``copy_no``, which
numbers the messages sharing that folder and identity so that a duplicate
shows as an extra item.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from preimage.snapshot_schemas._base import (
    Item,
    Snapshot,
    content,
    key,
    metadata,
    register_snapshot_type,
    server,
)

Scope = Literal["account", "folder", "messages"]


class ImapFolder(Item):
    """One folder (mailbox) of the account."""

    kind: Literal["folder"] = key("folder")
    folder: str = key(description="the folder's name as the user sees it (decoded from UTF-7)")
    selectable: bool = content(True, description="False for \\Noselect hierarchy-only names")
    messages: int = content(
        0, description="number of messages captured in the folder", derived=True
    )
    separator: str | None = metadata(None, description="the hierarchy separator")
    special_use: list[str] = metadata(
        default_factory=list, description="RFC 6154 attributes (\\Trash, \\Sent, …), sorted",
        unordered=True,
    )
    subscribed: bool = metadata(False)
    uidvalidity: int | None = server(
        None, reason="the server picks UIDVALIDITY when it creates a folder"
    )
    uidnext: int | None = server(None, reason="the server counts UIDs up with every message")
    highestmodseq: int | None = server(
        None, description="only when the server has CONDSTORE",
        reason="the server counts MODSEQ up with every change",
    )

    def label(self) -> str:
        """``folder INBOX/Archive``."""
        return f"folder {self.folder}"


class ImapMessage(Item):
    """One message in one folder."""

    kind: Literal["message"] = key("message")
    folder: str = key()
    ident: str = key(
        description="the Message-ID header, or 'sha256:<digest>' for a message without one"
    )
    copy_no: int = key(
        0, description="0, 1, … among messages with the same folder and ident (by digest, date)"
    )
    digest: str = content(description="sha256 of the raw RFC 822 bytes (in the blob store)")
    size: int = content()
    flags: list[str] = metadata(
        default_factory=list, description="system flags, sorted, without \\Recent",
        unordered=True,
    )
    keywords: list[str] = metadata(
        default_factory=list, description="keywords, sorted", unordered=True
    )
    internaldate: str = metadata(description="INTERNALDATE, ISO 8601 in UTC")
    uid: int = server(reason="the server assigns a new UID to every message APPENDed or copied")
    modseq: int | None = server(
        None, description="only when the server has CONDSTORE",
        reason="the server counts MODSEQ up with every change",
    )

    def natural_key(self) -> str:
        """Folder, identity and copy number (as :meth:`Item.natural_key` spells it, but
        without walking the fields: restores compute it for every message)."""
        return f"kind=message|folder={self.folder}|ident={self.ident}|copy_no={self.copy_no}"

    def label(self) -> str:
        """``message <id@host> in INBOX`` (``, copy 2`` for a repeated copy)."""
        copy = f", copy {self.copy_no + 1}" if self.copy_no else ""
        return f"message {self.ident} in {self.folder}{copy}"

    @property
    def message_id(self) -> str | None:
        """The Message-ID header, if the message has one."""
        return None if self.ident.startswith("sha256:") else self.ident


ImapItem = Annotated[ImapFolder | ImapMessage, Field(discriminator="kind")]


@register_snapshot_type
class ImapSnapshot(Snapshot):
    """An account, a folder (optionally with its subfolders) or a set of messages."""

    schema_name: ClassVar[str] = "imap"
    schema_version: int = 1
    connector: str = "imap"
    account: str = Field(description="user@host:port")
    scope: Scope
    folder: str | None = Field(None, description="the target folder (folder and message scopes)")
    recursive: bool = False
    selection: list[str] = Field(
        default_factory=list, description="idents of the selected messages (message scope)"
    )
    separator: str | None = None
    capabilities: list[str] = Field(default_factory=list)
    watermarks: dict[str, tuple[int, int]] = Field(
        default_factory=dict,
        description="every selectable folder of the account → (UIDVALIDITY, UIDNEXT) at capture;"
        " a message at or above the mark arrived later (restore moves such copies back)",
    )
    items: list[ImapItem] = Field(default_factory=list)

    @property
    def folders(self) -> list[ImapFolder]:
        """The folder items."""
        return [i for i in self.items if isinstance(i, ImapFolder)]

    @property
    def messages(self) -> list[ImapMessage]:
        """The message items."""
        return [i for i in self.items if isinstance(i, ImapMessage)]
