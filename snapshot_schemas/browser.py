"""Snapshot schema of the ``browser`` connector (v1): one origin's client-side state.

What is kept, by class:

* content  — cookie values, localStorage and sessionStorage values, IndexedDB
  record values (in blobs, one blob per object store);
* metadata — cookie attributes (httpOnly, secure, sameSite, expiry), database
  versions, object-store key paths, auto-increment flags and key-generator
  positions, index definitions;
* key      — cookie name/domain/path/partition key, storage origin and name,
  database/store names, record keys.

Nothing in a browser profile is server-assigned, so there is no ``server``
class here: everything captured can be written back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from preimage.snapshot_schemas._base import (
    Item,
    Record,
    Snapshot,
    content,
    key,
    metadata,
    register_snapshot_type,
)

SameSite = Literal["Strict", "Lax", "None"]


class CookieEntry(Item):
    """One cookie visible to the origin (its domain matches the origin's host)."""

    kind: Literal["cookie"] = key("cookie")
    name: str = key()
    domain: str = key()
    path: str = key("/")
    partition_key: str | None = key(None, description="top-level site of a partitioned cookie")
    value: str = content()
    expires: float = metadata(
        -1, description="Unix seconds; -1 for a session cookie", display="unix"
    )
    http_only: bool = metadata(False)
    secure: bool = metadata(False)
    same_site: SameSite = metadata("Lax")


class StorageEntry(Item):
    """One localStorage or sessionStorage entry of the origin."""

    kind: Literal["localStorage", "sessionStorage"] = key()
    origin: str = key()
    name: str = key()
    value: str = content()


class IndexSpec(Record):
    """An IndexedDB index of an object store."""

    name: str = metadata()
    key_path: Any = metadata(description="string, list of strings")
    unique: bool = metadata(False)
    multi_entry: bool = metadata(False)


class IdbDatabase(Item):
    """An IndexedDB database of the origin."""

    kind: Literal["idb-database"] = key("idb-database")
    origin: str = key()
    name: str = key()
    version: int = metadata()


class IdbStore(Item):
    """An object store: its definition here, its records in a blob."""

    kind: Literal["idb-store"] = key("idb-store")
    origin: str = key()
    database: str = key()
    name: str = key()
    key_path: Any = metadata(None, description="None (out-of-line keys), a string or a list")
    auto_increment: bool = metadata(False)
    next_key: int | None = metadata(
        None, description="the key generator's next number (auto-increment stores)"
    )
    indexes: list[IndexSpec] = metadata(default_factory=list, keyed_by=("name",))
    records: int = content(0, description="number of records", derived=True)
    digest: str | None = content(
        None,
        derived=True,
        description="blob of the records: JSON lines [key, value] in the tagged encoding "
        "of preimage.connectors.browser.idb; expanded into IdbRecord items for scoring",
    )


class IdbRecord(Item):
    """One IndexedDB record (a scoring item expanded from a store's blob)."""

    kind: Literal["idb-record"] = key("idb-record")
    origin: str = key()
    database: str = key()
    store: str = key()
    record_key: str = key(description="the record key in the tagged JSON encoding")
    value: Any = content()


BrowserItem = Annotated[
    CookieEntry | StorageEntry | IdbDatabase | IdbStore, Field(discriminator="kind")
]


@register_snapshot_type
class BrowserSnapshot(Snapshot):
    """Cookies, localStorage, sessionStorage and IndexedDB of one origin in one profile."""

    schema_name: ClassVar[str] = "browser"
    schema_version: int = 1
    connector: str = "browser"
    profile: str = Field(description="absolute path of the browser profile directory")
    origin: str = Field(description="scheme://host[:port] whose state this is")
    session_tab: bool = Field(
        False, description="whether a live tab at the origin supplied sessionStorage"
    )
    items: list[BrowserItem] = Field(default_factory=list)

    def scoring_items(self, blobs: Any | None = None) -> Iterator[Item]:
        """Every item, with each object store's records expanded from its blob."""
        for item in self.items:
            yield item
            if isinstance(item, IdbStore) and item.digest and blobs is not None:
                raw = blobs.get_bytes(item.digest)
                for line in raw.decode().splitlines():
                    rec_key, value = json.loads(line)
                    yield IdbRecord(
                        origin=item.origin,
                        database=item.database,
                        store=item.name,
                        record_key=json.dumps(rec_key, sort_keys=True),
                        value=value,
                    )
