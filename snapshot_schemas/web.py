"""Snapshot schema of the ``web+<adapter>`` connector (v1): records of a web application.

A site adapter (``preimage.connectors.web``) reads an application's records —
comments, tickets, milestones — and sorts every field of a record into one of
three maps, whose class is declared here:

* ``content``  — what the users wrote: comment text, ticket summary and
  description, the record a comment replies to (by natural key, not by id);
* ``metadata`` — what the application lets a client or an admin channel write
  back: author names and e-mail addresses, ticket reporter and times when the
  adapter's channel can set them, labels;
* ``server``   — what only the application assigns: record ids, creation
  times it stamps itself, vote counts.  ``server_reasons`` says, per field,
  why a client cannot set it; restore reports repeat it.

Records are matched across snapshots by ``(kind, name)``, the adapter's
natural key, so a re-created comment with a new id is still the same comment.
"""

from __future__ import annotations

from typing import Any, ClassVar

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


class WebRecord(Item):
    """One application record, its fields sorted by fidelity class by the adapter."""

    kind: str = key(description="the adapter's record type: comment, ticket, milestone, …")
    name: str = key(description="natural key: stable across re-creation, unlike the id")
    content: dict[str, Any] = content(default_factory=dict)
    metadata: dict[str, Any] = metadata(default_factory=dict)
    server: dict[str, Any] = server(default_factory=dict)

    def label(self) -> str:
        """:attr:`ref` — ``comment:<name>``, as restore reports name records."""
        return self.ref

    @property
    def ref(self) -> str:
        """``kind:name``: how other records point at this one."""
        return f"{self.kind}:{self.name}"


@register_snapshot_type
class WebSnapshot(Snapshot):
    """The records under one URL of a web application, read through a site adapter."""

    schema_name: ClassVar[str] = "web"
    schema_version: int = 1
    connector: str = "web"
    adapter: str = Field(description="site adapter name (the part after 'web+')")
    base_url: str = Field(description="the application's base URL, e.g. http://127.0.0.1:8080")
    location: str = Field(description="the path under the application the records belong to")
    server_reasons: dict[str, str] = Field(
        default_factory=dict,
        description="'kind.field' → why a client cannot set that server-class field",
    )
    items: list[WebRecord] = Field(default_factory=list)

    def server_note(self, item: Item, path: str) -> str:
        """The adapter's own reason for a server field (``server_reasons``)."""
        field = path.removeprefix("server.").split(".", 1)[0].split("[", 1)[0]
        return self.server_reasons.get(f"{item.kind}.{field}", "")
