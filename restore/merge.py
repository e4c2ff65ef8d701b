"""Three-way merge of one item's values: base (before a call), theirs (after it), live (now).

The merge walks a value the way the meter reads it
(:func:`preimage.snapshot_schemas.iter_leaves`): records field by field, each
field in its declared fidelity class, maps key by key, lists as the schema
declares them (as sets, by key, else by position).  At every node:

* the call did not change it (base ≡ theirs) → live stands;
* nobody changed it since the call (theirs ≡ live) → base comes back;
* it is already as before the call (base ≡ live) → live stands;
* otherwise, containers are merged member by member; a set is merged as a
  set (what the call added is taken out, what it removed is put back, what
  anyone else did stays) and never conflicts; a scalar, or a list whose
  length changed on both sides, is a **conflict**: both versions are
  recorded and live stands.

``≡`` compares only restorable leaves (``content`` and ``metadata``): a
``server`` or ``access`` field is never a reason to write or to conflict, and
the merge keeps its live value.  A path the caller calls *soft* (derived from
other state, like a directory's mtime or a table's row digest) never
conflicts: it follows the rules above and keeps live when both changed it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from preimage.snapshot_schemas import SET, Fidelity, Record, child_path, iter_leaves
from preimage.snapshot_schemas._base import ListMatch

__all__ = ["MISSING", "Conflict", "Merger", "restorable_leaves", "same"]

_RESTORABLE = frozenset({Fidelity.CONTENT.value, Fidelity.METADATA.value})
_KEY = "key"


class _Missing:
    """An absent map key, keyed-list entry or item."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()

Lists = Mapping[str, ListMatch]


def restorable_leaves(
    value: Any, fidelity: str = Fidelity.CONTENT.value, lists: Lists | None = None,
    rel: str = "",
) -> list[tuple[str, str, Any]]:
    """``(path, type name, value)`` of every restorable leaf of ``value``, by path
    (so a set or a keyed list compares regardless of order)."""
    if value is MISSING:
        return [("", "MISSING", None)]
    leaves = [
        (path, type(leaf.value).__name__, leaf.value)
        for path, leaf in iter_leaves(value, fidelity, lists=lists, rel=rel)
        if leaf.fidelity in _RESTORABLE
    ]
    leaves.sort(key=lambda x: x[0])
    return leaves


def same(a: Any, b: Any, fidelity: str = Fidelity.CONTENT.value,
         lists: Lists | None = None, rel: str = "") -> bool:
    """Whether ``a`` and ``b`` agree on every restorable leaf (type and value)."""
    if a is MISSING or b is MISSING:
        return a is b
    if fidelity not in _RESTORABLE and not isinstance(a, Record):
        return True
    if isinstance(a, str | int | float | bool | None) and isinstance(
            b, str | int | float | bool | None):
        return type(a) is type(b) and a == b
    return restorable_leaves(a, fidelity, lists, rel) == restorable_leaves(b, fidelity, lists, rel)


def _shown(value: Any) -> Any:
    """A value as a report shows it (records and containers as JSON-able data)."""
    if value is MISSING:
        return None
    if isinstance(value, Record):
        return value.model_dump(mode="json")
    if isinstance(value, str) and len(value) > 200:
        return value[:200] + f"… ({len(value)} chars)"
    if isinstance(value, tuple):
        return list(value)
    return value


@dataclass(frozen=True)
class Conflict:
    """A leaf (or subtree) both the call and someone after it changed, differently.

    ``base`` is what an undo would write back, ``theirs`` what the call wrote,
    ``live`` what is there now (``None`` where the value is absent).
    """

    path: str
    base: Any
    theirs: Any
    live: Any
    reason: str = "changed by the call and changed again since"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view."""
        return {"path": self.path, "base": self.base, "theirs": self.theirs, "live": self.live,
                "reason": self.reason}


@dataclass
class Merger:
    """One three-way merge: collects the conflicts it meets.

    ``soft(path)`` names derived paths that keep live instead of conflicting.
    """

    soft: Callable[[str], bool] = lambda path: False
    conflicts: list[Conflict] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # paths the merge took from base

    def conflict(self, path: str, b: Any, t: Any, now: Any, reason: str = "") -> Any:
        self.conflicts.append(Conflict(path or "(whole item)", _shown(b), _shown(t), _shown(now),
                                       reason or Conflict.reason))
        return now

    # ------------------------------------------------------------ entry points
    def record(self, b: Record, t: Record, now: Record, path: str = "") -> Record:
        """Merge three versions of one record, field by field (key fields keep live)."""
        cls = type(now)
        updates: dict[str, Any] = {}
        for name in cls.model_fields:
            spec = cls.field_spec(name)
            if spec.fidelity == _KEY:
                continue
            fidelity = spec.fidelity or Fidelity.CONTENT.value
            new = self.value(getattr(b, name), getattr(t, name), getattr(now, name), fidelity,
                             child_path(path, name), spec.lists)
            if new is not getattr(now, name):
                updates[name] = new
        return now.model_copy(update=updates) if updates else now

    def value(self, b: Any, t: Any, now: Any, fidelity: str, path: str,
              lists: Lists | None = None, rel: str = "") -> Any:
        """Merge three versions of the value at ``path`` (``MISSING`` where absent);
        ``lists`` says how lists are matched, by their ``rel`` path from the field
        that declares them (see :func:`~preimage.snapshot_schemas.iter_leaves`)."""
        if fidelity not in _RESTORABLE and not isinstance(now, Record):
            return now
        if same(b, t, fidelity, lists, rel):
            return now
        if same(t, now, fidelity, lists, rel):
            self.changed.append(path)
            return b
        if same(b, now, fidelity, lists, rel):
            return now
        if self.soft(path):
            return now
        if b is MISSING or t is MISSING or now is MISSING:
            return self.conflict(path, b, t, now)
        if isinstance(now, Record) and type(b) is type(now) and type(t) is type(now):
            return self.record(b, t, now, path)
        if isinstance(b, dict) and isinstance(t, dict) and isinstance(now, dict):
            return self._map(b, t, now, fidelity, path, lists, rel)
        if isinstance(b, list | tuple) and isinstance(t, list | tuple) and isinstance(
                now, list | tuple):
            merged = self._list(list(b), list(t), list(now), fidelity, path, lists, rel)
            return tuple(merged) if isinstance(now, tuple) else merged
        return self.conflict(path, b, t, now)

    # ------------------------------------------------------------ containers
    def _map(self, b: dict[Any, Any], t: dict[Any, Any], now: dict[Any, Any], fidelity: str,
             path: str, lists: Lists | None, rel: str) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        keys = list(now) + [k for k in b if k not in now]
        keys += [k for k in t if k not in now and k not in b]
        for k in keys:
            sub = f"{rel}.{k}" if rel else str(k)
            got = self.value(b.get(k, MISSING), t.get(k, MISSING), now.get(k, MISSING), fidelity,
                             child_path(path, k), lists, sub)
            if got is not MISSING:
                out[k] = got
        return out

    def _list(self, b: list[Any], t: list[Any], now: list[Any], fidelity: str, path: str,
              lists: Lists | None, rel: str) -> list[Any]:
        how = lists.get(rel) if lists else None
        sub = f"{rel}[]"
        if how == SET and all(_hashable(v) for v in (*b, *t, *now)):
            added = [v for v in t if v not in b]
            removed = [v for v in b if v not in t]
            out = [v for v in now if v not in added]
            out += [v for v in removed if v not in out]
            if out != now:
                self.changed.append(path)
            return out
        keyer = _keyer(how, b + t + now)
        if keyer is not None:
            kb, kt, kl = ({keyer(v): v for v in side} for side in (b, t, now))
            if len(kb) == len(b) and len(kt) == len(t) and len(kl) == len(now):
                order = list(kl) + [k for k in kb if k not in kl] + [
                    k for k in kt if k not in kl and k not in kb]
                merged = []
                for k in order:
                    got = self.value(kb.get(k, MISSING), kt.get(k, MISSING), kl.get(k, MISSING),
                                     fidelity, f"{path}[{k}]", lists, sub)
                    if got is not MISSING:
                        merged.append(got)
                return merged
        if len(b) == len(t) == len(now):
            return [self.value(x, y, z, fidelity, f"{path}[{i}]", lists, sub)
                    for i, (x, y, z) in enumerate(zip(b, t, now, strict=True))]
        return self.conflict(path, b, t, now, "a list both sides changed in length")  # type: ignore[no-any-return]


def _hashable(v: Any) -> bool:
    return isinstance(v, str | int | float | bool | None)


def _keyer(how: ListMatch | None, entries: list[Any]) -> Callable[[Any], str] | None:
    """How entries of a keyed list are identified (``None``: by position)."""
    if isinstance(how, tuple) and how:
        fields = how
        if all(isinstance(v, dict) for v in entries):
            return lambda v: "|".join(repr(v.get(f)) for f in fields)
        if all(isinstance(v, Record) for v in entries):
            return lambda v: "|".join(repr(getattr(v, f, None)) for f in fields)
        return None
    if entries and all(isinstance(v, Record) and type(v).key_fields() for v in entries):
        return lambda v: "|".join(repr(getattr(v, f)) for f in type(v).key_fields())
    return None
