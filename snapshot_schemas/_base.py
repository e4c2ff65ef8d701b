"""The base of every snapshot: fidelity classes, items and versioned snapshots.

Every field of every item belongs to one fidelity class, declared here in the
schema and nowhere else:

* ``content``  — the user's data (file bytes, row values, message bodies, specs);
* ``metadata`` — hard metadata a client can write back (modes, mtimes, flags, …);
* ``server``   — identity the server assigns and no client can set (inode, UID,
  ``resourceVersion``, OIDs, web-app ids).

Declare a field's class with :func:`content`, :func:`metadata` or
:func:`server` (thin wrappers around :func:`pydantic.Field`).  A field that is
itself a model with declared fields takes its classes from that model; any
other field without a declaration is ``content``.  The fields that make up an
item's natural key are declared with :func:`key` and are not scored as leaves
(two items with the same key agree on it by definition).

Snapshots are frozen, forbid unknown fields, and carry ``schema_version``.  A
schema change is a new version plus a migration registered with
:func:`register_migration`, never an edit in place.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field


class Fidelity(enum.StrEnum):
    """The class of a snapshot field."""

    CONTENT = "content"
    METADATA = "metadata"
    SERVER = "server"


_KEY = "key"


def _field(cls: str, default: Any = ..., **kwargs: Any) -> Any:
    extra = dict(kwargs.pop("json_schema_extra", None) or {})
    extra["fidelity"] = cls
    return Field(default, json_schema_extra=extra, **kwargs)


def content(default: Any = ..., **kwargs: Any) -> Any:
    """A ``content``-class field."""
    return _field(Fidelity.CONTENT.value, default, **kwargs)


def metadata(default: Any = ..., **kwargs: Any) -> Any:
    """A ``metadata``-class field: hard metadata a client can write back."""
    return _field(Fidelity.METADATA.value, default, **kwargs)


def server(default: Any = ..., **kwargs: Any) -> Any:
    """A ``server``-class field: identity only the server can assign."""
    return _field(Fidelity.SERVER.value, default, **kwargs)


def key(default: Any = ..., **kwargs: Any) -> Any:
    """A natural-key field: identifies the item, not scored as a leaf."""
    return _field(_KEY, default, **kwargs)


class Record(BaseModel):
    """A frozen model whose fields carry fidelity classes (nested parts of items)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def field_class(cls, name: str) -> str | None:
        """The declared fidelity class of field ``name`` (``None`` if undeclared)."""
        info = cls.model_fields[name]
        extra = info.json_schema_extra
        if isinstance(extra, dict):
            value = extra.get("fidelity")
            return str(value) if value is not None else None
        return None


class Item(Record):
    """One addressable piece of captured state (a file, a table, a message, …)."""

    kind: str = key()

    def natural_key(self) -> str:
        """The key that matches this item across snapshots (path, table name, …)."""
        parts = [
            f"{name}={getattr(self, name)}"
            for name in type(self).model_fields
            if type(self).field_class(name) == _KEY
        ]
        return "|".join(parts)


class Uncaptured(Record):
    """Something inside the target's scope that the capture did not read.

    A connector that meets state it cannot (or may not) read — an object kind
    it does not model, a file over the size cap, a resource RBAC forbids —
    records it here instead of leaving it out silently.  The meter counts every
    entry as an original leaf no restore can match, so a snapshot with
    uncaptured state never scores 1.0, and ``diff`` names it.
    """

    name: str                               # what it is: "public.median(numeric)", "big.iso"
    kind: str                               # the kind of object or entry: "aggregate", "file"
    reason: str                             # why it was not read, and what to do about it
    fidelity: str = Fidelity.CONTENT.value  # the class the unread state belongs to

    def label(self) -> str:
        """``kind name`` as a person reads it."""
        return f"{self.kind} {self.name}"


class Snapshot(BaseModel):
    """A versioned, frozen record of one target's state at one moment.

    ``uncaptured`` lists what lies in the target's scope but was not read
    (see :class:`Uncaptured`); it is additive and defaults to empty, so
    documents written before it existed load unchanged.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_name: ClassVar[str] = "base"
    schema_version: int = 1
    connector: str
    target: str
    captured_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    notes: list[str] = Field(default_factory=list)
    items: list[Any] = Field(default_factory=list)
    uncaptured: list[Uncaptured] = Field(default_factory=list)

    def scoring_items(self, blobs: Any | None = None) -> Iterator[Item]:
        """Items to score.  Snapshots that keep bulk data in blobs (table rows)
        override this to expand it; ``blobs`` is the store to read them from."""
        yield from self.items


# ---------------------------------------------------------------- registry
_SNAPSHOT_TYPES: dict[str, type[Snapshot]] = {}
_MIGRATIONS: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {}


def register_snapshot_type(cls: type[Snapshot]) -> type[Snapshot]:
    """Class decorator: make ``cls`` loadable by its ``schema_name``."""
    _SNAPSHOT_TYPES[cls.schema_name] = cls
    return cls


Migration = Callable[[dict[str, Any]], dict[str, Any]]


def register_migration(schema_name: str, from_version: int) -> Callable[[Migration], Migration]:
    """Decorator: a function that turns a ``from_version`` document into the next version."""

    def deco(fn: Migration) -> Migration:
        _MIGRATIONS[(schema_name, from_version)] = fn
        return fn

    return deco


def snapshot_types() -> dict[str, type[Snapshot]]:
    """Every registered snapshot schema by name."""
    return dict(_SNAPSHOT_TYPES)


def load_snapshot(document: dict[str, Any], cls: type[Snapshot]) -> Snapshot:
    """Validate a stored snapshot document as ``cls``, migrating old versions forward."""
    schema_name = cls.schema_name
    current = int(cls.model_fields["schema_version"].default)
    version = int(document.get("schema_version", 1))
    while version < current:
        migrate = _MIGRATIONS.get((schema_name, version))
        if migrate is None:
            raise ValueError(f"no migration for {schema_name} v{version} → v{version + 1}")
        document = migrate(document)
        version = int(document.get("schema_version", version + 1))
    if version > current:
        raise ValueError(
            f"{schema_name} snapshot is v{version}, newer than this preimage (v{current}); "
            "upgrade preimage to read it"
        )
    return cls.model_validate(document)


def iter_leaves(
    value: Any, fidelity: str, path: str = ""
) -> Iterable[tuple[str, str, Any]]:
    """Flatten ``value`` into ``(path, fidelity, leaf)`` triples.

    Models contribute each field under the field's declared class (or the
    inherited one); dicts and lists are walked; everything else is a leaf.
    Key fields are skipped.  Empty containers are leaves of their own so that
    an empty directory or an empty label map still counts.
    """
    if isinstance(value, Record):
        cls = type(value)
        for name in cls.model_fields:
            declared = cls.field_class(name)
            if declared == _KEY:
                continue
            yield from iter_leaves(
                getattr(value, name), declared or fidelity, f"{path}.{name}" if path else name
            )
    elif isinstance(value, dict):
        if not value:
            yield path, fidelity, {}
        for k in sorted(value, key=str):
            yield from iter_leaves(value[k], fidelity, f"{path}[{k!r}]")
    elif isinstance(value, list | tuple):
        if not value:
            yield path, fidelity, []
        for i, v in enumerate(value):
            yield from iter_leaves(v, fidelity, f"{path}[{i}]")
    else:
        yield path, fidelity, value
