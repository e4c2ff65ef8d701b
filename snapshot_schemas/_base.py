"""The base of every snapshot: fidelity classes, items and versioned snapshots.

Every field of every item belongs to one fidelity class, declared here in the
schema and nowhere else:

* ``content``  — the user's data (file bytes, row values, message bodies, specs);
* ``metadata`` — hard metadata a client can write back (modes, mtimes, flags, …);
* ``access``   — access times: a client can write them back, but anything that
  reads the restored state (an ``ls -R``, a checksum) moves them again, so they
  are scored apart and left out of ``restorable``;
* ``server``   — identity the server assigns and no client can set (inode, UID,
  ``resourceVersion``, OIDs, web-app ids).

Declare a field's class with :func:`content`, :func:`metadata`, :func:`access`
or :func:`server` (thin wrappers around :func:`pydantic.Field`).  A field that
is itself a model with declared fields takes its classes from that model; any
other field without a declaration is ``content``.  The fields that make up an
item's natural key are declared with :func:`key` and are not scored as leaves
(two items with the same key agree on it by definition).

The same declarations say how the meter reads a field (:func:`iter_leaves`):

* ``display=`` — how a person reads the value: ``"mode"`` (octal permission
  bits), ``"ns"`` (nanoseconds since the epoch), ``"unix"`` (seconds since the
  epoch); the meter's report prints them that way;
* ``reason=`` — why a ``server`` field cannot come back, in the system's own
  terms; the report prints it next to every difference in that field;
* ``unordered=True`` — a list whose order means nothing (flags, ACL entries):
  its members are compared as a set;
* ``keyed_by=(…)`` — a list of entries identified by some of their fields
  (index definitions by name): entries are compared by that key, never by
  position; lists of records whose model declares :func:`key` fields are keyed
  by them without saying so;
* ``derived=True`` — a count or digest of other items (a folder's message
  count, a table's row digest): kept so a diff that does not expand the
  items still sees a change, and left out where the items themselves are
  compared item by item (the conformance kit's merge check);
* ``keyed_lists={path: …}`` — the same for lists nested in a free-form value
  (a Kubernetes object): ``path`` names the list from the field (dict keys
  joined by ``.``, ``[]`` for "each entry of a list"), the value is the key
  fields or :data:`SET`.

Snapshots are frozen, forbid unknown fields, and carry ``schema_version``.  A
schema change is a new version plus a migration registered with
:func:`register_migration`, never an edit in place (how a field is *scored* —
its class, display, list matching — is not part of the stored document and
changes without one).
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, NamedTuple

from pydantic import BaseModel, ConfigDict, Field


class Fidelity(enum.StrEnum):
    """The class of a snapshot field."""

    CONTENT = "content"
    METADATA = "metadata"
    ACCESS = "access"
    SERVER = "server"


_KEY = "key"
#: A list compared as a set of its members (see ``unordered``).
SET = "set"
ListMatch = str | tuple[str, ...]


class FieldSpec(NamedTuple):
    """What the schema declares about one field (see the module docstring)."""

    fidelity: str | None
    display: str = ""
    reason: str = ""
    lists: Mapping[str, ListMatch] = {}
    derived: bool = False


def _field(
    cls: str,
    default: Any = ...,
    *,
    display: str = "",
    reason: str = "",
    unordered: bool = False,
    keyed_by: tuple[str, ...] = (),
    keyed_lists: Mapping[str, ListMatch] | None = None,
    derived: bool = False,
    **kwargs: Any,
) -> Any:
    extra = dict(kwargs.pop("json_schema_extra", None) or {})
    extra["fidelity"] = cls
    if derived:
        extra["derived"] = True
    if display:
        extra["display"] = display
    if reason:
        extra["reason"] = reason
    lists: dict[str, Any] = {k: (v if v == SET else list(v)) for k, v in (keyed_lists or {}).items()}
    if unordered:
        lists[""] = SET
    if keyed_by:
        lists[""] = list(keyed_by)
    if lists:
        extra["lists"] = lists
    return Field(default, json_schema_extra=extra, **kwargs)


def content(default: Any = ..., **kwargs: Any) -> Any:
    """A ``content``-class field."""
    return _field(Fidelity.CONTENT.value, default, **kwargs)


def metadata(default: Any = ..., **kwargs: Any) -> Any:
    """A ``metadata``-class field: hard metadata a client can write back."""
    return _field(Fidelity.METADATA.value, default, **kwargs)


def access(default: Any = ..., **kwargs: Any) -> Any:
    """An ``access``-class field: an access time, moved by anyone who reads the state."""
    return _field(Fidelity.ACCESS.value, default, **kwargs)


def server(default: Any = ..., **kwargs: Any) -> Any:
    """A ``server``-class field: identity only the server can assign (say why in ``reason``)."""
    return _field(Fidelity.SERVER.value, default, **kwargs)


def key(default: Any = ..., **kwargs: Any) -> Any:
    """A natural-key field: identifies the item, not scored as a leaf."""
    return _field(_KEY, default, **kwargs)


_SPECS: dict[tuple[type[Any], str], FieldSpec] = {}
_KEYS: dict[type[Any], list[str]] = {}


class Record(BaseModel):
    """A frozen model whose fields carry fidelity classes (nested parts of items)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def field_spec(cls, name: str) -> FieldSpec:
        """What the schema declares about field ``name``."""
        found = _SPECS.get((cls, name))
        if found is None:
            extra = cls.model_fields[name].json_schema_extra
            extra = extra if isinstance(extra, dict) else {}
            fidelity = extra.get("fidelity")
            raw_lists = extra.get("lists")
            lists: dict[str, ListMatch] = {}
            if isinstance(raw_lists, dict):
                for k, v in raw_lists.items():
                    lists[str(k)] = SET if v == SET else tuple(str(x) for x in v)  # type: ignore[union-attr]
            found = FieldSpec(
                str(fidelity) if fidelity is not None else None,
                str(extra.get("display", "")),
                str(extra.get("reason", "")),
                lists,
                bool(extra.get("derived", False)),
            )
            _SPECS[(cls, name)] = found
        return found

    @classmethod
    def field_class(cls, name: str) -> str | None:
        """The declared fidelity class of field ``name`` (``None`` if undeclared)."""
        return cls.field_spec(name).fidelity

    @classmethod
    def key_fields(cls) -> list[str]:
        """The fields declared with :func:`key`, in declaration order."""
        found = _KEYS.get(cls)
        if found is None:
            found = _KEYS[cls] = [n for n in cls.model_fields if cls.field_class(n) == _KEY]
        return list(found)

    def leaves(self, fidelity: str, path: str = "") -> Iterator[tuple[str, Leaf]]:
        """This record's scored leaves: each field under its declared class.

        Override it for a record whose classes are not per field (a Kubernetes
        object classes the leaves of one document by path).
        """
        cls = type(self)
        for name in cls.model_fields:
            spec = cls.field_spec(name)
            if spec.fidelity == _KEY:
                continue
            yield from iter_leaves(
                getattr(self, name),
                spec.fidelity or fidelity,
                child_path(path, name),
                display=spec.display,
                note=spec.reason,
                lists=spec.lists,
                derived=spec.derived,
            )


class Item(Record):
    """One addressable piece of captured state (a file, a table, a message, …)."""

    kind: str = key()

    def natural_key(self) -> str:
        """The key that matches this item across snapshots (path, table name, …)."""
        parts = [f"{name}={getattr(self, name)}" for name in type(self).key_fields()]
        return "|".join(parts)

    def label(self) -> str:
        """The item as a person names it: its kind and the rest of its key
        (``table public.orders``); items override it where a better name exists."""
        rest = [
            str(getattr(self, n))
            for n in type(self).key_fields()
            if n != "kind" and getattr(self, n) not in (None, "")
        ]
        return f"{self.kind} {'/'.join(rest)}".strip()


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
    #: Whether an item validated from its stored JSON text is the item validated from
    #: ``json.loads`` of it (no field that JSON mode would read otherwise, such as
    #: ``Any``): then the store reads a chunk of items in one pass of pydantic's own JSON
    #: parser instead of Python's and a validation per item.
    items_from_json_text: ClassVar[bool] = False
    schema_version: int = 1
    connector: str
    target: str
    captured_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    notes: list[str] = Field(default_factory=list)
    items: list[Any] = Field(default_factory=list)
    uncaptured: list[Uncaptured] = Field(default_factory=list)

    def _with_item_list(self) -> Snapshot:
        # A captured snapshot's items may be read back from the store as they are
        # used (preimage.store.documents.StoredItems); dumping needs them as a list.
        items = self.__dict__.get("items")
        if items is None or isinstance(items, list):
            return self
        return self.model_copy(update={"items": list(items)})

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        """As :meth:`pydantic.BaseModel.model_dump` (items read back when stored)."""
        return BaseModel.model_dump(self._with_item_list(), **kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:  # type: ignore[override]
        """As :meth:`pydantic.BaseModel.model_dump_json` (items read back when stored)."""
        return BaseModel.model_dump_json(self._with_item_list(), **kwargs)

    def scoring_items(self, blobs: Any | None = None) -> Iterator[Item]:
        """Items to score.  Snapshots that keep bulk data in blobs (table rows)
        override this to expand it; ``blobs`` is the store to read them from."""
        yield from self.items

    def server_note(self, item: Item, path: str) -> str:
        """Why the ``server`` leaf at ``path`` of ``item`` cannot come back, when the
        schema's ``reason=`` does not say (a snapshot whose reasons are data, such as a
        site adapter's, overrides it); ``""`` for the meter's generic note."""
        return ""

    @classmethod
    def item_order(cls) -> Callable[[Any], Any] | None:
        """The order its connector yields :meth:`scoring_items` in, when it promises one: a
        sort key that rises strictly from item to item, two items having equal keys exactly
        when they have equal natural keys.  Two snapshots with the same order are compared
        as two sorted streams (:mod:`preimage.similarity.streamed`), neither held whole; a
        stream found out of order is compared by natural key instead.  ``None`` (the
        default): no order is promised."""
        return None


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


class Leaf(NamedTuple):
    """One scored value: its class, the value, how to show it, and the schema's note."""

    fidelity: str
    value: Any
    display: str = ""
    note: str = ""
    derived: bool = False


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


def child_path(path: str, name: object) -> str:
    """``path`` extended by a field or map key: ``a.b``, or ``a["b/c"]`` when the key
    is not a plain name."""
    text = str(name)
    if _IDENTIFIER.match(text):
        return f"{path}.{text}" if path else text
    return f"{path}[{json.dumps(text, ensure_ascii=False)}]"


def entry_labels(
    values: list[Any] | tuple[Any, ...], match: ListMatch | None
) -> list[tuple[str, str]]:
    """How each entry of a list is named in a leaf path, and how it was matched:
    ``[0]`` by position, ``{member}`` in a set, ``[name="x"]`` by key (``#2`` on a
    repeated key)."""
    labels: list[tuple[str, str]] = []
    for i, v in enumerate(values):
        if match == SET and isinstance(v, str | int | float | bool):
            labels.append((f"{{{v}}}", "set"))
        elif isinstance(match, tuple) and isinstance(v, dict) and any(k in v for k in match):
            parts = [f"{k}={json.dumps(v[k], ensure_ascii=False)}" for k in match if k in v]
            labels.append((f"[{', '.join(parts)}]", "key"))
        elif isinstance(match, tuple) and isinstance(v, Record):
            parts = [
                f"{k}={json.dumps(getattr(v, k, None), ensure_ascii=False, default=str)}"
                for k in match
            ]
            labels.append((f"[{', '.join(parts)}]", "record"))
        elif isinstance(v, Record) and type(v).key_fields():
            parts = [
                f"{k}={json.dumps(getattr(v, k), ensure_ascii=False, default=str)}"
                for k in type(v).key_fields()
            ]
            labels.append((f"[{', '.join(parts)}]", "record"))
        else:
            labels.append((f"[{i}]", "position"))
    seen: dict[str, int] = {}
    out = []
    for label, how in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append((label if seen[label] == 1 else f"{label}#{seen[label]}", how))
    return out


def iter_leaves(
    value: Any,
    fidelity: str,
    path: str = "",
    *,
    display: str = "",
    note: str = "",
    lists: Mapping[str, ListMatch] | None = None,
    rel: str = "",
    derived: bool = False,
) -> Iterator[tuple[str, Leaf]]:
    """Flatten ``value`` into ``(path, leaf)`` pairs.

    Records contribute each field under the field's declared class (or the
    inherited one); dicts are walked by key; lists by position, or — when
    ``lists`` declares the list at ``rel`` (its path from the declaring field)
    — by key or as a set.  Everything else is a leaf.  Key fields, and the
    key fields of keyed entries, are skipped.  Empty containers are leaves of
    their own so that an empty directory or an empty label map still counts.
    """
    if isinstance(value, Record):
        yield from value.leaves(fidelity, path)
    elif isinstance(value, dict):
        if not value:
            yield path, Leaf(fidelity, {}, display, note, derived)
        for k in sorted(value, key=str):
            yield from iter_leaves(
                value[k], fidelity, child_path(path, k), display=display, note=note,
                lists=lists, rel=f"{rel}.{k}" if rel else str(k), derived=derived,
            )
    elif isinstance(value, list | tuple):
        if not value:
            yield path, Leaf(fidelity, [], display, note, derived)
            return
        match = lists.get(rel) if lists else None
        for (label, how), v in zip(entry_labels(value, match), value, strict=True):
            if how == "set":
                yield f"{path}{label}", Leaf(fidelity, True, "", note, derived)
                continue
            if how == "key":  # the key is in the path; its fields are not leaves again
                v = {k: x for k, x in v.items() if k not in match}  # type: ignore[operator]
            yield from iter_leaves(
                v, fidelity, f"{path}{label}", display=display, note=note,
                lists=lists, rel=f"{rel}[]", derived=derived,
            )
    else:
        yield path, Leaf(fidelity, value, display, note, derived)
